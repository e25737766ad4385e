package plans_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/drctl/drctl/plans"
)

// How a builder and a front-end use the package: build a plan, print it,
// run it with a journal and progress lines, and resume it from the journal.
func Example() {
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	p := plans.New("r1", "failover")
	must(p.SetInputs(map[string]any{"epoch": 7}))
	must(p.Add(plans.StepSpec{Name: "fence", Title: "Fence east against writes",
		Params: map[string]string{"cluster": "east"},
		Expect: map[string]string{"east": "writable"}, Intend: map[string]string{"east": "denied"},
		Destructive: true}))

	reg := plans.NewRegistry()
	must(reg.Register("fence", plans.ActionFunc(func(ctx context.Context, step plans.Step, rc *plans.RunContext) (plans.Result, error) {
		var params struct{ Cluster string }
		if err := step.DecodeParams(&params); err != nil {
			return plans.Result{}, err
		}
		rc.Progress("1 of 2 ACLs added", 0.5)
		return plans.NewResult("fenced "+params.Cluster, map[string]int{"acls": 2})
	})))

	dir, _ := os.MkdirTemp("", "plans-example")
	defer os.RemoveAll(dir)
	journal, _ := plans.CreateJournal(filepath.Join(dir, "r1.jsonl"))
	defer journal.Close()

	in := &plans.Interrupts{}
	stop := plans.NotifySignals(in, os.Stderr, "drctl resume r1")
	defer stop()

	printer := plans.NewPrinter(os.Stdout)
	printer.Resume = "drctl resume r1"
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	ex := &plans.Executor{
		Registry:   reg,
		Hooks:      []plans.Hook{journal, printer},
		Actor:      "alice@ops-1",
		Interrupts: in,
		Now:        func() time.Time { return now }, // fixed, for a stable example
	}
	if err := ex.Run(context.Background(), p); err != nil {
		fmt.Println(err)
	}
	st, _ := plans.ReadJournal(journal.Path())
	fmt.Println("finished:", st.Finished, "outputs of step 1:", string(st.Outputs[0]))
	// Output:
	// Run r1: failover, 1 step
	// [1/1] Fence east against writes ...
	//       1 of 2 ACLs added (50%)
	// [1/1] Fence east against writes ... done (0.0s): fenced east
	// Run r1 finished in 0.0s.
	// finished: true outputs of step 1: {"acls":2}
}
