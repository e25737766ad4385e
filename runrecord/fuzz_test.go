package runrecord

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/testkit/fuzzseed"
	"github.com/drctl/drctl/plans"
)

// FuzzDecode: no run record read back from a cluster panics the
// reader, and one it accepts can be resumed: its progress indexes only
// steps of its plan. Encoding it again (as the run store does) decodes to
// the same record.
func FuzzDecode(f *testing.F) {
	p := plans.New("r-1", "failover")
	p.CreatedAt, p.CreatedBy = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), "ops@box"
	if err := p.SetInputs(map[string]any{"topology": "payments", "epoch": 3}); err != nil {
		f.Fatal(err)
	}
	for _, name := range []string{"preflight", "fence-active", "flip"} {
		if err := p.Add(plans.StepSpec{Name: name, Title: "Step " + name, Params: map[string]string{"cluster": "east"}}); err != nil {
			f.Fatal(err)
		}
	}
	var seeds [][]byte
	for _, rec := range []Record{
		{Plan: p, Done: []bool{true, false, false}, Outputs: map[int]json.RawMessage{0: json.RawMessage(`{"ok":1}`)}, Started: 1},
		{Plan: p, Done: []bool{true, true, true}, Outputs: map[int]json.RawMessage{}, Started: 2, Finished: true, Outcome: plans.OutcomeSucceeded},
		{Plan: p, Done: []bool{true, false, false}, Started: 1, Outcome: plans.OutcomeFailed, Error: "broker down"},
		// Progress that does not fit the plan: a resume of it indexed
		// past the plan's steps.
		{Plan: p, Done: []bool{true, true, true, true, true}, Started: 4},
		{Plan: p, Done: []bool{true, false, false}, Outputs: map[int]json.RawMessage{7: json.RawMessage(`1`)}, Started: 1},
		{Done: []bool{true}, Started: 0},
	} {
		raw, err := json.Marshal(rec)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, raw)
	}
	seeds = append(seeds, []byte(`{"plan":null}`), []byte(`{"plan":{"format_version":1,"id":"x","kind":"k","steps":[]},"done":[],"started":-1}`))
	fuzzseed.Add(f, seeds...)
	f.Fuzz(func(t *testing.T, raw []byte) {
		rec, err := Decode(raw)
		if err != nil {
			return
		}
		n := len(rec.Plan.Steps)
		if s := rec.Start(); s.From < 0 || s.From > n {
			t.Fatalf("resume would start at step %d of %d", s.From, n)
		}
		// What Execute does with a record of this plan.
		done := make([]bool, n)
		for i := 0; i < rec.Start().From; i++ {
			done[i] = true
		}
		for i := range rec.Outputs {
			if i < 0 || i >= n {
				t.Fatalf("outputs of step %d of %d", i, n)
			}
		}
		again, err := json.Marshal(rec)
		if err != nil {
			t.Fatalf("an accepted record does not encode: %v", err)
		}
		back, err := Decode(again)
		if err != nil {
			t.Fatalf("a written record does not decode: %v\n%s", err, again)
		}
		if third, _ := json.Marshal(back); string(third) != string(again) {
			t.Fatalf("round trip changed the record:\n%s\n%s", again, third)
		}
	})
}

// TestDecodeRefuses: a record whose progress does not fit its plan
// (or that has no plan) is refused; before, resume indexed past the plan's
// steps with it (Execute panicked marking 5 steps done of 3).
func TestDecodeRefuses(t *testing.T) {
	p := plans.New("r-1", "failover")
	if err := p.Add(plans.StepSpec{Name: "flip", Title: "Flip"}); err != nil {
		t.Fatal(err)
	}
	for name, rec := range map[string]Record{
		"no plan":               {Done: []bool{true}},
		"more done than steps":  {Plan: p, Done: []bool{true, true, true}, Started: -1},
		"fewer done than steps": {Plan: p, Started: -1},
		"started past the end":  {Plan: p, Done: []bool{false}, Started: 1},
		"outputs past the end":  {Plan: p, Done: []bool{true}, Started: 0, Outputs: map[int]json.RawMessage{1: json.RawMessage(`1`)}},
		"invalid plan":          {Plan: &plans.Plan{FormatVersion: plans.FormatVersion}, Started: -1},
	} {
		raw, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := Decode(raw); err == nil {
			t.Errorf("%s: accepted %+v", name, got)
		}
	}
	good := Record{Plan: p, Done: []bool{true}, Started: 0, Outputs: map[int]json.RawMessage{0: json.RawMessage(`1`)}}
	raw, _ := json.Marshal(good)
	if _, err := Decode(raw); err != nil {
		t.Errorf("a good record: %v", err)
	}
}
