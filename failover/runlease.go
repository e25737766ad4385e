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

// runLease is a held run lease and the goroutine that renews it.
type runLease struct {
	clusters *kafkaconn.Clusters
	on       string
	key      string
	holder   string
	done     chan struct{}
	stopped  chan struct{}
}

// takeRunLease takes run p's lease on cluster `on` (the cluster that is or
// becomes the active: every run needs it) and renews it until release;
// when a renewal finds another holder, it calls lost.
func takeRunLease(ctx context.Context, clusters *kafkaconn.Clusters, p *plans.Plan, on string, lost context.CancelCauseFunc) (*runLease, error) {
	l := &runLease{clusters: clusters, on: on, key: "run/" + p.ID, holder: drilllease.NewHolder(), done: make(chan struct{}), stopped: make(chan struct{})}
	if err := l.claim(ctx); err != nil {
		if errors.Is(err, drilllease.ErrLocked) {
			return nil, fmt.Errorf("%w: %v; it goes on there (drctl status shows its step); if that drctl is gone, its lease lapses within %s and drctl resume %s goes on",
				ErrRunBusy, err, runLeaseTTL, p.ID)
		}
		return nil, fmt.Errorf("take the lease of run %s on %s: %w", p.ID, on, err)
	}
	go l.renew(lost)
	return l, nil
}

// claim claims the lease through the run's session (its client of the
// cluster, dialled again when it failed before).
func (l *runLease) claim(ctx context.Context) error {
	l.clusters.Redial(ctx, l.on)
	c, err := l.clusters.Need(l.on)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	return drilllease.Take(ctx, c, l.clusters.Topology().Clusters[l.on], drilllease.Claim{Key: l.key, Holder: l.holder, At: now, Expires: now.Add(runLeaseTTL)})
}

// renew claims the lease again every runLeaseRenew until release; a renewal
// that finds another owner ends the run (lost). A renewal that cannot reach
// the cluster is tried again at the next tick: the run's own steps report
// an unreachable cluster.
func (l *runLease) renew(lost context.CancelCauseFunc) {
	defer close(l.stopped)
	tick := time.NewTicker(runLeaseRenew)
	defer tick.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), runLeaseRenew)
		err := l.claim(ctx)
		cancel()
		if errors.Is(err, drilllease.ErrLocked) {
			lost(fmt.Errorf("%w (%v)", ErrRunTakenOver, err))
			return
		}
	}
}

// release stops the renewals and gives the lease back.
func (l *runLease) release() {
	close(l.done)
	<-l.stopped
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := l.clusters.Need(l.on)
	if err != nil {
		return // it lapses
	}
	_ = drilllease.Give(ctx, c, l.clusters.Topology().Clusters[l.on], l.key, l.holder, "")
}
