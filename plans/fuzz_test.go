package plans

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/testkit/fuzzseed"
)

// fuzzPlan is a small valid plan with every kind of field filled.
func fuzzPlan(t testing.TB, id string, steps int) *Plan {
	p := New(id, "failover")
	p.CreatedAt = time.Date(2026, 11, 30, 9, 0, 0, 123e6, time.UTC)
	p.CreatedBy = "alice@ops-1"
	if err := p.SetInputs(map[string]any{"epoch": 7, "topology": "sha256:ab", "html": "<&>"}); err != nil {
		t.Fatal(err)
	}
	for i := range steps {
		if err := p.Add(StepSpec{Name: "step", Title: "Step \u00e9 " + string(rune('A'+i)),
			Params: map[string]any{"cluster": "east", "n": i}, Expect: []int{1, 2}, Intend: nil, Destructive: i%2 == 1}); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// memFile is a journal's file in memory.
type memFile struct{ bytes.Buffer }

func (*memFile) Sync() error { return nil }

// fuzzJournals runs plans through the real executor and journal: one that
// succeeds, one whose second step fails and is then resumed to success, and
// torn or cut copies of them.
func fuzzJournals(t testing.TB) [][]byte {
	var out [][]byte
	fail := true
	reg := NewRegistry()
	_ = reg.Register("step", ActionFunc(func(ctx context.Context, s Step, rc *RunContext) (Result, error) {
		rc.Progress("half", 0.5)
		if s.Index == 1 && fail {
			fail = false
			return Result{}, errors.New("broker down")
		}
		return NewResult("ok", map[string]int{"step": s.Index})
	}))
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	run := func(p *Plan, f *memFile, resume bool) {
		j := NewJournal("j", f)
		j.ProgressEvery = -1
		if resume {
			st, err := parseJournal("j", f.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			j.digest = st.Digest
			ex := &Executor{Registry: reg, Hooks: []Hook{j}, Actor: "bob@ops-2", Now: func() time.Time { return now }}
			_ = ex.Resume(context.Background(), st)
			return
		}
		ex := &Executor{Registry: reg, Hooks: []Hook{j}, Actor: "alice@ops-1", Now: func() time.Time { return now }}
		_ = ex.Run(context.Background(), p)
	}
	ok := &memFile{}
	run(fuzzPlan(t, "r1", 2), ok, false)
	failed := &memFile{}
	run(fuzzPlan(t, "r2", 3), failed, false)
	out = append(out, ok.Bytes(), append([]byte(nil), failed.Bytes()...))
	run(nil, failed, true)
	out = append(out, failed.Bytes())
	whole := failed.Bytes()
	out = append(out, whole[:len(whole)-1], whole[:len(whole)-10], whole[:bytes.IndexByte(whole, '\n')+1])
	return out
}

// FuzzParsePlan: no input panics; a plan that parses is valid, encodes to
// bytes that parse to the same plan (same encoding, same digest).
func FuzzParsePlan(f *testing.F) {
	var seeds [][]byte
	for _, n := range []int{0, 1, 3} {
		data, err := fuzzPlan(f, "r1", n).Encode()
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, data)
	}
	seeds = append(seeds, []byte(`{"format_version":1,"id":"x","kind":"k","created_at":"2026-11-30T09:00:00+01:00","steps":null}`),
		[]byte(`{"format_version":2}`), []byte(`{"format_version":1,"id":"x","kind":"k","extra":1}`), []byte(`{"format_version":1} {}`),
		[]byte(`{"format_version":1,"id":"x","kind":"k","inputs":{"a":1e999},"steps":[{"index":0,"name":"n","title":"t","params":[1,2]}]}`))
	fuzzseed.Add(f, seeds...)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePlan(data)
		if err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("ParsePlan returned an invalid plan: %v", err)
		}
		d1, err := p.Digest()
		if err != nil {
			t.Fatalf("digest of a parsed plan: %v", err)
		}
		enc, err := p.Encode()
		if err != nil {
			t.Fatalf("encode a parsed plan: %v", err)
		}
		q, err := ParsePlan(enc)
		if err != nil {
			t.Fatalf("a parsed plan, encoded, does not parse: %v\n%s", err, enc)
		}
		enc2, err := q.Encode()
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable: %v\n%s\n%s", err, enc, enc2)
		}
		if d2, err := q.Digest(); err != nil || d1 != d2 || q.ID != p.ID || !q.CreatedAt.Equal(p.CreatedAt) {
			t.Fatalf("round trip changed the plan: digest %s -> %s (%v), id %q -> %q", d1, d2, err, p.ID, q.ID)
		}
	})
}

// FuzzParseJournal: no journal panics the reader; one it accepts is a
// consistent run state that a resume can start from.
func FuzzParseJournal(f *testing.F) {
	seeds := fuzzJournals(f)
	seeds = append(seeds, []byte("{}\n"), []byte(`{"v":1,"type":"step-done","index":-1}`+"\n"), []byte("\n\n"),
		[]byte(`{"v":9,"type":"run-started"}`+"\n"))
	fuzzseed.Add(f, seeds...)
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := parseJournal("j", data)
		if err != nil {
			return
		}
		n := len(st.Plan.Steps)
		if err := st.Plan.Validate(); err != nil {
			t.Fatalf("journal's plan is invalid: %v", err)
		}
		if len(st.Done) != n || st.Next < 0 || st.Next > n || st.LastCompleted >= n || st.LastCompleted < -1 {
			t.Fatalf("inconsistent state: %d steps, done %v, next %d, last completed %d", n, st.Done, st.Next, st.LastCompleted)
		}
		if st.Finished && st.Next != n {
			t.Fatalf("finished with step %d next of %d", st.Next, n)
		}
		s := st.Start()
		if s.From != st.Next {
			t.Fatalf("start from %d, next is %d", s.From, st.Next)
		}
		for i := range s.Outputs {
			if i < 0 || i >= s.From {
				t.Fatalf("resume gets outputs of step %d, starting at %d", i, s.From)
			}
		}
	})
}
