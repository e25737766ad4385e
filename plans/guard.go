package plans

import (
	"context"
	"fmt"
)

// Guard reports whether the plan still matches the world, e.g. "the
// topology digest and the epoch are the ones in p.Inputs". The executor calls
// it before every step, the first call being the check before the run; next
// is the step about to run, so that a guard can allow for the plan's own
// changes (a plan that bumps the epoch at step 5 expects the old epoch before
// it and the new one after). Return Stale(...) when the plan is stale; any
// other error halts the run too. ctx carries Executor.GuardTimeout.
type Guard func(ctx context.Context, p *Plan, next int) error

// StaleError says why a plan is stale. errors.Is(err, ErrStalePlan) holds.
type StaleError struct {
	Reason string
}

// Stale returns a StaleError with a formatted reason that names what changed
// and, ideally, the fix: "epoch is 8, the plan was built at 7: build a new plan".
func Stale(format string, args ...any) error {
	return &StaleError{Reason: fmt.Sprintf(format, args...)}
}

func (e *StaleError) Error() string { return ErrStalePlan.Error() + ": " + e.Reason }

// Is makes errors.Is(err, ErrStalePlan) true.
func (e *StaleError) Is(target error) bool { return target == ErrStalePlan }

// Guards runs guards in order; the first error wins.
func Guards(guards ...Guard) Guard {
	return func(ctx context.Context, p *Plan, next int) error {
		for _, g := range guards {
			if g == nil {
				continue
			}
			if err := g(ctx, p, next); err != nil {
				return err
			}
		}
		return nil
	}
}
