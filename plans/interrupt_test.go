package plans

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"
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

	want := "\nInterrupt: finishing the current step, then stopping. Interrupt again to cancel the step.\n" +
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
