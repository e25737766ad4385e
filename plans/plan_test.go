package plans

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPlanRoundTrip(t *testing.T) {
	p := testPlan(t)
	data, err := p.Encode()
	must(t, err)
	q, err := ParsePlan(data)
	must(t, err)

	if q.ID != p.ID || q.Kind != p.Kind || !q.CreatedAt.Equal(p.CreatedAt) || q.CreatedBy != p.CreatedBy || len(q.Steps) != len(p.Steps) {
		t.Fatalf("round trip changed the plan:\n%+v\n%+v", p, q)
	}
	for i := range p.Steps {
		a, b := p.Steps[i], q.Steps[i]
		if a.Index != b.Index || a.Name != b.Name || a.Title != b.Title || a.Destructive != b.Destructive {
			t.Errorf("step %d: %+v, want %+v", i, b, a)
		}
	}
	again, err := q.Encode()
	must(t, err)
	if !bytes.Equal(data, again) {
		t.Errorf("re-encoding is not byte-identical:\n%s\n%s", data, again)
	}
	d1, err := p.Digest()
	must(t, err)
	d2, err := q.Digest()
	must(t, err)
	if d1 != d2 {
		t.Errorf("digest changed over a round trip: %s -> %s", d1, d2)
	}
	var in struct {
		Topology string
		Epoch    int
	}
	must(t, q.DecodeInputs(&in))
	if in.Topology != "sha256:feed" || in.Epoch != 7 {
		t.Errorf("inputs = %+v", in)
	}
}

// TestDigestGolden pins the canonical form: changing it invalidates every
// saved plan and journal, so it must be a deliberate format change. The
// value was checked independently: Python's json.dumps(sort_keys=True,
// separators=(",", ":"), ensure_ascii=False) of the same view hashes alike.
func TestDigestGolden(t *testing.T) {
	d, err := testPlan(t).Digest()
	must(t, err)
	const want = "sha256:d63b9c988cfd15c9193c291460124f1bdbdfa5d932967ddd0d080c6c030bf5c2"
	if d != want {
		t.Errorf("digest = %s, want %s", d, want)
	}
}

func TestDigestStability(t *testing.T) {
	base, err := testPlan(t).Digest()
	must(t, err)
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	cases := []struct {
		name   string
		mutate func(p *Plan)
		same   bool
	}{
		{"another run id", func(p *Plan) { p.ID = "r2" }, true},
		{"another creation time", func(p *Plan) { p.CreatedAt = p.CreatedAt.Add(time.Hour) }, true},
		{"another author", func(p *Plan) { p.CreatedBy = "bob@laptop" }, true},
		{"params re-indented, keys reordered", func(p *Plan) {
			p.Inputs = raw("{\n  \"topology\" : \"sha256:feed\",\n  \"epoch\": 7 }")
		}, true},
		{"null params and absent params", func(p *Plan) { p.Steps[0].Params = raw("null") }, true},
		{"kind", func(p *Plan) { p.Kind = "failback" }, false},
		{"inputs epoch", func(p *Plan) { p.Inputs = raw(`{"epoch":8,"topology":"sha256:feed"}`) }, false},
		{"number written differently", func(p *Plan) { p.Inputs = raw(`{"epoch":7.0,"topology":"sha256:feed"}`) }, false},
		{"a param", func(p *Plan) { p.Steps[2].Params = raw(`{"cluster":"west"}`) }, false},
		{"a title", func(p *Plan) { p.Steps[2].Title = "Fence west" }, false},
		{"destructive", func(p *Plan) { p.Steps[0].Destructive = true }, false},
		{"intended value", func(p *Plan) { p.Steps[3].Intend = raw(`{"active":"west","epoch":9}`) }, false},
		{"step order", func(p *Plan) {
			p.Steps[0], p.Steps[1] = p.Steps[1], p.Steps[0]
			p.Steps[0].Index, p.Steps[1].Index = 0, 1
		}, false},
		{"a step less", func(p *Plan) { p.Steps = p.Steps[:3] }, false},
		{"format version", func(p *Plan) { p.FormatVersion = 2 }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := testPlan(t)
			c.mutate(p)
			d, err := p.Digest()
			must(t, err)
			if (d == base) != c.same {
				t.Errorf("digest %s, base %s: same = %v, want %v", d, base, d == base, c.same)
			}
		})
	}
}

func TestParsePlanRejects(t *testing.T) {
	good, err := testPlan(t).Encode()
	must(t, err)
	edit := func(from, to string) string {
		s := strings.Replace(string(good), from, to, 1)
		if s == string(good) {
			t.Fatalf("edit %q did not apply", from)
		}
		return s
	}
	cases := []struct {
		name, data, want string
	}{
		{"not JSON", "plan: yes", "not a plan"},
		{"no version", `{"id":"r1"}`, "no format_version"},
		{"newer format", edit(`"format_version": 1`, `"format_version": 2`), "plan format 2 is not supported"},
		{"unknown field", edit(`"kind": "failover"`, `"kind": "failover", "dry_run": true`), `unknown field "dry_run"`},
		{"unknown step field", edit(`"name": "check"`, `"name": "check", "retries": 3`), `unknown field "retries"`},
		{"index out of place", edit(`"index": 1`, `"index": 5`), "step 2 has index 5"},
		{"step without name", edit(`"name": "check"`, `"name": ""`), "step 1 has no name"},
		{"no id", edit(`"id": "r1"`, `"id": ""`), "no id"},
		{"trailing data", string(good) + "{}", "after top-level value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParsePlan([]byte(c.data))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestDecodeParamsRefusesUnknownFields(t *testing.T) {
	s := Step{Index: 2, Name: "fence", Params: json.RawMessage(`{"cluster":"east","force":true}`)}
	var p struct{ Cluster string }
	err := s.DecodeParams(&p)
	if err == nil || !strings.Contains(err.Error(), `step 3 (fence) params: json: unknown field "force"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestAddRefusesUnencodableValues(t *testing.T) {
	p := New("r1", "failover")
	err := p.Add(StepSpec{Name: "x", Title: "X", Params: map[string]any{"f": func() {}}})
	if err == nil || !strings.Contains(err.Error(), "step 1 (x) params") {
		t.Fatalf("err = %v", err)
	}
	if len(p.Steps) != 0 {
		t.Fatalf("a step was added anyway")
	}
}

func TestSaveLoadPlan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plan.json")
	p := testPlan(t)
	must(t, SavePlan(path, p))
	q, err := LoadPlan(path)
	must(t, err)
	d1, _ := p.Digest()
	d2, _ := q.Digest()
	if d1 != d2 {
		t.Fatalf("digest %s after save and load, want %s", d2, d1)
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	must(t, err)
	if len(entries) != 1 {
		t.Errorf("save left temporary files: %v", entries)
	}
	bad := &Plan{FormatVersion: FormatVersion, Kind: "failover"}
	if err := SavePlan(path, bad); err == nil {
		t.Error("an invalid plan was saved")
	}
	if _, err := LoadPlan(filepath.Join(t.TempDir(), "none.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("load of a missing file: %v", err)
	}
}

// TestPointOfNoReturn: a plan has at most one step marked as its point of
// no return; Add refuses a second, Validate a plan edited to hold two, and
// the text names the step.
func TestPointOfNoReturn(t *testing.T) {
	p := New("run-1", "failover")
	if got := p.PointOfNoReturn(); got != -1 {
		t.Fatalf("PointOfNoReturn of an empty plan = %d, want -1", got)
	}
	for _, s := range []StepSpec{{Name: "check", Title: "Check"}, {Name: "flip", Title: "Flip", PointOfNoReturn: true}, {Name: "wipe", Title: "Wipe", Destructive: true}} {
		if err := p.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.PointOfNoReturn(); got != 1 {
		t.Errorf("PointOfNoReturn = %d, want 1", got)
	}
	if err := p.Add(StepSpec{Name: "again", Title: "Again", PointOfNoReturn: true}); err == nil {
		t.Error("Add took a second point of no return")
	}
	if !strings.Contains(p.Text(), "From step 2 (flip) on, the run can only be finished") || !strings.Contains(p.Text(), "[flip, point of no return]") {
		t.Errorf("the plan's text does not name its point of no return:\n%s", p.Text())
	}
	p.Steps[2].PointOfNoReturn = true
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "second point of no return") {
		t.Errorf("Validate of a plan with two points of no return: %v", err)
	}
}

// TestFirstDifferenceOfThePointOfNoReturn: a saved plan without any mark
// (made before steps carried it) matches drctl's marked plan; one that
// marks another step does not.
func TestFirstDifferenceOfThePointOfNoReturn(t *testing.T) {
	want := []Step{{Index: 0, Name: "a", Title: "A"}, {Index: 1, Name: "b", Title: "B", PointOfNoReturn: true}}
	old := []Step{{Index: 0, Name: "a", Title: "A"}, {Index: 1, Name: "b", Title: "B"}}
	if i, what, differ := FirstDifference(old, want); differ {
		t.Errorf("an unmarked plan differs at step %d: %s", i+1, what)
	}
	moved := []Step{{Index: 0, Name: "a", Title: "A", PointOfNoReturn: true}, {Index: 1, Name: "b", Title: "B"}}
	if i, _, differ := FirstDifference(moved, want); !differ || i != 0 {
		t.Errorf("a plan marking another step: differ %v at %d, want a difference at step 1", differ, i+1)
	}
}
