package plans

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestWriteText(t *testing.T) {
	p := testPlan(t)
	d, _ := p.Digest()
	want := `Plan r1: failover, 4 steps
  digest   ` + d + ` (format 1)
  created  2026-11-30 08:59:00 UTC by alice@ops-1
  inputs
    epoch: 7
    topology: sha256:feed

  1. Check both clusters  [check]

  2. Drain the mirror  [drain]
       lag: 1200 → 0

  3. Fence east against writes  [fence, destructive]
       east: writable → denied

  4. Flip roles  [flip]
       active: east → west
       epoch: 7 → 8

1 of 4 steps is destructive.
`
	if got := p.Text(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestChangeLines(t *testing.T) {
	cases := []struct {
		name, expect, intend string
		want                 []string
	}{
		{"nothing", "", "", nil},
		{"scalar change", `"writable"`, `"denied"`, []string{"writable → denied"}},
		{"scalar kept", `3`, `3`, []string{"3"}},
		{"only intended", ``, `{"acl":"deny"}`, []string{"acl: (any) → deny"}},
		{"only expected", `{"lag":0}`, ``, []string{"lag: 0"}},
		{"keys on one side", `{"a":1,"b":2}`, `{"b":3,"c":4}`, []string{"a: 1", "b: 2 → 3", "c: (any) → 4"}},
		{"nested values as JSON", `{"acls":[]}`, `{"acls":["deny <orders>"]}`, []string{`acls: [] → ["deny <orders>"]`}},
		{"strings that need quotes", `""`, `" padded"`, []string{`"" → " padded"`}},
		{"big numbers as written", `{"offset":9007199254740993}`, `{"offset":9007199254740995}`, []string{"offset: 9007199254740993 → 9007199254740995"}},
		{"object to scalar", `{"a":1}`, `null`, []string{"a: 1"}},
		{"scalar to object", `1`, `{"a":1}`, []string{`1 → {"a":1}`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := changeLines(json.RawMessage(c.expect), json.RawMessage(c.intend))
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
