package plans

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// FirstDifference compares two step lists, step by step: name, title,
// params, expected and intended values (as canonical JSON, so re-indenting
// a saved plan is no difference), the destructive mark and the point of
// no return (a plan without any mark, saved by an older drctl, is no
// difference). It returns the
// index of the first step that differs and what differs, in words, with
// got's value first.
func FirstDifference(got, want []Step) (index int, what string, differ bool) {
	for i := 0; i < max(len(got), len(want)); i++ {
		switch {
		case i >= len(got):
			return i, fmt.Sprintf("is missing (%s: %q)", want[i].Name, want[i].Title), true
		case i >= len(want):
			return i, fmt.Sprintf("is one drctl does not make (%s: %q)", got[i].Name, got[i].Title), true
		}
		g, w := got[i], want[i]
		if g.Name != w.Name {
			return i, fmt.Sprintf("is a %s step, drctl makes a %s step there", g.Name, w.Name), true
		}
		if g.Title != w.Title {
			return i, fmt.Sprintf("title is %q, drctl makes %q", g.Title, w.Title), true
		}
		if g.Destructive != w.Destructive {
			return i, fmt.Sprintf("destructive is %v, drctl makes %v", g.Destructive, w.Destructive), true
		}
		// A plan saved before steps carried the mark has none; its readers
		// place the point of no return by the step's name, as drctl does.
		if g.PointOfNoReturn && !w.PointOfNoReturn {
			return i, "is marked as the point of no return, drctl marks another step", true
		}
		for _, f := range []struct {
			what string
			a, b json.RawMessage
		}{{"params", g.Params, w.Params}, {"expect", g.Expect, w.Expect}, {"intend", g.Intend, w.Intend}} {
			if !sameJSON(f.a, f.b) {
				return i, fmt.Sprintf("%s are %s, drctl makes %s from the plan's inputs", f.what, compact(f.a), compact(f.b)), true
			}
		}
	}
	return 0, "", false
}

func sameJSON(a, b json.RawMessage) bool {
	a, b = nonNull(a), nonNull(b)
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	ca, err1 := canonicalJSON(a)
	cb, err2 := canonicalJSON(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

func compact(raw json.RawMessage) string {
	if nonNull(raw) == nil {
		return "none"
	}
	if c, err := canonicalJSON(raw); err == nil {
		return string(c)
	}
	return string(raw)
}
