package failover

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/drctl/drctl/internal/drilllease"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/plans"
)

// A run's lease: one drctl at a time runs a run, whether it started it or
// resumes it. The holder renews it every runLeaseRenew; a drctl that dies
// (or is stopped, as a long GC pause or a suspended VM would) lets it lapse
// after runLeaseTTL, at once on its own machine.
var (
	runLeaseTTL   = 30 * time.Second
	runLeaseRenew = 10 * time.Second
)

// ErrRunBusy means another drctl runs the run now.
var ErrRunBusy = errors.New("another drctl runs this run")

// ErrRunTakenOver means the run's lease lapsed while this drctl held it
// (it was stopped or cut off for longer than the lease) and another drctl
// took the run over: this one stops between or inside a step, leaving the
// run to it.
var ErrRunTakenOver = errors.New("another drctl took the run over")

// runLease is a held run lease and the renewals that keep it.
type runLease struct {
	lease *drilllease.Lease
	stop  func()
}

// takeRunLease takes run p's lease on cluster `on` (the cluster that is or
// becomes the active: every run needs it) through the run's session and
// renews it until release; when a renewal finds another holder, it calls
// lost.
func takeRunLease(ctx context.Context, clusters *kafkaconn.Clusters, p *plans.Plan, on string, lost context.CancelCauseFunc) (*runLease, error) {
	l, err := drilllease.Acquire(ctx, clusters, on, "run/"+p.ID, drilllease.NewHolder(), "", runLeaseTTL)
	if err != nil {
		if errors.Is(err, drilllease.ErrLocked) {
			return nil, fmt.Errorf("%w: %v; it goes on there (drctl status shows its step); if that drctl is gone, its lease lapses within %s and drctl resume %s goes on",
				ErrRunBusy, err, runLeaseTTL, p.ID)
		}
		return nil, fmt.Errorf("take the lease of run %s on %s: %w", p.ID, on, err)
	}
	stop := l.Keep(runLeaseRenew, runLeaseTTL, func(err error) { lost(fmt.Errorf("%w (%v)", ErrRunTakenOver, err)) })
	return &runLease{lease: l, stop: stop}, nil
}

// release stops the renewals and gives the lease back.
func (l *runLease) release() {
	l.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = l.lease.Release(ctx) // unreleased, it lapses
}
