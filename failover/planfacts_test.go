package failover

import (
	"testing"
	"time"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
)

// TestPlanFacts: the plans drctl makes carry their point of no return on
// the step (a failover's flip, a reseed's wipe, which in a failover comes
// after its flip and is not marked), and ConfirmName, Forced and
// IsUnplanned answer the front-ends' questions from the plan alone.
func TestPlanFacts(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Extra: "failover: {fence: none, drain_timeout: 30s}\n"})
	topo := p.Topology
	kfaketest.CreateTopic(t, topo, "east", "orders", 1, nil)
	kfaketest.CreateTopic(t, topo, "west", "orders", 1, nil)
	planned, err := PlanFailover(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), FailoverRequest{To: "west"})
	if err != nil {
		t.Fatal(err)
	}
	unplanned, err := PlanFailover(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), FailoverRequest{To: "west", Mode: Unplanned, ForceUnplanned: true})
	if err != nil {
		t.Fatal(err)
	}
	reseed, err := PlanReseedWith(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), "west", ReseedOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		plan      *plans.Plan
		ponr      string
		confirm   string
		unplanned bool
	}{{planned, runrecord.StepFlip, "west", false}, {unplanned, runrecord.StepFlip, "west", true}, {reseed, runrecord.StepWipe, "west", false}} {
		i := c.plan.PointOfNoReturn()
		if i < 0 || c.plan.Steps[i].Name != c.ponr || runrecord.PointOfNoReturn(c.plan) != i {
			t.Errorf("%s plan: point of no return at step %d (runrecord says %d), want the %s step", c.plan.Kind, i, runrecord.PointOfNoReturn(c.plan), c.ponr)
		}
		if got, err := ConfirmName(c.plan); err != nil || got != c.confirm {
			t.Errorf("%s plan: ConfirmName = %q, %v; want %q", c.plan.Kind, got, err, c.confirm)
		}
		if IsUnplanned(c.plan) != c.unplanned {
			t.Errorf("%s plan: IsUnplanned = %v, want %v", c.plan.Kind, IsUnplanned(c.plan), c.unplanned)
		}
		if reason, forced := Forced(c.plan); forced != (c.plan != planned) || (forced && reason == "") {
			t.Errorf("%s plan: Forced = %q, %v; want forced (with the refusal) for the plans made with a force", c.plan.Kind, reason, forced)
		}
	}
}
