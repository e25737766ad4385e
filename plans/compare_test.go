package plans

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestFirstDifference(t *testing.T) {
	step := func(i int, name, title, params string) Step {
		return Step{Index: i, Name: name, Title: title, Params: json.RawMessage(params)}
	}
	base := []Step{step(0, "a", "A", `{"x":1,"y":[1,2]}`), step(1, "b", "B", `{"z":"q"}`)}
	cases := []struct {
		name  string
		got   []Step
		index int
		want  string // "" = no difference
	}{
		{"same", base, 0, ""},
		{"re-indented params", []Step{step(0, "a", "A", "{\n  \"y\": [1, 2],\n  \"x\": 1\n}"), base[1]}, 0, ""},
		{"params", []Step{base[0], step(1, "b", "B", `{"z":"r"}`)}, 1, `params are {"z":"r"}`},
		{"title", []Step{base[0], step(1, "b", "Bee", `{"z":"q"}`)}, 1, `title is "Bee"`},
		{"name", []Step{step(0, "c", "A", `{"x":1,"y":[1,2]}`), base[1]}, 0, "is a c step"},
		{"destructive", []Step{base[0], {Index: 1, Name: "b", Title: "B", Params: json.RawMessage(`{"z":"q"}`), Destructive: true}}, 1, "destructive is true"},
		{"missing", base[:1], 1, "is missing"},
		{"extra", append(append([]Step{}, base...), step(2, "c", "C", `{}`)), 2, "does not make"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			i, what, differ := FirstDifference(tc.got, base)
			if tc.want == "" {
				if differ {
					t.Fatalf("found a difference at %d: %s", i, what)
				}
				return
			}
			if !differ || i != tc.index || !strings.Contains(what, tc.want) {
				t.Fatalf("got (%d, %q, %v), want (%d, ...%q...)", i, what, differ, tc.index, tc.want)
			}
		})
	}
}
