package report

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/drctl/drctl/drill"
)

// Formats lists the formats Write knows.
var Formats = []string{"md", "json", "junit", "html"}

// Write renders r in format (md, json, junit or html).
func Write(w io.Writer, r *drill.Record, format string) error {
	switch format {
	case "md", "markdown":
		return Markdown(w, r)
	case "json":
		return JSON(w, r)
	case "junit":
		return JUnit(w, r)
	case "html":
		return HTML(w, r)
	}
	return fmt.Errorf("report format %q is not known; use md, json, junit or html", format)
}

// JSON writes the record as indented JSON (the stable schema of
// docs/drills.md).
func JSON(w io.Writer, r *drill.Record) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// check is one judged line of a report: what was measured, against what,
// and whether it passed.
type check struct {
	Name, Measured, Objective string
	OK                        bool
}

// checks lists the record's measurements as judged lines, in report order.
func checks(r *drill.Record) []check {
	var out []check
	if c := r.Canary; c != nil {
		out = append(out,
			check{"canary records replicated", fmt.Sprintf("%d of %d", c.Received, c.Sent), "all", c.Missing == 0},
			check{"canary duplicates", fmt.Sprint(c.Duplicates), "0", c.Duplicates == 0},
			check{"canary order", fmt.Sprintf("%d out of order", c.OutOfOrder), "0", c.OutOfOrder == 0})
		lat := check{"canary latency (p50 / p99 / max)", fmt.Sprintf("%s / %s / %s", ms(c.LatencyP50MS), ms(c.LatencyP99MS), ms(c.LatencyMaxMS)), "-", true}
		if o := r.Objectives.MaxCanaryLatencyMS; o > 0 {
			lat.Objective, lat.OK = "max ≤ "+ms(o), c.Missing == 0 && c.LatencyMaxMS <= o
		}
		out = append(out, lat)
	}
	if g := r.GroupSync; g != nil {
		if g.Skip != "" {
			out = append(out, check{"group sync (" + g.Group + ")", "not checked: " + g.Skip, "exact", true})
		} else {
			out = append(out, check{"group sync (" + g.Group + ")", fmt.Sprintf("offset %d, exact %d (%d re-read, %d skipped) in %s", g.StandbyOffset, g.ExpectedOffset, g.ReRead, g.Skipped, dur(g.TookMS)),
				"exact within " + dur(g.Interval) + " sync interval", g.Exact})
		}
	}
	if p := r.Preflight; p != nil {
		m := "ready"
		if !p.Ready {
			m = fmt.Sprintf("%d problem(s)", len(p.Problems))
		}
		out = append(out, check{"failover preflight to " + p.To, m, "ready", p.Ready})
	}
	if p := r.RPO; p != nil {
		c := check{"RPO (" + p.Link + ")", fmt.Sprintf("%.1f s, %d records", p.Seconds, p.Records), "-", true}
		if o := r.Objectives.RPOSeconds; o > 0 {
			c.Objective, c.OK = fmt.Sprintf("≤ %.0f s", o), p.Seconds <= o
		}
		out = append(out, c)
	}
	if p := r.RTO; p != nil {
		m := "no measurement yet"
		if p.From != "" {
			m = fmt.Sprintf("%.1f s (from %s)", p.Seconds, p.From)
		}
		c := check{"RTO estimate", m, "-", true}
		if o := r.Objectives.RTOSeconds; o > 0 {
			c.Objective, c.OK = fmt.Sprintf("≤ %.0f s", o), p.Seconds <= o
		}
		out = append(out, c)
	}
	for _, d := range r.Directions {
		name := d.From + " → " + d.To
		rto := check{name + ": RTO (writes / consuming)", fmt.Sprintf("%.1f s / %.1f s", d.RTOWriteSeconds, d.RTOConsumeSeconds), "-", d.Error == ""}
		if o := r.Objectives.RTOSeconds; o > 0 {
			rto.Objective, rto.OK = fmt.Sprintf("≤ %.0f s", o), d.Error == "" && d.RTOWriteSeconds <= o
		}
		out = append(out, rto,
			check{name + ": RPO", fmt.Sprintf("%d records", d.RPORecords), rpoObjective(r), r.Kind != "failover" || d.RPORecords == 0},
			check{name + ": canary lost / duplicated / re-read", fmt.Sprintf("%d / %d / %d", d.Lost, d.Duplicated, d.ReRead), "0 / 0 / 0", d.Lost == 0 && d.Duplicated == 0 && d.ReRead == 0},
			check{name + ": fence verified", fenceText(d), "refused writes", d.FenceVerified || d.FenceNote == ""})
	}
	return out
}

func rpoObjective(r *drill.Record) string {
	if r.Kind == "failover" {
		return "0 (planned)"
	}
	return "-"
}

func fenceText(d drill.Direction) string {
	switch {
	case d.FenceVerified:
		return "writes refused"
	case d.FenceNote != "":
		return d.FenceNote
	}
	return "no fence (fence: none)"
}

func ms(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.2f s", v/1000)
	}
	return fmt.Sprintf("%.0f ms", v)
}

func dur(msec int64) string { return (time.Duration(msec) * time.Millisecond).String() }
