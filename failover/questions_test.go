package failover

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/kvstore"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

const fenceNoneYAML = "failover: {fence: none, drain_timeout: 30s, quiet_period: 1s}\n"

// TestNoAtTheQuestionChangesNothing: with fence: none the run's question
// (have the producers stopped?) is a step of its own after the preflight
// and before the run records itself: a "no" leaves both clusters as they
// were, writes no run record, leaves nothing to resume, and the printed
// end says so instead of naming drctl resume.
func TestNoAtTheQuestionChangesNothing(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: fenceNoneYAML})
	topo := p.Topology
	seedOrders(t, topo)
	startMirror(t, topo, "east", "west")
	waitMirrored(t, topo, "east", "west")
	plan := planTo(t, topo, "west")
	if ask, begin := stepIndex(t, plan, StepConfirmStopped), stepIndex(t, plan, StepBegin); ask != begin-1 || !ChangesNothing(plan.Steps[ask].Name) {
		t.Fatalf("the question is step %d, begin %d: want it right before the run's first change", ask, begin)
	}
	before := snapshots(t, topo, "east", "west")
	journal := t.TempDir()
	var started []string
	seen := plans.HookFunc(func(_ context.Context, e plans.Event) error {
		if e.Type == plans.EventStepStarted {
			started = append(started, e.Name)
		}
		return nil
	})
	var out strings.Builder
	var asked []string
	err := Execute(kfaketest.Ctx(t, time.Minute), kfaketest.Session(t, topo), plan, RunOptions{JournalDir: journal, Out: &out, Hooks: []plans.Hook{seen},
		Confirm: func(q string) error {
			asked = append(asked, q)
			return errors.New("the operator said no")
		}})
	if !errors.Is(err, ErrNotConfirmed) || len(asked) != 1 || !strings.Contains(asked[0], "Have they stopped?") {
		t.Fatalf("run after a no: %v (asked %q); want ErrNotConfirmed after the producers' question", err, asked)
	}
	if strings.Join(started, ",") != StepPreflight+","+StepConfirmStopped {
		t.Errorf("steps started: %v; want only the preflight and the question", started)
	}
	if printed := out.String(); strings.Contains(printed, "drctl resume") || !strings.Contains(printed, "Nothing was changed") {
		t.Errorf("the run printed:\n%s\nwant it to say nothing changed, without a resume command", printed)
	}
	after := snapshots(t, topo, "east", "west")
	for _, c := range []string{"east", "west"} {
		if d := snapDiff(before[c], after[c]); len(d) > 0 {
			t.Errorf("%s changed after a no: %v", c, d)
		}
		if _, found, err := kvstore.Get(kfaketest.Ctx(t, 10*time.Second), kfaketest.Dial(t, topo, c), topology.RunsTopic, plan.ID); err != nil || found {
			t.Errorf("%s records run %s after a no (found %v, %v)", c, plan.ID, found, err)
		}
	}
	if st := UnfinishedRun(journal, topo.Name); st != nil {
		t.Errorf("the journal offers run %s to resume after a no", st.Plan.ID)
	}
	// Without anyone to ask, the run stops at the same place.
	err = Execute(kfaketest.Ctx(t, time.Minute), kfaketest.Session(t, topo), planTo(t, topo, "west"), RunOptions{JournalDir: journal})
	if !errors.Is(err, ErrNotConfirmed) || !strings.Contains(err.Error(), "--yes") {
		t.Errorf("run with nobody to ask: %v; want a refusal naming --yes", err)
	}
	if d := snapDiff(before["east"], snapshotOf(t, topo, "east")); len(d) > 0 {
		t.Errorf("east changed after a refusal: %v", d)
	}
}
