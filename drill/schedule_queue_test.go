package drill

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/drctl/drctl/internal/drilllease"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestSchedulerQueuesABusySlot: a slot that finds another drill running is
// queued, not dropped: it runs late once the other drill is done, before
// its next slot. A stop is logged with its cause.
func TestSchedulerQueuesABusySlot(t *testing.T) {
	p := newPair(t, "drills:\n  named:\n    often:\n      schedule: \"@every 6s\"\n      params: {records: 5, rate: 100}\n")
	topo := p.Topology
	startMirror(t, topo)
	defer func(d time.Duration) { busyRetry = d }(busyRetry)
	busyRetry = 200 * time.Millisecond
	ctx := context.Background()
	// Another drill (elsewhere) holds the running lease.
	other, err := Acquire(ctx, kfaketest.Session(t, topo), drilllease.RunningKey, "ops-box/1/other-drill", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var logs kfaketest.LogBuffer
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	s := &Scheduler{Topo: topo, Options: Options{JournalDir: dir}, Metrics: NewMetrics(reg), Log: slog.New(slog.NewJSONHandler(&logs, nil))}
	sctx, stop := context.WithCancelCause(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(sctx) }()
	t.Cleanup(func() { stop(errors.New("test over")); <-done })

	waitTrue(t, 20*time.Second, "queued slot", func() bool { return strings.Contains(logs.String(), `"msg":"drill queued: another run is in progress`) })
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
	var rec Record
	waitTrue(t, 30*time.Second, "record of the queued slot", func() bool {
		hist, _ := History(ctx, kfaketest.Session(t, topo), HistoryOptions{JournalDir: dir})
		if len(hist) == 0 {
			return false
		}
		rec = hist[len(hist)-1] // the oldest: the slot that was queued
		return true
	})
	if rec.ScheduledFor == nil || rec.Verdict != Pass {
		t.Fatalf("the queued slot's record: %+v", rec)
	}
	slot := rec.ScheduledFor.UTC().Format(time.RFC3339)
	for _, want := range []string{`"msg":"drill queued: another run is in progress; it is tried again until its next slot","drill":"often","slot":"` + slot,
		`"msg":"drill ran late","drill":"often","slot":"` + slot} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
	if strings.Contains(logs.String(), "drill skipped") {
		t.Errorf("a slot was skipped:\n%s", logs.String())
	}
	if n := testutil.ToFloat64(s.Metrics.skipped.WithLabelValues("often", "canary")); n != 0 {
		t.Errorf("drctl_drill_busy_total %v, want 0: the slot ran", n)
	}

	stop(errors.New("terminated signal received"))
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the scheduler did not stop")
	}
	done <- nil // for the cleanup
	if !strings.Contains(logs.String(), `"msg":"drill scheduler stopping","reason":"terminated signal received"`) {
		t.Errorf("the stop is not logged with its cause:\n%s", logs.String())
	}
}

// TestSchedulerRunsMissedSlotsLate: a drill slower than its schedule does
// not lose its slots silently: the latest slot that came while it ran runs
// late, and the others are logged and counted as missed.
func TestSchedulerRunsMissedSlotsLate(t *testing.T) {
	p := newPair(t, "drills:\n  named:\n    slow:\n      schedule: \"@every 1s\"\n      params: {records: 25, rate: 10}\n")
	topo := p.Topology
	startMirror(t, topo)
	var logs kfaketest.LogBuffer
	reg := prometheus.NewRegistry()
	s := &Scheduler{Topo: topo, Options: Options{JournalDir: t.TempDir()}, Metrics: NewMetrics(reg), Log: slog.New(slog.NewJSONHandler(&logs, nil))}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	waitTrue(t, 60*time.Second, "a late run after missed slots", func() bool {
		return strings.Contains(logs.String(), `"msg":"drill ran late"`) && strings.Contains(logs.String(), `"msg":"drill passed"`)
	})
	stop()
	<-done
	if !strings.Contains(logs.String(), `"msg":"drill slots missed: they came while drills ran","drill":"slow"`) {
		t.Errorf("missed slots are not logged:\n%s", logs.String())
	}
	if n := testutil.ToFloat64(s.Metrics.missed.WithLabelValues("slow", "canary")); n < 1 {
		t.Errorf("drctl_drill_slots_missed_total %v, want at least 1", n)
	}
}

// waitTrue is kfaketest.Wait for a condition that explains nothing.
func waitTrue(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	kfaketest.Wait(t, d, what, func() (bool, string) { return cond(), "not yet" })
}
