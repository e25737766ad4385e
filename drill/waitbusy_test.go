package drill

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/drilllease"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// lockedBuffer is a strings.Builder that a drill writes while a test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDrillWaitsForAnotherDrill: a drill started while another holds the
// drill lease (as a scheduled canary does a few seconds each minute) is
// refused at once without WaitBusy, and with it waits, says so, and runs
// once the other lets go.
func TestDrillWaitsForAnotherDrill(t *testing.T) {
	p := newPair(t, "")
	topo := p.Topology
	startMirror(t, topo)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	other, err := AcquireFor(ctx, kfaketest.Session(t, topo), drilllease.RunningKey, "sched-box/77/canary", "drill canary-every-minute (kind canary)", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := Run(ctx, kfaketest.Session(t, topo), smallCanary(), Options{JournalDir: t.TempDir()}); !errors.Is(err, ErrBusy) || rec != nil {
		t.Fatalf("a drill beside another without waiting: %+v %v; want ErrBusy", rec, err)
	}
	var out lockedBuffer
	done := make(chan error, 1)
	var rec *Record
	go func() {
		var err error
		rec, err = Run(ctx, kfaketest.Session(t, topo), smallCanary(), Options{JournalDir: t.TempDir(), Out: &out, WaitBusy: time.Minute})
		done <- err
	}()
	kfaketest.Wait(t, 30*time.Second, "the drill says it waits", func() (bool, string) {
		return strings.Contains(out.String(), "Another drill is running"), out.String()
	})
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil || rec == nil || rec.Verdict != Pass {
			t.Fatalf("the drill after the other let go: %+v %v", rec, err)
		}
	case <-ctx.Done():
		t.Fatal("the drill never ran after the other drill let go")
	}
	if !strings.Contains(out.String(), "sched-box/77/canary") || !strings.Contains(out.String(), "waiting up to") {
		t.Errorf("the drill printed %q; want it to name the drill it waits for and for how long", out.String())
	}
}
