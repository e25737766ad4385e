package inspect

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/testkit/fuzzseed"
	"github.com/drctl/drctl/topology"
)

// FuzzDecodeDrillStatus: no run of drill records read back from the
// drills topic (one record a line) panics status, and what status shows
// is what the records say: the newest drill of the topology, the newest
// pass, a problem for a failed last drill.
func FuzzDecodeDrillStatus(f *testing.F) {
	at := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	rec := func(id, topo, verdict string, finished time.Time) []byte {
		raw, err := json.Marshal(map[string]any{"id": id, "drill": "nightly", "kind": "canary", "topology": topo,
			"verdict": verdict, "finished_at": finished, "reasons": []string{"a reason"}, "started_at": finished.Add(-time.Minute)})
		if err != nil {
			f.Fatal(err)
		}
		return raw
	}
	lines := func(rs ...[]byte) []byte { return bytes.Join(rs, []byte("\n")) }
	fuzzseed.Add(f,
		rec("d1", "payments", "pass", at),
		lines(rec("d1", "payments", "pass", at), rec("d2", "payments", "fail", at.Add(time.Hour))),
		lines(rec("d1", "payments", "fail", at), rec("d2", "other", "pass", at.Add(time.Hour)), rec("d3", "payments", "pass", at.Add(-time.Hour))),
		lines(rec("", "payments", "pass", at), rec("d4", "", "pass", at)),
		[]byte(`{"id":"d5","topology":"payments","verdict":"pass","finished_at":"not a time"}`),
		[]byte(`{"id":"d6","topology":"payments","finished_at":"0001-01-01T00:00:00Z"}`),
		[]byte(`null`), []byte(`[]`), []byte{},
	)
	topo := &topology.Topology{Name: "payments", Drills: topology.Drills{StaleAfter: 24 * time.Hour}}
	f.Fuzz(func(t *testing.T, raw []byte) {
		fold := drillFold{topology: topo.Name}
		var newest, pass time.Time
		accepted := 0
		for line := range bytes.SplitSeq(raw, []byte("\n")) {
			fold.add(line)
			h, err := decodeDrillHeader(line)
			if err != nil || h.Topology != topo.Name {
				continue
			}
			if h.ID == "" {
				t.Fatalf("accepted a record without an id: %q", line)
			}
			accepted++
			if accepted == 1 || h.FinishedAt.After(newest) {
				newest = h.FinishedAt
			}
			if h.Verdict == "pass" && h.FinishedAt.After(pass) {
				pass = h.FinishedAt
			}
		}
		st := fold.status(topo.Drills.StaleAfter, at)
		problems := drillProblems(topo, st)
		if accepted == 0 {
			if st != nil && (st.ID != "" || !st.Stale) {
				t.Fatalf("no drill recorded, status %+v", st)
			}
			return
		}
		if st == nil || st.ID == "" || !st.FinishedAt.Equal(newest) {
			t.Fatalf("status %+v, the newest record finished at %s", st, newest)
		}
		if pass.IsZero() != (st.LastPassAt == nil) || (st.LastPassAt != nil && !st.LastPassAt.Equal(pass)) {
			t.Fatalf("last pass %v, want %s", st.LastPassAt, pass)
		}
		if st.Verdict != "pass" && len(problems) == 0 {
			t.Fatalf("the last drill %s did not pass and status lists no problem", st.ID)
		}
	})
}
