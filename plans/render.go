package plans

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// WriteText writes the plan for a person to review: a header, the inputs,
// then the numbered steps, each with what it expects before and intends
// after ("key: before → after"). Everything comes from the plan; no network.
// Step parameters are not shown; the JSON form of the plan has them.
//
// How Expect and Intend are shown, per key when both are objects:
//
//	key: a → b          expects a, leaves b
//	key: a              expects a and leaves it alone
//	key: (any) → b      leaves b whatever it finds
func (p *Plan) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Plan %s: %s, %d %s\n", p.ID, p.Kind, len(p.Steps), plural(len(p.Steps), "step", "steps"))
	if d, err := p.Digest(); err == nil {
		fmt.Fprintf(&b, "  digest   %s (format %d)\n", d, p.FormatVersion)
	}
	if !p.CreatedAt.IsZero() || p.CreatedBy != "" {
		fmt.Fprintf(&b, "  created  %s", p.CreatedAt.UTC().Format("2006-01-02 15:04:05 MST"))
		if p.CreatedBy != "" {
			fmt.Fprintf(&b, " by %s", p.CreatedBy)
		}
		b.WriteString("\n")
	}
	if in := nonNull(p.Inputs); in != nil {
		b.WriteString("  inputs\n")
		for _, l := range valueLines(in) {
			fmt.Fprintf(&b, "    %s\n", l)
		}
	}
	destructive := 0
	for _, s := range p.Steps {
		b.WriteString("\n")
		tag := s.Name
		if s.Destructive {
			tag += ", destructive"
			destructive++
		}
		if s.PointOfNoReturn {
			tag += ", point of no return"
		}
		fmt.Fprintf(&b, "%3d. %s  [%s]\n", s.Index+1, s.Title, tag)
		for _, l := range changeLines(s.Expect, s.Intend) {
			fmt.Fprintf(&b, "       %s\n", l)
		}
	}
	if destructive > 0 {
		fmt.Fprintf(&b, "\n%d of %d steps %s destructive.\n", destructive, len(p.Steps), plural(destructive, "is", "are"))
	}
	if i := p.PointOfNoReturn(); i >= 0 {
		fmt.Fprintf(&b, "From step %d (%s) on, the run can only be finished: drctl abort undoes it only before.\n", i+1, p.Steps[i].Name)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Text is WriteText into a string.
func (p *Plan) Text() string {
	var b strings.Builder
	_ = p.WriteText(&b) // a strings.Builder does not fail
	return b.String()
}

// changeLines renders a step's expected and intended values.
func changeLines(expect, intend json.RawMessage) []string {
	before, hasBefore := decodeLoose(expect)
	after, hasAfter := decodeLoose(intend)
	bm, bIsMap := before.(map[string]any)
	am, aIsMap := after.(map[string]any)
	if (bIsMap || !hasBefore) && (aIsMap || !hasAfter) && (hasBefore || hasAfter) {
		keys := map[string]bool{}
		for k := range bm {
			keys[k] = true
		}
		for k := range am {
			keys[k] = true
		}
		var lines []string
		for _, k := range sortedKeys(keys) {
			bv, bok := bm[k]
			av, aok := am[k]
			lines = append(lines, k+": "+change(bv, bok, av, aok))
		}
		return lines
	}
	if !hasBefore && !hasAfter {
		return nil
	}
	return []string{change(before, hasBefore, after, hasAfter)}
}

func change(before any, hasBefore bool, after any, hasAfter bool) string {
	switch {
	case hasBefore && hasAfter && formatValue(before) == formatValue(after):
		return formatValue(before)
	case hasBefore && hasAfter:
		return formatValue(before) + " → " + formatValue(after)
	case hasBefore:
		return formatValue(before)
	default:
		return "(any) → " + formatValue(after)
	}
}

// valueLines renders a value as "key: value" lines when it is an object.
func valueLines(raw json.RawMessage) []string {
	v, _ := decodeLoose(raw)
	m, ok := v.(map[string]any)
	if !ok {
		return []string{formatValue(v)}
	}
	var lines []string
	for _, k := range sortedMapKeys(m) {
		lines = append(lines, k+": "+formatValue(m[k]))
	}
	return lines
}

func decodeLoose(raw json.RawMessage) (any, bool) {
	if nonNull(raw) == nil {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "(invalid JSON)", true
	}
	return v, true
}

// formatValue shows strings bare (quoted when empty or padded), numbers as
// written, and everything else as canonical JSON.
func formatValue(v any) string {
	switch x := v.(type) {
	case string:
		if x == "" || strings.TrimSpace(x) != x || strings.ContainsAny(x, "\n\t") {
			return fmt.Sprintf("%q", x)
		}
		return x
	case json.Number:
		return x.String()
	case nil:
		return "null"
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func sortedKeys(set map[string]bool) []string {
	return slices.Sorted(maps.Keys(set))
}

func sortedMapKeys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
