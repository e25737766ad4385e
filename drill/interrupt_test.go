package drill

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/plans"
)

// TestInterruptedCanary: a canary stopped by the operator's interrupt is
// recorded as failed (a drill that did not finish never passes), changes
// no roles, and releases its lease, so the next drill runs and passes.
func TestInterruptedCanary(t *testing.T) {
	p := newPair(t, "")
	topo := p.Topology
	startMirror(t, topo)
	dir := t.TempDir()
	in := &plans.Interrupts{}
	in.Interrupt() // before the first step: the run stops at once
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec, err := Run(ctx, kfaketest.Session(t, topo), smallCanary(), Options{JournalDir: dir, Interrupts: in})
	if !errors.Is(err, plans.ErrInterrupted) || rec == nil || rec.Verdict != Fail || !hasReason(rec, "step canary-topic did not run") {
		t.Fatalf("interrupted canary: %v %+v", err, rec)
	}
	hist, _ := History(ctx, kfaketest.Session(t, topo), HistoryOptions{JournalDir: dir})
	if len(hist) != 1 || hist[0].ID != rec.ID || hist[0].Verdict != Fail {
		t.Errorf("the interrupted drill is not in the history: %+v", hist)
	}
	roles, err := inspect.CollectRoles(ctx, kfaketest.Session(t, topo))
	if err != nil || roles.Active != "east" || roles.Epoch != 0 && roles.Phase != "steady" {
		t.Errorf("roles: %+v %v", roles, err)
	}
	if next := runDrill(t, topo, smallCanary(), dir); next.Verdict != Pass {
		t.Errorf("the next drill: %v", next.Reasons)
	}
}
