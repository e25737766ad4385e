package failover

import (
	"context"
	"errors"
	"fmt"

	"github.com/drctl/drctl/internal/drilllease"
)

// ErrDrillRunning means a drill holds its running lease: a failover,
// failback or reseed never runs beside a drill (issue 11), except the
// drill's own.
var ErrDrillRunning = drilllease.ErrDrillRunning

// drillRunning returns an error wrapping ErrDrillRunning, naming the drill,
// when one other than the caller's (see drilllease.WithHolder) holds the
// lease. The lease lives on the home active cluster; when that cluster is
// not reachable (the disaster an unplanned failover answers) no drill can
// be running there either, so nothing is refused; nor is an unplanned run
// when the lease cannot be read (a failing active is what it answers).
func drillRunning(ctx context.Context, w *world, unplanned bool) error {
	c, err := w.Need(w.topo.Active)
	if err != nil {
		return nil //nolint:nilerr // the active is unreachable: the step itself reports it
	}
	if err := drilllease.Refusal(ctx, c); err != nil && (!unplanned || errors.Is(err, ErrDrillRunning)) {
		return fmt.Errorf("drill lease on %s: %w", w.topo.Active, err)
	}
	return nil
}
