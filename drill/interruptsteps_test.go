package drill

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/drilllease"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

// interruptAt returns the options of a drill the operator interrupts as
// soon as step starts (the step finishes; the run stops before the next).
func interruptAt(dir, step string) Options {
	in := &plans.Interrupts{}
	return Options{JournalDir: dir, Yes: true, Interrupts: in, Hooks: []plans.Hook{plans.HookFunc(func(_ context.Context, e plans.Event) error {
		if e.Type == plans.EventStepStarted && e.Name == step {
			in.Interrupt()
		}
		return nil
	})}}
}

// assertCleanAfter: the roles are as found (east active, steady, no run in
// progress) and no drill lease is left for the next drill or a failover.
func assertCleanAfter(t *testing.T, ctx context.Context, topo *topology.Topology, what string) {
	t.Helper()
	roles, err := inspect.CollectRoles(ctx, kfaketest.Session(t, topo))
	if err != nil || roles.Active != "east" || roles.Phase != "steady" || roles.Run != nil {
		t.Errorf("%s: roles %+v %v", what, roles, err)
	}
	c, err := kafkaconn.Dial(ctx, topo.Clusters["east"], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if l, err := drilllease.Running(ctx, c, time.Now()); err != nil || l != nil {
		t.Errorf("%s: a drill lease is left: %+v %v", what, l, err)
	}
}

// TestCanaryInterruptedAtEachStep: a canary interrupted at any of its
// steps is recorded as failed, moves no roles and leaves no lease; the
// next drill then runs and passes.
func TestCanaryInterruptedAtEachStep(t *testing.T) {
	p := newPair(t, "")
	topo := p.Topology
	startMirror(t, topo)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	steps := []string{StepCanaryTopic, StepCanary, StepGroupSync, StepFailoverPreflight, StepRPO, StepRTO}
	for i, step := range steps {
		rec, err := Run(ctx, kfaketest.Session(t, topo), smallCanary(), interruptAt(dir, step))
		last := i == len(steps)-1
		if !last && (!errors.Is(err, plans.ErrInterrupted) || rec == nil || rec.Verdict != Fail) {
			t.Fatalf("interrupted at %s: %v %+v", step, err, rec)
		}
		if rec == nil {
			t.Fatalf("interrupted at %s: no record (%v)", step, err)
		}
		assertCleanAfter(t, ctx, topo, "canary interrupted at "+step)
	}
	if next := runDrill(t, topo, smallCanary(), dir); next.Verdict != Pass {
		t.Errorf("the next drill: %v", next.Reasons)
	}
}

// TestFailoverDrillInterrupted: a failover drill interrupted before its
// failover (during the canary set-up) stops with the roles as it found
// them and no lease left; one interrupted as its failback starts passes
// the interrupt to the failback run, which stops before its first step,
// and one interrupted between its failover and failback stops there: both
// leave the roles moved, and the next failover drill restores them.
func TestFailoverDrillInterrupted(t *testing.T) {
	p := newPair(t, "drills: {allow_disruptive: true}\n")
	topo := p.Topology
	startMirror(t, topo)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	d := topology.DefaultDrill(topology.DrillFailover)
	d.Params.Rate, d.Params.Hold = 20, time.Second
	rec, err := Run(ctx, kfaketest.Session(t, topo), d, interruptAt(dir, StepCanaryTopic))
	if !errors.Is(err, plans.ErrInterrupted) || rec == nil || rec.Verdict != Fail {
		t.Fatalf("interrupted at %s: %v %+v", StepCanaryTopic, err, rec)
	}
	assertCleanAfter(t, ctx, topo, "failover drill interrupted at "+StepCanaryTopic)
	// The failback run gets the interrupt: it stops before changing
	// anything, and the drill records the step as failed by it.
	rec, err = Run(ctx, kfaketest.Session(t, topo), d, interruptAt(dir, StepFailback))
	if !errors.Is(err, plans.ErrInterrupted) || rec == nil || rec.Verdict != Fail || !hasReason(rec, "step drill-failback failed") || !hasReason(rec, "interrupted") {
		t.Fatalf("interrupted at %s: %v %+v", StepFailback, err, rec)
	}
	if roles, err := inspect.CollectRoles(ctx, kfaketest.Session(t, topo)); err != nil || roles.Active != "west" || roles.Phase != "steady" || roles.Run != nil {
		t.Fatalf("after the interrupted failback: %+v %v", roles, err)
	}
	next, err := Run(ctx, kfaketest.Session(t, topo), d, Options{JournalDir: dir, Yes: true})
	if err != nil || next.Verdict != Pass || next.Active != "east" {
		t.Fatalf("the failover drill after an interrupted failback: %v %+v", err, next)
	}
	assertCleanAfter(t, ctx, topo, "the failover drill after an interrupted failback")
	// Interrupted during its hold, right after its failover, the drill stops with the
	// roles moved; the next failover drill first makes the active it found
	// active again, then runs and passes, and the roles end as first found.
	rec, err = Run(ctx, kfaketest.Session(t, topo), d, interruptAt(dir, StepHold))
	if !errors.Is(err, plans.ErrInterrupted) || rec == nil || rec.Verdict != Fail {
		t.Fatalf("interrupted at %s: %v %+v", StepHold, err, rec)
	}
	if roles, err := inspect.CollectRoles(ctx, kfaketest.Session(t, topo)); err != nil || roles.Active != "west" {
		t.Fatalf("after the interrupted failover: %+v %v", roles, err)
	}
	next, err = Run(ctx, kfaketest.Session(t, topo), d, Options{JournalDir: dir, Yes: true})
	if err != nil || next.Verdict != Pass || next.Active != "east" {
		t.Fatalf("the next failover drill: %v %+v", err, next)
	}
	assertCleanAfter(t, ctx, topo, "the failover drill after an interrupted one")
	if next := runDrill(t, topo, smallCanary(), dir); next.Verdict != Pass {
		t.Errorf("the next drill: %v", next.Reasons)
	}
}
