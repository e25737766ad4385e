package failover

// Run control on kfake: interrupts stop long waits at once, resumably;
// fence none is confirmed by --yes in so many words; status never shows
// the topology file's roles as live when no cluster answers.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/plans"
)

// TestInterruptStopsLongWait: the operator's first interrupt (SIGINT or
// SIGTERM) during wait-reseeded, which would wait two hours for a mirror
// that does not run, stops the run within seconds; the step is left to
// run again on resume.
func TestInterruptStopsLongWait(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: "failover: {fence: none, drain_timeout: 30s}\n"})
	topo := p.Topology
	kfaketest.CreateTopic(t, topo, "east", "orders", 1, nil)
	plan := plans.New("wait-test", "reseed")
	if err := plan.Add(plans.StepSpec{Name: StepWaitReseeded, Title: "Wait until west has caught up with east",
		Params: waitParams{Source: "east", Target: "west", Timeout: ReseedTimeout.String()}}); err != nil {
		t.Fatal(err)
	}
	in := &plans.Interrupts{}
	waiting := make(chan struct{})
	var once bool
	hook := plans.HookFunc(func(_ context.Context, e plans.Event) error {
		if e.Type == plans.EventStepProgress && !once {
			once = true
			close(waiting)
		}
		return nil
	})
	ex := &plans.Executor{Registry: registry(kfaketest.Session(t, topo), answers{}), Hooks: []plans.Hook{hook}, Interrupts: in}
	done := make(chan error, 1)
	go func() { done <- ex.Run(context.Background(), plan) }()
	select {
	case <-waiting:
	case err := <-done:
		t.Fatalf("the wait ended before the interrupt: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the wait reported no progress within 30s")
	}
	sent := time.Now()
	in.Interrupt()
	select {
	case err := <-done:
		took := time.Since(sent)
		t.Logf("stopped %v after the interrupt: %v", took.Round(time.Millisecond), err)
		if !errors.Is(err, plans.ErrInterrupted) {
			t.Errorf("got %v, want an interrupted run", err)
		}
		if next, ok := plans.NextStep(err); !ok || next != 0 {
			t.Errorf("a resume starts at step %d (%v), want the wait again (step 1)", next+1, ok)
		}
		if took > 5*time.Second {
			t.Errorf("stopping took %v, want seconds", took)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the run still waits 20s after the interrupt")
	}
}

// TestStatusUnknownWhenNothingAnswers: with both clusters down, the roles
// are "unknown", not the topology file's home roles.
func TestStatusUnknownWhenNothingAnswers(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML})
	p.Stop("east")
	p.Stop("west")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, _ := inspect.CollectStatus(ctx, kfaketest.Session(t, p.Topology))
	if st.Roles.Active != inspect.RoleUnknown || st.Roles.Standby != inspect.RoleUnknown || st.Roles.Phase != inspect.RoleUnknown {
		t.Errorf("roles with no cluster reachable: %+v; want unknown", st.Roles)
	}
	if len(st.Clusters) != 2 {
		t.Fatalf("%d clusters listed, want both", len(st.Clusters))
	}
	for _, c := range st.Clusters {
		if c.Role != inspect.RoleUnknown || c.Reachable {
			t.Errorf("cluster %s: role %q reachable %v; want unknown, unreachable", c.Name, c.Role, c.Reachable)
		}
	}
	if !strings.Contains(strings.Join(st.Problems, "\n"), "unknown") {
		t.Errorf("problems do not say the roles are unknown: %q", st.Problems)
	}
}

// TestFenceNoneConfirmedByYes: with fence none, --yes answers the
// question, and the step says so in those words; with nobody to ask and
// no --yes the question refuses, naming --yes.
func TestFenceNoneConfirmedByYes(t *testing.T) {
	res, err := confirmStopped("east", true, answers{yes: true})
	if err != nil || !strings.Contains(res.Summary, "confirmed by --yes") {
		t.Errorf("fence none with --yes: %q %v; want it confirmed by --yes", res.Summary, err)
	}
	if _, err := confirmStopped("east", true, answers{}); !errors.Is(err, ErrNotConfirmed) || !strings.Contains(err.Error(), "--yes") {
		t.Errorf("fence none without a terminal or --yes: %v; want a refusal naming --yes", err)
	}
}
