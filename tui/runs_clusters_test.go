package tui

import (
	"context"
	"testing"
	"time"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
)

// TestRunsFromClustersOnKfake: a failover run from another machine (its
// journal elsewhere) appears in the Runs view from the clusters' run
// records; with its journal here too it is listed once.
func TestRunsFromClustersOnKfake(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{
		Mirror: "  topics: {include: [\"orders\"]}",
		Extra:  "failover: {fence: none, drain_timeout: 30s, quiet_period: 300ms}\n",
	})
	topo := p.Topology
	kfaketest.Seed(t, topo, "east", "orders", 2, 5, "billing", 0)
	runMirror(t, topo)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	plan, err := failover.PlanFailover(ctx, kfaketest.Session(t, topo), failover.FailoverRequest{To: "west"})
	if err != nil {
		t.Fatal(err)
	}
	// The mirror has just started: wait until the plan's preflight would
	// pass (topics created on west, the mirror process registered).
	for {
		_, perr := failover.Preflight(ctx, kfaketest.Session(t, topo), plan)
		if perr == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the failover's preflight never passed: %v", perr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	elsewhere := t.TempDir()
	if err := failover.Execute(ctx, kfaketest.Session(t, topo), plan, failover.RunOptions{Yes: true, JournalDir: elsewhere}); err != nil {
		t.Fatalf("failover: %v", err)
	}

	find := func(runs []PastRun) (PastRun, int) {
		var found PastRun
		n := 0
		for _, r := range runs {
			if r.ID == plan.ID {
				found, n = r, n+1
			}
		}
		return found, n
	}
	s := collect(ctx, topo, t.TempDir(), 20*time.Second, time.Now)
	r, n := find(s.Runs)
	if n != 1 || r.Outcome != plans.OutcomeSucceeded || r.Kind != plan.Kind || r.Done != len(plan.Steps) || r.Total != len(plan.Steps) {
		t.Fatalf("with no local journal the Runs view lists run %s %d time(s) as %+v (error %q); want once, succeeded, %d/%d steps", plan.ID, n, r, s.RunsError, len(plan.Steps), len(plan.Steps))
	}
	s = collect(ctx, topo, elsewhere, 20*time.Second, time.Now)
	if r, n := find(s.Runs); n != 1 || r.Outcome != plans.OutcomeSucceeded {
		t.Fatalf("with the run's journal too, run %s is listed %d time(s) as %+v; want once, succeeded", plan.ID, n, r)
	}
}

// TestMergeRuns: one row per run id; the more advanced entry wins.
func TestMergeRuns(t *testing.T) {
	steps := make([]plans.Step, 3)
	rec := func(id string, done int, out plans.Outcome) *runrecord.Record {
		d := make([]bool, 3)
		for i := range done {
			d[i] = true
		}
		return &runrecord.Record{Plan: &plans.Plan{ID: id, Kind: "failover", CreatedAt: t0, CreatedBy: "ops@far", Steps: steps}, Done: d, Outcome: out}
	}
	journal := []PastRun{
		{ID: "a", Kind: "failover", Actor: "me@here", Outcome: plans.OutcomeSucceeded, Done: 3, Total: 3, At: t0.Add(time.Hour)},
		{ID: "b", Kind: "failover", Actor: "me@here", Done: 1, Total: 3, At: t0.Add(2 * time.Hour)},
	}
	got := mergeRuns(journal, []*runrecord.Record{rec("a", 3, plans.OutcomeSucceeded), rec("b", 3, plans.OutcomeSucceeded), rec("c", 2, plans.OutcomeFailed)})
	want := map[string]PastRun{
		"a": journal[0],
		"b": {ID: "b", Kind: "failover", Actor: "me@here", Outcome: plans.OutcomeSucceeded, Done: 3, Total: 3, At: t0.Add(2 * time.Hour)},
		"c": {ID: "c", Kind: "failover", Actor: "ops@far", Outcome: plans.OutcomeFailed, Done: 2, Total: 3, At: t0},
	}
	if len(got) != len(want) {
		t.Fatalf("merged %d rows, want %d: %+v", len(got), len(want), got)
	}
	for _, r := range got {
		w := want[r.ID]
		if r.ID != w.ID || r.Kind != w.Kind || r.Actor != w.Actor || r.Outcome != w.Outcome || r.Done != w.Done || r.Total != w.Total || !r.At.Equal(w.At) {
			t.Errorf("run %s: %+v, want %+v", r.ID, r, w)
		}
	}
	if got[0].ID != "b" || got[2].ID != "c" {
		t.Errorf("order %s, %s, %s; want newest first: b, a, c", got[0].ID, got[1].ID, got[2].ID)
	}
}
