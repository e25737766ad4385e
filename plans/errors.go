package plans

import (
	"errors"
	"fmt"
)

// Errors callers branch on, with errors.Is.
var (
	// ErrInterrupted: the first interrupt stopped the run between steps.
	ErrInterrupted = errors.New("interrupted")
	// ErrCancelled: the second interrupt (or the caller's context) cancelled
	// the running step, or stopped the run before the next one.
	ErrCancelled = errors.New("cancelled")
	// ErrStalePlan: the world no longer matches what the plan was built
	// against. Build a new plan.
	ErrStalePlan = errors.New("plan is stale")
	// ErrTimeout: a hook or the guard did not answer within its deadline.
	ErrTimeout = errors.New("timed out")
)

// NextStep returns the step a resume starts at, when err says.
func NextStep(err error) (int, bool) {
	var r interface{ NextStep() int }
	if errors.As(err, &r) {
		return r.NextStep(), true
	}
	return 0, false
}

// InterruptError is returned when an interrupt stopped the run. Reason is
// ErrInterrupted (the current step finished; Next is the one after it) or
// ErrCancelled (the running step was cancelled; Next is that step).
type InterruptError struct {
	RunID  string
	Next   int // the step a resume starts at, from 0
	Total  int
	Reason error // ErrInterrupted or ErrCancelled
	Err    error // the cancelled step's error or the context's, if any
}

func (e *InterruptError) Error() string {
	var s string
	if e.Next >= e.Total {
		s = fmt.Sprintf("run %s %s after its last step", e.RunID, e.Reason)
	} else {
		s = fmt.Sprintf("run %s %s at step %d/%d", e.RunID, e.Reason, e.Next+1, e.Total)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns Reason and Err.
func (e *InterruptError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Err}
}

// NextStep is the step a resume starts at.
func (e *InterruptError) NextStep() int { return e.Next }

// StepError is a step that failed. A resume runs it again.
type StepError struct {
	RunID string
	Index int
	Total int
	Name  string
	Err   error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("step %d/%d (%s) failed: %v", e.Index+1, e.Total, e.Name, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// NextStep is the failed step.
func (e *StepError) NextStep() int { return e.Index }

// HookError is a required hook that failed; the run halted.
type HookError struct {
	Hook  string // e.g. "journal /var/lib/drctl/runs/r1.jsonl"
	Event EventType
	Index int // the step the event was about
	Next  int // the step a resume starts at
	Total int
	Err   error
}

func (e *HookError) Error() string {
	step := fmt.Sprintf("step %d/%d", e.Index+1, e.Total)
	switch e.Event {
	case EventRunStarted:
		return fmt.Sprintf("run not started: %s could not record it: %v", e.Hook, e.Err)
	case EventStepStarted:
		return fmt.Sprintf("%s not run: %s could not record its start: %v", step, e.Hook, e.Err)
	case EventStepDone:
		return fmt.Sprintf("%s ran, but %s could not record it (a resume runs it again): %v", step, e.Hook, e.Err)
	case EventRunDone:
		return fmt.Sprintf("run ended, but %s could not record it: %v", e.Hook, e.Err)
	default:
		return fmt.Sprintf("halted at %s: %s failed on %s: %v", step, e.Hook, e.Event, e.Err)
	}
}

func (e *HookError) Unwrap() error { return e.Err }

// NextStep is the step a resume starts at: the step of the event, which a
// required hook may not have seen finish, or the one after a step whose
// completion every required hook recorded.
func (e *HookError) NextStep() int { return e.Next }

// GuardError is a guard that stopped the run before step Index. It wraps a
// StaleError (errors.Is(err, ErrStalePlan)) when the plan went stale.
type GuardError struct {
	Index int
	Total int
	Err   error
}

func (e *GuardError) Error() string {
	return fmt.Sprintf("stopped before step %d/%d: %v", e.Index+1, e.Total, e.Err)
}

func (e *GuardError) Unwrap() error { return e.Err }

// NextStep is the step that did not run.
func (e *GuardError) NextStep() int { return e.Index }
