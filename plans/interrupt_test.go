package plans

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRelaySignals(t *testing.T) {
	in := &Interrupts{}
	var out bytes.Buffer
	ch := make(chan os.Signal, 1)
	done := make(chan struct{})
	reset := make(chan struct{})
	returned := make(chan struct{})
	go func() {
		relaySignals(in, &out, "drctl resume r1", ch, done, func() { close(reset) })
		close(returned)
	}()

	ch <- os.Interrupt
	waitFor(t, in.Stopping(), "the first interrupt")
	select {
	case <-in.Cancelling():
		t.Fatal("the first signal cancelled")
	default:
	}
	ch <- syscall.SIGTERM
	waitFor(t, in.Cancelling(), "the second interrupt")
	waitFor(t, reset, "the default signal handling to be restored")
	waitFor(t, returned, "the relay to return")

	want := "\nInterrupt: finishing the current step (a wait stops at once), then stopping. Interrupt again to cancel the step.\n" +
		"To finish the run later: drctl resume r1\n" +
		"\nSecond interrupt: cancelling the current step. A third one kills drctl at once.\n" +
		"To finish the run later: drctl resume r1\n"
	if out.String() != want {
		t.Errorf("printed:\n%q\nwant:\n%q", out.String(), want)
	}
	if in.Count() != 2 {
		t.Errorf("count = %d", in.Count())
	}
}

// TestRelayLeavesAQuestionsSignalAlone: while a person is asked, a signal
// is the question's "no": the relay neither counts nor announces it.
func TestRelayLeavesAQuestionsSignalAlone(t *testing.T) {
	in := &Interrupts{}
	var out bytes.Buffer
	ch := make(chan os.Signal) // unbuffered: a send returns once the relay took it
	done := make(chan struct{})
	returned := make(chan struct{})
	go func() {
		relaySignals(in, &out, "drctl resume r1", ch, done, func() {})
		close(returned)
	}()
	answered := in.Asking()
	defer answered()
	ch <- os.Interrupt
	close(done)
	waitFor(t, returned, "the relay to return")
	if in.Count() != 0 || out.Len() != 0 {
		t.Errorf("a signal at a question counted %d interrupt(s) and printed %q", in.Count(), out.String())
	}
}

// One real SIGINT to this process reaches the executor's interrupts.
func TestNotifySignals(t *testing.T) {
	in := &Interrupts{}
	var out bytes.Buffer
	stop := NotifySignals(in, &out, "drctl resume r1")
	defer stop()
	must(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
	waitFor(t, in.Stopping(), "SIGINT to become an interrupt")
	stop()
	if !strings.Contains(out.String(), "To finish the run later: drctl resume r1") {
		t.Errorf("printed %q", out.String())
	}
}

// TestFirstInterruptStopsAWait: a step that waits on RunContext.Stopping
// returns at the first interrupt; the run ends interrupted with that step
// next, and the step after it never runs.
func TestFirstInterruptStopsAWait(t *testing.T) {
	reg := NewRegistry()
	started := make(chan struct{})
	ran := false
	_ = reg.Register("wait", ActionFunc(func(ctx context.Context, s Step, rc *RunContext) (Result, error) {
		close(started)
		select {
		case <-rc.Stopping():
			return Result{}, fmt.Errorf("stopped waiting: %w", ErrInterrupted)
		case <-time.After(time.Minute):
			return Result{}, nil
		}
	}))
	_ = reg.Register("after", ActionFunc(func(context.Context, Step, *RunContext) (Result, error) { ran = true; return Result{}, nil }))
	p := New("r", "test")
	_ = p.Add(StepSpec{Name: "wait", Title: "Wait"})
	_ = p.Add(StepSpec{Name: "after", Title: "After"})
	in := &Interrupts{}
	ex := &Executor{Registry: reg, Interrupts: in}
	done := make(chan error, 1)
	go func() { done <- ex.Run(context.Background(), p) }()
	<-started
	in.Interrupt()
	select {
	case err := <-done:
		var ierr *InterruptError
		if !errors.As(err, &ierr) || !errors.Is(err, ErrInterrupted) || ierr.Next != 0 {
			t.Fatalf("got %v; want an interrupt with step 1 next", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not stop at the first interrupt")
	}
	if ran {
		t.Error("the step after the wait ran")
	}
}
