package failover

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drctl/drctl/plans"
)

// TestUnfinishedRun: the newest failover/failback/reseed run of the
// topology that got past its first step and neither finished nor was
// aborted is named; runs of other topologies, drills, runs refused at
// their first step and a newer finished run are not.
func TestUnfinishedRun(t *testing.T) {
	dir := t.TempDir()
	at := time.Now().Add(-time.Hour)
	// run writes a journal of a three-step plan whose step fail (1-based;
	// 0: none) fails.
	run := func(id, kind, topo string, fail int) {
		t.Helper()
		p := plans.New(id, kind)
		if err := p.SetInputs(Inputs{Topology: topo}); err != nil {
			t.Fatal(err)
		}
		reg := plans.NewRegistry()
		for i, name := range []string{StepPreflight, "two", "three"} {
			if err := p.Add(plans.StepSpec{Name: name, Title: name}); err != nil {
				t.Fatal(err)
			}
			n := i + 1
			_ = reg.Register(name, plans.ActionFunc(func(context.Context, plans.Step, *plans.RunContext) (plans.Result, error) {
				if n == fail {
					return plans.Result{}, errors.New("boom")
				}
				return plans.Result{Summary: "ok"}, nil
			}))
		}
		path := filepath.Join(dir, id+".jsonl")
		j, err := plans.CreateJournal(path)
		if err != nil {
			t.Fatal(err)
		}
		ex := &plans.Executor{Registry: reg, Hooks: []plans.Hook{j}, Actor: "ops@host"}
		_ = ex.Run(context.Background(), p)
		at = at.Add(time.Minute) // journals are ordered by modification time
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	name := func() string {
		if st := UnfinishedRun(dir, "t"); st != nil {
			return st.Plan.ID
		}
		return ""
	}
	if got := name(); got != "" {
		t.Fatalf("empty journal: %q", got)
	}
	run("failover-1", "failover", "t", 3) // stopped at step 3
	run("failover-2", "failover", "other", 2)
	run("drill-canary-3", "drill-canary", "t", 2)
	run("failback-4", "failback", "t", 1) // refused at its first step
	if got := name(); got != "failover-1" {
		t.Errorf("named %q, want failover-1 (the others: another topology, a drill, refused at step 1)", got)
	}
	run("failback-5", "failback", "t", 0) // a newer run that finished
	if got := name(); got != "" {
		t.Errorf("named %q after a newer run finished; want none", got)
	}
}
