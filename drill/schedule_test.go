package drill

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/drctl/drctl/internal/drilllease"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestLease: a held lease refuses another holder and names the holder;
// released, it can be taken; an expired one is taken over.
func TestLease(t *testing.T) {
	p := newPair(t, "")
	ctx := context.Background()
	l, err := Acquire(ctx, kfaketest.Session(t, p.Topology), "k", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(ctx, kfaketest.Session(t, p.Topology), "k", "b", time.Minute); !errors.Is(err, drilllease.ErrLocked) || !strings.Contains(err.Error(), "a holds k") {
		t.Fatalf("second holder: %v", err)
	}
	if _, err := Acquire(ctx, kfaketest.Session(t, p.Topology), "other", "b", time.Minute); err != nil {
		t.Fatalf("another key: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(ctx, kfaketest.Session(t, p.Topology), "k", "b", time.Millisecond); err != nil {
		t.Fatalf("after release: %v", err)
	}
	time.Sleep(5 * time.Millisecond) // let b's lease expire: clocks end dead holders' leases
	if _, err := Acquire(ctx, kfaketest.Session(t, p.Topology), "k", "c", time.Minute); err != nil {
		t.Fatalf("after expiry: %v", err)
	}

	// A holder of this host whose process is gone (a killed drill) loses
	// its lease at once.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	dead := fmt.Sprintf("%s/%d/x", host, cmd.Process.Pid)
	if _, err := Acquire(ctx, kfaketest.Session(t, p.Topology), "k2", dead, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(ctx, kfaketest.Session(t, p.Topology), "k2", NewHolder(), time.Minute); err != nil {
		t.Fatalf("a dead holder's lease: %v", err)
	}
	live := fmt.Sprintf("%s/%d/y", host, os.Getpid())
	if _, err := Acquire(ctx, kfaketest.Session(t, p.Topology), "k3", live, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(ctx, kfaketest.Session(t, p.Topology), "k3", NewHolder(), time.Minute); !errors.Is(err, drilllease.ErrLocked) {
		t.Fatalf("a live holder's lease was taken: %v", err)
	}
}

// TestTwoSchedulersRunEachSlotOnce: two schedulers on one topology; each
// scheduled slot runs once, recorded with its slot, and the metrics say so.
func TestTwoSchedulersRunEachSlotOnce(t *testing.T) {
	p := newPair(t, "drills:\n  named:\n    often:\n      schedule: \"@every 4s\"\n      params: {records: 5, rate: 100}\n")
	topo := p.Topology
	startMirror(t, topo)
	dir := t.TempDir()

	// The same slot, claimed by both at once: exactly one runs it.
	d := topo.Drills.Named["often"]
	slot := time.Now().Truncate(time.Second).Add(-time.Hour)
	var wg sync.WaitGroup
	recs := make([]*Record, 2)
	logs := make([]bytes.Buffer, 2)
	for i := range recs {
		wg.Go(func() {
			s := &Scheduler{Topo: topo, Options: Options{JournalDir: dir}, Log: slog.New(slog.NewJSONHandler(&logs[i], nil))}
			recs[i] = s.RunSlot(context.Background(), d, slot)
		})
	}
	wg.Wait()
	if (recs[0] == nil) == (recs[1] == nil) {
		t.Fatalf("one slot, two schedulers: records %v and %v, want exactly one", recs[0] != nil, recs[1] != nil)
	}
	// Each scheduler logs one JSON object for the slot: the winner the
	// record, the other that the slot was taken.
	for i, rec := range recs {
		var entry map[string]any
		if err := json.Unmarshal(logs[i].Bytes(), &entry); err != nil {
			t.Fatalf("scheduler %d log is not one JSON object: %v\n%s", i, err, logs[i].String())
		}
		if entry["drill"] != "often" || entry["slot"] != slot.UTC().Format(time.RFC3339) {
			t.Errorf("scheduler %d log names drill %v slot %v; want often %s", i, entry["drill"], entry["slot"], slot.UTC().Format(time.RFC3339))
		}
		if rec != nil && (entry["msg"] != "drill passed" || entry["id"] != rec.ID || entry["level"] != "INFO") {
			t.Errorf("the winner logged %v; want drill passed with id %s", entry, rec.ID)
		}
		if rec == nil && entry["msg"] != "slot taken by another scheduler" {
			t.Errorf("the other scheduler logged %v; want that the slot was taken", entry)
		}
	}

	// Both schedulers looping for a few slots.
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Second)
	defer cancel()
	regs := []*prometheus.Registry{prometheus.NewRegistry(), prometheus.NewRegistry()}
	for i := range 2 {
		wg.Go(func() {
			s := &Scheduler{Topo: topo, Options: Options{JournalDir: dir}, Metrics: NewMetrics(regs[i])}
			if err := s.Run(ctx); err != nil {
				t.Errorf("scheduler %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	hist, err := History(context.Background(), kfaketest.Session(t, topo), HistoryOptions{JournalDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	slots := map[time.Time]int{}
	for _, r := range hist {
		if r.ScheduledFor == nil {
			t.Fatalf("scheduled record without its slot: %s", r.ID)
		}
		slots[*r.ScheduledFor]++
		if r.Verdict != Pass {
			t.Errorf("%s: %v", r.ID, r.Reasons)
		}
	}
	for s, n := range slots {
		if n != 1 {
			t.Errorf("slot %s ran %d times", s, n)
		}
	}
	if len(slots) < 2 {
		t.Errorf("only %d slot(s) ran in the loop test; want the claimed one and at least one looped", len(slots))
	}
	// Every record counts in exactly one scheduler's metrics.
	runs := 0.0
	for _, reg := range regs {
		n, err := testutil.GatherAndCount(reg, "drctl_drill_last_run_timestamp_seconds")
		if err != nil {
			t.Fatal(err)
		}
		runs += float64(n)
	}
	if runs == 0 {
		t.Errorf("no scheduler reported drctl_drill_last_run_timestamp_seconds")
	}
}
