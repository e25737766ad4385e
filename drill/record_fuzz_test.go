package drill

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/testkit/fuzzseed"
)

// sampleRecords are records as drills write them: a canary, a failover
// and an unplanned drill, and a drill that stopped.
func sampleRecords() []Record {
	at := time.Date(2026, 12, 1, 6, 17, 9, 0, time.UTC)
	base := Record{ID: "drill-canary-20261201T061709-d49517", Drill: "nightly", Kind: "canary", Topology: "payments",
		TopologyDigest: "c46292814eff", By: "ops@box", StartedAt: at, FinishedAt: at.Add(4 * time.Second), Active: "east", Standby: "west",
		Objectives: Objectives{RPOSeconds: 30, MaxCanaryLatencyMS: 2000},
		Steps:      []Step{{Name: StepCanary, Title: "Write", StartedAt: at, ElapsedMS: 1238, Status: "done", Summary: "20/20"}}}
	canary := base
	canary.Canary = &CanaryResult{Topic: "drctl-canary.payments", Source: "east", Target: "west", Sent: 20, Received: 20, LatencyP50MS: 445,
		LatencyP99MS: 1003, LatencyMaxMS: 1003, Samples: []Sample{{Seq: 0, SentAt: at, LatencyMS: 445}}}
	canary.GroupSync = &GroupSyncResult{Group: "drctl-canary.payments", ActiveOffset: 10, ExpectedOffset: 10, StandbyOffset: 10, Exact: true}
	canary.Preflight = &PreflightResult{To: "west", Ready: true}
	canary.RPO = &RPO{Records: 0, Link: "east->west"}
	canary.RTO = &RTO{Seconds: 1.2, From: "drill-failover-x", Estimated: true}
	fo := base
	fo.ID, fo.Kind = "drill-failover-20261201T070000-aaaaaa", "failover"
	fo.Directions = []Direction{{From: "east", To: "west", RunID: "failover-1", RTOWriteSeconds: 2.1, RTOConsumeSeconds: 2.5},
		{From: "west", To: "east", RunID: "failback-1", RTOWriteSeconds: 1.9, Error: "the canary could not write"}}
	un := base
	un.ID, un.Kind = "drill-unplanned-20261201T080000-bbbbbb", "unplanned"
	un.Directions = []Direction{{From: "east", To: "west", RunID: "failover-2", Unplanned: true, RPORecords: 35, RPOAllRecords: 40,
		RPOSeconds: 0.9, Unmirrored: 35, Salvaged: 34, SalvageMismatch: "1 not salvaged (seq 7)"}}
	stopped := base
	stopped.ID, stopped.Kind, stopped.FinishedAt = "drill-failover-20261201T090000-cccccc", "failover", time.Time{}
	stopped.Steps = append(stopped.Steps, Step{Name: StepFailover, Status: "skipped"})
	out := []Record{canary, fo, un, stopped}
	for i := range out {
		Judge(&out[i])
	}
	return out
}

// FuzzDecodeRecord: no drill record read back from a cluster or the local
// journal panics the reader or what history and status do with it, and an
// accepted record encodes stably (what Store writes reads back the same).
func FuzzDecodeRecord(f *testing.F) {
	var seeds [][]byte
	for _, r := range sampleRecords() {
		raw, err := json.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, raw)
	}
	seeds = append(seeds, []byte(`{"id":"x","topology":"t","directions":[{}],"steps":[{"status":"failed"}]}`),
		[]byte(`{"id":"","topology":"t"}`), []byte(`{"id":"x","topology":"t","started_at":"2026-12-01T06:17:09+02:00","finished_at":"0001-01-01T00:00:00Z"}`),
		[]byte(`{"id":"x","topology":"t","canary":null,"rpo":{"records":-1,"seconds":-5}}`), []byte(`null`), []byte(`[]`))
	fuzzseed.Add(f, seeds...)
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := DecodeRecord(raw)
		if err != nil {
			return
		}
		if r.ID == "" || r.Topology == "" {
			t.Fatalf("accepted a record without an id or topology: %q", raw)
		}
		once, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeRecord(once)
		if err != nil {
			t.Fatalf("a record it accepted, encoded, is refused: %v", err)
		}
		twice, _ := json.Marshal(again)
		if !bytes.Equal(once, twice) {
			t.Fatalf("unstable encoding:\n%s\n%s", once, twice)
		}
		_ = r.Summary()
		_, _ = r.MeasuredRTO()
		_ = r.Duration()
		Judge(&again)
		if (again.Verdict == Pass) != (len(again.Reasons) == 0) {
			t.Fatalf("verdict %s with reasons %v", again.Verdict, again.Reasons)
		}
	})
}
