package drill

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/drilllease"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestFailoverRefusedWhileDrillRuns: while a drill holds its running lease,
// a planned failover and a forced unplanned one are refused at preflight
// with a message naming the drill and how to wait or stop it, and the roles
// do not move; the drill's own failover (its holder in ctx) passes the same
// preflight, and a preflight started while the drill ends waits for it.
func TestFailoverRefusedWhileDrillRuns(t *testing.T) {
	p := newPair(t, "drills: {allow_disruptive: true}\n")
	topo := p.Topology
	startMirror(t, topo)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	before, err := inspect.CollectRoles(ctx, kfaketest.Session(t, topo))
	if err != nil {
		t.Fatal(err)
	}
	const holder = "drill-host-elsewhere/4242/abcd"
	lease, err := AcquireFor(ctx, kfaketest.Session(t, topo), drilllease.RunningKey, holder, "drill nightly (kind canary)", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []failover.FailoverRequest{{To: "west"}, {To: "west", Mode: failover.Unplanned, ForceUnplanned: true}} {
		plan, err := failover.PlanFailover(ctx, kfaketest.Session(t, topo), req)
		if err != nil {
			t.Fatalf("plan %+v: %v", req, err)
		}
		err = failover.Execute(ctx, kfaketest.Session(t, topo), plan, failover.RunOptions{JournalDir: t.TempDir(), Yes: true})
		if !errors.Is(err, drilllease.ErrDrillRunning) {
			t.Fatalf("%+v while a drill runs: %v", req, err)
		}
		for _, want := range []string{"drill nightly", holder, "nothing was changed", "kill process 4242"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%+v: refusal %q does not say %q", req, err, want)
			}
		}
		after, err := inspect.CollectRoles(ctx, kfaketest.Session(t, topo))
		if err != nil || after.Active != before.Active || after.Epoch != before.Epoch || after.Phase != "steady" || after.Run != nil {
			t.Fatalf("roles moved after a refused %+v: %+v -> %+v (%v)", req, before, after, err)
		}
	}
	plan, err := failover.PlanFailover(ctx, kfaketest.Session(t, topo), failover.FailoverRequest{To: "west"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := failover.Preflight(drilllease.WithHolder(ctx, holder), kfaketest.Session(t, topo), plan); err != nil {
		t.Errorf("the drill's own preflight: %v", err)
	}
	// A drill that ends within the preflight's wait (a canary takes
	// seconds) is waited for, not refused.
	released := make(chan error, 1)
	go func() {
		time.Sleep(time.Second)
		released <- lease.Release(ctx)
	}()
	began := time.Now()
	if _, err := failover.Preflight(ctx, kfaketest.Session(t, topo), plan); err != nil {
		t.Errorf("preflight while the drill ends: %v", err)
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took < time.Second {
		t.Errorf("preflight passed after %v, before the drill's lease was released", took)
	}
	if _, err := failover.Preflight(ctx, kfaketest.Session(t, topo), plan); err != nil {
		t.Errorf("preflight after the drill ended: %v", err)
	}
}

// onFirstWrite runs f once, at the first write (a drill's first progress
// line), and discards what is written.
type onFirstWrite struct {
	once sync.Once
	f    func()
}

func (w *onFirstWrite) Write(b []byte) (int, error) {
	w.once.Do(w.f)
	return len(b), nil
}

// TestCanaryBesideARunRecordsNoResult: a failback the operator started in
// the same second as a scheduled canary passed its preflight before the
// canary took its lease, and the canary then measured the failback (its
// preflight found the run in progress) and recorded a failed drill: the
// README tour's sandbox showed "drill failed" while its failback ran. A
// canary whose roles moved while it ran now ends with ErrBusy and records
// nothing; one that finds a run recorded when it takes its lease does not
// start.
func TestCanaryBesideARunRecordsNoResult(t *testing.T) {
	p := newPair(t, "")
	topo := p.Topology
	startMirror(t, topo)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	before, err := inspect.CollectRoles(ctx, kfaketest.Session(t, topo))
	if err != nil {
		t.Fatal(err)
	}
	// The operator's failback records itself on both clusters once the
	// canary runs, as its step 2 does.
	moving := rolestate.State{Topology: topo.Name, Epoch: before.Epoch + 1, Active: before.Active, Standby: before.Standby,
		Phase: rolestate.PhaseFailingBack, Run: &rolestate.Run{ID: "failback-beside", Kind: rolestate.RunFailback}}
	record := func() {
		for _, c := range []string{"east", "west"} {
			cl := kfaketest.DialCluster(t, topo.Clusters[c])
			if err := rolestate.CompareAndSet(ctx, cl, cl.Config(), before.Epoch, moving); err != nil {
				t.Errorf("record the failback on %s: %v", c, err)
			}
		}
	}
	dir := t.TempDir()
	rec, err := Run(ctx, kfaketest.Session(t, topo), smallCanary(), Options{JournalDir: dir, Out: &onFirstWrite{f: record}})
	if !errors.Is(err, ErrBusy) || rec != nil {
		t.Fatalf("canary beside a failback: record %+v, err %v; want ErrBusy and no record", rec, err)
	}
	for _, want := range []string{"failback-beside", "records no result"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	hist, err := History(ctx, kfaketest.Session(t, topo), HistoryOptions{JournalDir: dir})
	if err != nil || len(hist) != 0 {
		t.Errorf("drill history after the canary: %d record(s) (%v), want none", len(hist), err)
	}
	// With the failback still recorded, the next canary does not start.
	if rec, err := Run(ctx, kfaketest.Session(t, topo), smallCanary(), Options{JournalDir: dir}); !errors.Is(err, ErrBusy) || rec != nil {
		t.Errorf("canary while the failback is recorded: record %+v, err %v; want ErrBusy", rec, err)
	}
}
