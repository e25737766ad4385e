package drill

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestJudge: each rule, alone, fails the drill with its own reason; a
// record with every measurement in order passes.
func TestJudge(t *testing.T) {
	good := func() *Record {
		return &Record{Kind: "canary", Objectives: Objectives{RPOSeconds: 30, RTOSeconds: 60, MaxCanaryLatencyMS: 500},
			Steps:     []Step{{Name: "canary", Status: "done"}},
			Canary:    &CanaryResult{Target: "west", Sent: 10, Received: 10, LatencyMaxMS: 400, LatencyP99MS: 400},
			GroupSync: &GroupSyncResult{Group: "g", Exact: true, StandbyOffset: 5, ExpectedOffset: 5},
			Preflight: &PreflightResult{To: "west", Ready: true},
			RPO:       &RPO{Seconds: 1, Link: "east->west"}, RTO: &RTO{Seconds: 20, From: "d1", Estimated: true}}
	}
	for _, tc := range []struct {
		name  string
		spoil func(r *Record)
		want  string
	}{
		{"step failed", func(r *Record) { r.Steps[0].Status, r.Steps[0].Error = "failed", "boom" }, "step canary failed: boom"},
		{"step skipped", func(r *Record) { r.Steps[0].Status = "skipped" }, "step canary did not run"},
		{"missing", func(r *Record) { r.Canary.Missing, r.Canary.WaitedMS = 3, 2000 }, "3 of 10 canary records not replicated to west within 2s"},
		{"duplicates", func(r *Record) { r.Canary.Duplicates = 2 }, "2 duplicate canary records among the 10 read on west"},
		{"order", func(r *Record) { r.Canary.OutOfOrder = 1 }, "1 of 10 canary records out of order"},
		{"latency", func(r *Record) { r.Canary.LatencyMaxMS = 900 }, "canary latency max 900 ms exceeds the objective 500 ms"},
		{"group none", func(r *Record) { r.GroupSync.Exact, r.GroupSync.StandbyOffset = false, -1 }, "group g has no position on the standby"},
		{"group inexact", func(r *Record) { r.GroupSync.Exact, r.GroupSync.StandbyOffset, r.GroupSync.ReRead = false, 3, 2 }, "group g on the standby is at offset 3, the exact position is 5 (2 re-read, 0 skipped)"},
		{"preflight", func(r *Record) { r.Preflight.Ready, r.Preflight.Problems = false, []string{"no mirror"} }, "failover preflight to west: no mirror"},
		{"rpo", func(r *Record) { r.RPO.Seconds, r.RPO.Records = 45, 7 }, "RPO 45.0 s (7 records behind on east->west) exceeds the objective 30 s"},
		{"rto", func(r *Record) { r.RTO.Seconds = 90 }, "RTO estimated at 90.0 s exceeds the objective 60 s"},
		{"lost", func(r *Record) {
			r.Directions = []Direction{{From: "east", To: "west", Records: 40, Tallied: true, Lost: 1}}
		}, "east -> west: 1 of 40 canary records lost"},
		{"fence", func(r *Record) { r.Directions = []Direction{{From: "east", To: "west", FenceNote: "accepted"}} }, "fence not verified: accepted"},
		{"planned rpo", func(r *Record) {
			r.Kind = "failover"
			r.Directions = []Direction{{From: "east", To: "west", Records: 40, RPORecords: 2}}
		}, "left 2 of 40 canary records behind on east"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := good()
			Judge(r)
			if r.Verdict != Pass || len(r.Reasons) != 0 {
				t.Fatalf("the good record: %s %v", r.Verdict, r.Reasons)
			}
			tc.spoil(r)
			Judge(r)
			if r.Verdict != Fail || len(r.Reasons) != 1 || !strings.Contains(r.Reasons[0], tc.want) {
				t.Errorf("got %s %q, want one reason containing %q", r.Verdict, r.Reasons, tc.want)
			}
		})
	}
}

// TestFailedDirectionKeepsItsMeasurements: a role change whose run failed
// is kept with what it measured (an unplanned run's RPO becomes the
// record's), and is judged once, by its failed step.
func TestFailedDirectionKeepsItsMeasurements(t *testing.T) {
	rec := &Record{Kind: "unplanned", Steps: []Step{{Name: StepUnplannedFailover, Status: "failed", Error: "wipe east: members"}}}
	keepFailed(rec, []Direction{{From: "east", To: "west", Unplanned: true, RunError: "wipe east: members", RPOReported: true, RPORecords: 31, RPOAllRecords: 33, RPOSeconds: 2.4}})
	if len(rec.Directions) != 1 || rec.RPO == nil || rec.RPO.Records != 33 || rec.RPO.Seconds != 2.4 || rec.RPO.Link != "east->west" {
		t.Fatalf("record %+v, RPO %+v", rec, rec.RPO)
	}
	Judge(rec)
	if rec.Verdict != Fail || len(rec.Reasons) != 1 || !strings.Contains(rec.Reasons[0], "step drill-unplanned-failover failed") {
		t.Errorf("reasons %q", rec.Reasons)
	}
}

// TestFailedRunMeasuresNoRTO: a role change whose run failed has no RTO:
// the history and the canary's estimate do not take its zero for one.
func TestFailedRunMeasuresNoRTO(t *testing.T) {
	failed := Record{ID: "d2", Kind: "unplanned", Directions: []Direction{{From: "east", To: "west", Unplanned: true, RunError: "wipe failed"}}}
	if rto, ok := failed.MeasuredRTO(); ok {
		t.Errorf("a failed run measured an RTO of %v", rto)
	}
	if s := failed.Summary(); s.RTOSeconds != nil {
		t.Errorf("the history shows an RTO of %v for a failed run", *s.RTOSeconds)
	}
	passed := Record{ID: "d1", Kind: "failover", Directions: []Direction{{RTOWriteSeconds: 3.5}, {RTOWriteSeconds: 4.2}}}
	if rto, ok := passed.MeasuredRTO(); !ok || rto != 4.2 {
		t.Errorf("measured RTO %v %v, want 4.2", rto, ok)
	}
}

// TestMetricsTakeNoZeroFromAFailedRun: a disruptive drill whose run failed
// before the tally sets no RPO or RTO gauge to 0: it measured neither.
func TestMetricsTakeNoZeroFromAFailedRun(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.Seed([]Record{{ID: "d1", Drill: "staging", Kind: "failover", FinishedAt: time.Now(), Verdict: Fail,
		Directions: []Direction{{From: "east", To: "west", RunError: "drain timed out"}}}})
	for _, name := range []string{"drctl_drill_rpo_seconds", "drctl_drill_rto_seconds"} {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n != 0 {
			t.Errorf("%s: %d series (%v), want none", name, n, err)
		}
	}
}
