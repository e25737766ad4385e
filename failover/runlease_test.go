package failover

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/drilllease"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/plans"
)

// TestOneResumeAtATime: two drctl resume of one run at once: exactly one
// runs the steps left (each of them once), the other is refused at once
// saying another drctl runs it; a lease whose holder stopped renewing it
// lapses and a later resume goes on.
func TestOneResumeAtATime(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: fenceNoneYAML})
	topo := p.Topology
	seedOrders(t, topo)
	startMirror(t, topo, "east", "west")
	waitMirrored(t, topo, "east", "west")
	plan := planTo(t, topo, "west")
	journal := t.TempDir()
	in := &plans.Interrupts{}
	stopAtBegin := plans.HookFunc(func(_ context.Context, e plans.Event) error {
		if e.Type == plans.EventStepDone && e.Name == StepBegin {
			in.Interrupt()
		}
		return nil
	})
	if err := Execute(kfaketest.Ctx(t, time.Minute), kfaketest.Session(t, topo), plan, RunOptions{JournalDir: journal, Interrupts: in, Yes: true, Hooks: []plans.Hook{stopAtBegin}}); !errors.Is(err, plans.ErrInterrupted) {
		t.Fatalf("the run did not stop after begin: %v", err)
	}

	var mu sync.Mutex
	ran := map[string]int{}
	count := plans.HookFunc(func(_ context.Context, e plans.Event) error {
		if e.Type == plans.EventStepStarted {
			mu.Lock()
			ran[e.Name]++
			mu.Unlock()
		}
		return nil
	})
	errs := make([]error, 2)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			<-start
			errs[i] = Resume(kfaketest.Ctx(t, 2*time.Minute), kfaketest.Session(t, topo), plan.ID, RunOptions{JournalDir: t.TempDir(), Yes: true, Hooks: []plans.Hook{count}})
		})
	}
	close(start)
	wg.Wait()
	var ok, busy int
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrRunBusy):
			busy++
			if !strings.Contains(err.Error(), "drctl resume "+plan.ID) {
				t.Errorf("the refused resume says %q; want the way on if the other drctl is gone", err)
			}
		default:
			t.Errorf("a resume: %v", err)
		}
	}
	if ok != 1 || busy != 1 {
		t.Fatalf("resumes: %v; want one to run and one refused as busy", errs)
	}
	for name, n := range ran {
		if n != 1 {
			t.Errorf("step %s ran %d times", name, n)
		}
	}
	wantSteadyWest(t, p)

	// A holder that stopped renewing: its lease blocks until it lapses.
	runLeaseTTL = time.Second
	t.Cleanup(func() { runLeaseTTL = 30 * time.Second })
	other := kfaketest.Dial(t, topo, "west")
	now := time.Now().UTC()
	if err := drilllease.Take(kfaketest.Ctx(t, 10*time.Second), other, topo.Clusters["west"], drilllease.Claim{Key: "run/x", Holder: "elsewhere/1/a", At: now, Expires: now.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if _, err := drilllease.Acquire(kfaketest.Ctx(t, 10*time.Second), kfaketest.Session(t, topo), "west", "run/x", "here/2/b", "", runLeaseTTL); !errors.Is(err, drilllease.ErrLocked) {
		t.Fatalf("a claim within another's lease: %v; want ErrLocked", err)
	}
	kfaketest.Wait(t, 10*time.Second, "the stopped holder's lease to lapse", func() (bool, string) {
		_, err := drilllease.Acquire(kfaketest.Ctx(t, 10*time.Second), kfaketest.Session(t, topo), "west", "run/x", "here/2/b", "", runLeaseTTL)
		return err == nil, "claim: " + errString(err)
	})
}

// TestRunLeaseLostStopsTheRun: a holder whose lease lapsed while it was
// stopped, and that another drctl took, learns it at its next renewal and
// ends its run (the lost callback) instead of going on beside the other.
func TestRunLeaseLostStopsTheRun(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{})
	topo := p.Topology
	// Its renewals come later than its lease lasts, as for a drctl that was
	// stopped (a long GC pause, a suspended VM).
	runLeaseTTL, runLeaseRenew = 500*time.Millisecond, 2*time.Second
	t.Cleanup(func() { runLeaseTTL, runLeaseRenew = 30*time.Second, 10*time.Second })
	var lostWith atomic.Value
	ctx, lost := context.WithCancelCause(context.Background())
	run := plans.New("failover-y", "failover")
	l, err := takeRunLease(kfaketest.Ctx(t, 10*time.Second), kfaketest.Session(t, topo), run, "west", func(cause error) { lostWith.Store(cause); lost(cause) })
	if err != nil {
		t.Fatal(err)
	}
	defer l.release()
	kfaketest.Wait(t, 10*time.Second, "another drctl to take the lapsed run", func() (bool, string) {
		_, err := drilllease.Acquire(kfaketest.Ctx(t, 10*time.Second), kfaketest.Session(t, topo), "west", "run/"+run.ID, "elsewhere/1/a", "", time.Minute)
		return err == nil, "claim: " + errString(err)
	})
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the renewal never noticed the lease was taken")
	}
	if cause, _ := lostWith.Load().(error); !errors.Is(cause, ErrRunTakenOver) || !strings.Contains(cause.Error(), "elsewhere/1/a") {
		t.Errorf("lost with %v; want ErrRunTakenOver naming the other holder", cause)
	}
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
