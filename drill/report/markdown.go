package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/drctl/drctl/drill"
)

// Markdown writes the record as a Markdown document: header, verdict with
// reasons, measurements against objectives (those not measured last, apart
// from the passes), the Evidence section for an auditor, the records lost
// to source retention per link, the
// steps with timings, and the steps of each role change a disruptive drill
// ran.
func Markdown(w io.Writer, r *drill.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Drill %s: %s\n\n", r.ID, strings.ToUpper(string(r.Verdict)))
	if r.Next != "" {
		fmt.Fprintf(&b, "**Next:** `%s`%s\n\n", mdEscape(nextCommand(r.Next)), mdEscape(strings.TrimPrefix(r.Next, nextCommand(r.Next))))
	}
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	for _, kv := range [][2]string{
		{"Drill", fmt.Sprintf("%s (kind %s)", r.Drill, r.Kind)},
		{"Topology", fmt.Sprintf("%s (digest %s)", r.Topology, short(r.TopologyDigest))},
		{"Roles", fmt.Sprintf("active %s, standby %s", r.Active, r.Standby)},
		{"Run by", r.By},
		{"Started", r.StartedAt.UTC().Format(time.RFC3339)},
		{"Duration", r.Duration().Round(time.Millisecond).String()},
	} {
		fmt.Fprintf(&b, "| %s | %s |\n", kv[0], mdEscape(kv[1]))
	}
	cs := checks(r)
	b.WriteString("\n## Verdict\n\n")
	if len(r.Reasons) == 0 {
		b.WriteString("**pass**: " + passText(cs) + "\n")
	} else {
		fmt.Fprintf(&b, "**%s**:\n\n", r.Verdict)
		for _, s := range r.Reasons {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	b.WriteString("\n## Measurements\n\n| Check | Measured | Objective | Result |\n|---|---|---|---|\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", mdEscape(c.Name), mdEscape(c.Measured), mdEscape(c.Objective), resultText(c.Result))
	}
	if p := r.Preflight; p != nil && len(p.Problems) > 0 {
		b.WriteString("\nFailover preflight problems:\n\n")
		for _, pr := range p.Problems {
			fmt.Fprintf(&b, "- %s\n", pr)
		}
	}
	mdEvidence(&b, r, cs)
	mdLosses(&b, lossesOf(r))
	b.WriteString("\n## Steps\n\n")
	mdSteps(&b, r.Steps)
	for _, d := range r.Directions {
		if len(d.RunSteps) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n### %s: run %s\n\n", mdEscape(directionTitle(d)), d.RunID)
		mdSteps(&b, d.RunSteps)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdSteps(b *strings.Builder, steps []drill.Step) {
	b.WriteString("| # | Step | Started | Took | Status | Result |\n|---|---|---|---|---|---|\n")
	for i, s := range steps {
		res := s.Summary
		if s.Error != "" {
			res = s.Error
		}
		started := "-"
		if !s.StartedAt.IsZero() {
			started = s.StartedAt.UTC().Format("15:04:05.000")
		}
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s |\n", i+1, mdEscape(s.Title), started, dur(s.ElapsedMS), s.Status, mdEscape(res))
	}
}

func resultText(r result) string {
	switch r {
	case resultFail:
		return "**FAIL**"
	case resultNA, resultNotMeasured:
		return "_" + string(r) + "_"
	}
	return string(r)
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}

func short(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}

// nextCommand is the command at the head of a record's Next ("drctl resume
// X: why" gives "drctl resume X").
func nextCommand(next string) string {
	cmd, _, _ := strings.Cut(next, ":")
	return cmd
}
