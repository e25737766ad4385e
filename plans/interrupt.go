package plans

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Interrupts is the two-stage interrupt an Executor listens to. The first
// Interrupt lets the running step finish and stops the run before the next
// (a step that only waits stops waiting at once; see RunContext.Stopping);
// the second cancels the running step's context. The zero value is ready to
// use; an Interrupts serves one run.
type Interrupts struct {
	mu     sync.Mutex
	n      int
	stop   chan struct{}
	cancel chan struct{}
	asking int
}

// Asking marks a question put to a person until done is called: meanwhile
// a signal is the question's to answer ("no"), not an interrupt of the
// run, and NotifySignals neither counts nor announces it.
func (in *Interrupts) Asking() (done func()) {
	in.mu.Lock()
	in.asking++
	in.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			in.mu.Lock()
			in.asking--
			in.mu.Unlock()
		})
	}
}

func (in *Interrupts) isAsking() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.asking > 0
}

func (in *Interrupts) init() {
	if in.stop == nil {
		in.stop = make(chan struct{})
		in.cancel = make(chan struct{})
	}
}

// Interrupt records one interrupt and returns how many there have been.
func (in *Interrupts) Interrupt() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.init()
	in.n++
	switch in.n {
	case 1:
		close(in.stop)
	case 2:
		close(in.cancel)
	}
	return in.n
}

// Count is the number of interrupts so far.
func (in *Interrupts) Count() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.n
}

// Stopping is closed at the first interrupt.
func (in *Interrupts) Stopping() <-chan struct{} {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.init()
	return in.stop
}

// Cancelling is closed at the second interrupt.
func (in *Interrupts) Cancelling() <-chan struct{} {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.init()
	return in.cancel
}

// NotifySignals turns SIGINT and SIGTERM into interrupts of in, telling the
// operator on w what each one does and the exact command that finishes the
// run later (resume, e.g. "drctl resume 20261130-0856-east-west"; empty to
// leave it out). After the second signal it restores the default handling,
// so that a third one kills the process: the journal is synced after every
// record, and a resume finishes the run. Call stop when the run is over.
func NotifySignals(in *Interrupts, w io.Writer, resume string) (stop func()) {
	ch := make(chan os.Signal, 2)
	signals := []os.Signal{os.Interrupt, syscall.SIGTERM}
	signal.Notify(ch, signals...)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		relaySignals(in, w, resume, ch, done, func() { signal.Reset(signals...) })
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
			<-finished
		})
	}
}

// relaySignals is NotifySignals without the process-wide signal table.
func relaySignals(in *Interrupts, w io.Writer, resume string, ch <-chan os.Signal, done <-chan struct{}, afterSecond func()) {
	for {
		select {
		case <-done:
			return
		case <-ch:
		}
		if in.isAsking() {
			continue // the question takes it as a "no"
		}
		// Print before interrupting: whoever waits on in sees the message.
		switch in.Count() {
		case 0:
			fmt.Fprint(w, "\nInterrupt: finishing the current step (a wait stops at once), then stopping. Interrupt again to cancel the step.\n")
		default:
			fmt.Fprint(w, "\nSecond interrupt: cancelling the current step. A third one kills drctl at once.\n")
		}
		if resume != "" {
			fmt.Fprintf(w, "To finish the run later: %s\n", resume)
		}
		if in.Interrupt() >= 2 {
			afterSecond()
			return
		}
	}
}
