package failover

// failover.hooks.before on kfake: the hooks run as the plan's second step,
// ahead of every change; one that fails stops the run with the clusters
// as they were, and drctl resume runs it again.

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/plans"
)

// hookPair is a fence-none pair whose topology runs before and after hooks
// that append a line to log ("before west east"); the before hook runs
// first only once gate exists: until then it fails with exit status 3.
func hookPair(t *testing.T) (p *kfaketest.Pair, log, gate string) {
	t.Helper()
	dir := t.TempDir()
	log, gate = filepath.Join(dir, "hooks.log"), filepath.Join(dir, "producers-stopped")
	before := "test -f " + gate + " || { echo producers still write to {{.Standby}} >&2; exit 3; }; echo before {{.Active}} {{.Standby}} >> " + log
	after := "echo after {{.Active}} {{.Standby}} >> " + log
	extra := "failover:\n  fence: none\n  drain_timeout: 30s\n  quiet_period: 300ms\n" +
		"  hooks:\n    before: ['" + before + "']\n    after: ['" + after + "']\n"
	p = kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: extra})
	seedOrders(t, p.Topology)
	startMirror(t, p.Topology, "east", "west")
	waitMirrored(t, p.Topology, "east", "west")
	waitGroupSynced(t, p.Topology, "west", "billing", 3)
	return p, log, gate
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// TestBeforeHookFailsNothingChanges: a before hook that fails stops the
// run at its step with the command's output and exit status in the error;
// the roles, ACLs, topics and groups are as they were, the operator was
// not asked to confirm the fence, the clusters hold no record of the run
// (it changed nothing), and the after hook never ran. Once the hook passes, drctl resume runs
// it again and finishes the failover.
func TestBeforeHookFailsNothingChanges(t *testing.T) {
	p, log, gate := hookPair(t)
	topo := p.Topology
	plan := planTo(t, topo, "west")
	if plan.Steps[1].Name != StepHooksBefore || plan.Steps[2].Name != StepConfirmStopped || plan.Steps[3].Name != StepBegin {
		t.Fatalf("steps %s, %s, %s; want %s right after the preflight, then the question, before %s", plan.Steps[1].Name, plan.Steps[2].Name, plan.Steps[3].Name, StepHooksBefore, StepBegin)
	}
	before := snapshots(t, topo, "east", "west")
	journal := t.TempDir()
	var c confirmCounter
	err := execute(t, topo, plan, journal, &c)
	if err == nil {
		t.Fatal("the failover ran although its before hook failed")
	}
	msg := err.Error()
	t.Logf("refused: %v", err)
	for _, want := range []string{"failover.hooks.before", "exit status 3", "producers still write to east", "nothing was changed", "drctl resume " + plan.ID} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	var se *plans.StepError
	if !errors.As(err, &se) || se.Index != 1 {
		t.Errorf("failed at %v; want step 2 (%s)", err, StepHooksBefore)
	}
	if n := c.n.Load(); n != 0 {
		t.Errorf("the operator was asked %d time(s) to confirm the fence; the run must stop before it", n)
	}
	assertUnchanged(t, topo, before)
	// Nothing changed, so the clusters hold no record of the run either:
	// this machine's journal resumes it, another machine plans again.
	rec, err := loadRun(kfaketest.Ctx(t, 20*time.Second), topo, plan.ID)
	if err != nil || rec != nil {
		t.Fatalf("the clusters hold a record of a run that changed nothing: %+v %v", rec, err)
	}
	if got := readLog(t, log); got != "" {
		t.Errorf("hooks logged %q; want nothing (the before hook failed, the after hook must not run)", got)
	}

	// The producers stop: resume runs the hook again, and the failover.
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := kfaketest.Ctx(t, 3*time.Minute)
	if err := Resume(ctx, kfaketest.Session(t, topo), plan.ID, RunOptions{JournalDir: journal, Confirm: c.confirm}); err != nil {
		t.Fatalf("resume after the hook was fixed: %v", err)
	}
	if got, want := readLog(t, log), "before west east\nafter west east\n"; got != want {
		t.Errorf("hooks logged %q; want %q", got, want)
	}
	wantSteadyWest(t, p)
}

// TestBeforeHookRunsOnceFirst: a before hook that succeeds runs once, with
// the same data as the after hook ({{.Active}} the new active,
// {{.Standby}} the old one), before the fence (here: before the operator
// is asked to stop producers, fence none) and before the roles move.
func TestBeforeHookRunsOnceFirst(t *testing.T) {
	p, log, gate := hookPair(t)
	topo := p.Topology
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	plan := planTo(t, topo, "west")
	var atFence string
	var atFenceRoles rolestate.State
	confirm := func(string) error {
		atFence = readLog(t, log)
		st, _, err := rolestate.Read(kfaketest.Ctx(t, 20*time.Second), kfaketest.Dial(t, topo, "east"), topo.Name)
		if err != nil {
			return err
		}
		atFenceRoles = st
		return nil
	}
	ctx := kfaketest.Ctx(t, 3*time.Minute)
	if err := Execute(ctx, kfaketest.Session(t, topo), plan, RunOptions{JournalDir: t.TempDir(), Confirm: confirm}); err != nil {
		t.Fatalf("failover: %v", err)
	}
	if atFence != "before west east\n" {
		t.Errorf("when the fence was confirmed the hooks had logged %q; want the before hook's line alone", atFence)
	}
	if atFenceRoles.Epoch != 0 || atFenceRoles.Run != nil {
		t.Errorf("at the question east held %s; want the roles as the plan found them (the question comes before the run's first change)", atFenceRoles)
	}
	if got, want := readLog(t, log), "before west east\nafter west east\n"; got != want {
		t.Errorf("hooks logged %q; want %q (each hook once)", got, want)
	}
	wantSteadyWest(t, p)
}

// wantSteadyWest checks that both clusters hold west as the active,
// steady, with no run in progress.
func wantSteadyWest(t *testing.T, p *kfaketest.Pair) {
	t.Helper()
	for _, c := range []string{"east", "west"} {
		st, found, err := rolestate.Read(kfaketest.Ctx(t, 20*time.Second), kfaketest.Dial(t, p.Topology, c), p.Topology.Name)
		if err != nil || !found {
			t.Fatalf("role state of %s: %v (found %v)", c, err, found)
		}
		if st.Active != "west" || st.Standby != "east" || st.Phase != rolestate.PhaseSteady || st.Run != nil {
			t.Errorf("%s holds %s; want active west, standby east, steady, no run", c, st)
		}
	}
}
