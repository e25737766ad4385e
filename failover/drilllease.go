package failover

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/drctl/drctl/internal/drilllease"
	"github.com/drctl/drctl/internal/kafkaread"
)

// drillWait bounds how long a failover, failback or reseed waits at its
// preflight for a running drill to end before it refuses: a canary drill
// takes seconds, and a run started during one (a schedule of a canary a
// minute, as in the sandbox) should wait for it rather than fail.
const drillWait = 10 * time.Second

// drillRunning returns an error wrapping drilllease.ErrDrillRunning, naming the drill,
// when one other than the caller's (see drilllease.WithHolder) holds the
// lease and still does after drillWait. The lease lives on the home active
// cluster; when that cluster is not reachable (the disaster an unplanned
// failover answers) no drill can be running there either, so nothing is
// refused; nor is an unplanned run when the lease cannot be read (a failing
// active is what it answers).
func drillRunning(ctx context.Context, w *world, unplanned bool) error {
	c, err := w.Need(w.topo.Active)
	if err != nil {
		return nil //nolint:nilerr // the active is unreachable: the step itself reports it
	}
	deadline := time.Now().Add(drillWait)
	for {
		err := drilllease.Refusal(ctx, c)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, drilllease.ErrDrillRunning):
			if unplanned {
				return nil
			}
			return fmt.Errorf("drill lease on %s: %w", w.topo.Active, err)
		case time.Now().After(deadline):
			return fmt.Errorf("drill lease on %s (waited %v): %w", w.topo.Active, drillWait, err)
		}
		if err := kafkaread.Sleep(ctx, 250*time.Millisecond); err != nil {
			return fmt.Errorf("drill lease on %s: waiting for the drill to end: %w", w.topo.Active, err)
		}
	}
}
