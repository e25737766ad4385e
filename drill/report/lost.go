package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/linkstate"
)

// lossesIntro heads the reports' section on losses to source retention,
// with the command that acknowledges them as code.
func lossesIntro(code func(string) string) string {
	return "Records the source removed before the mirror copied them are in neither cluster; " +
		"a link keeps them on record until " + code("drctl mirror ack-lost") + ". Read from each link's state: by a canary drill " +
		"when it measured the RPO, for a role change when its run ended (an unplanned one: when the run reported its RPO)."
}

// linkLosses is what a drill found of one link's records lost to source
// retention: the ranges on record (none when Read and empty), or, not
// Read, why nothing is known of them. Never "none" unless read.
type linkLosses struct {
	// Name is the direction ("east → west (unplanned)") or, for a
	// canary drill, the link.
	Name, Link string
	Read       bool
	Why        string
	Records    int64
	Ranges     []linkstate.LostRange
}

// notRead says why a record holds nothing of a link's losses when it says
// neither that it read them nor why not.
const notRead = "the drill did not read the link's state (it stopped before it, or it ran before drills did)"

func newLinkLosses(name, link string, read bool, why string, records int64, ranges []linkstate.LostRange) linkLosses {
	l := linkLosses{Name: name, Link: link, Records: records, Ranges: ranges}
	switch {
	case read, records > 0, len(ranges) > 0: // older records kept losses without saying they read
		l.Read = true
	case why != "":
		l.Why = why
	default:
		l.Why = notRead
	}
	if l.Records == 0 {
		l.Records = linkstate.TotalLost(ranges)
	}
	return l
}

// lossesOf lists, per link, the records lost to source retention the drill
// found on record: for a canary drill its RPO's link, for a disruptive
// drill each role change's.
func lossesOf(r *drill.Record) []linkLosses {
	if r.Kind != "failover" && r.Kind != "unplanned" {
		link := r.Active + "->" + r.Standby
		if p := r.RPO; p != nil {
			return []linkLosses{newLinkLosses(p.Link, p.Link, p.LossesRead, p.LossesError, p.LostRecords, p.Losses)}
		}
		return []linkLosses{newLinkLosses(link, link, false, stopped, 0, nil)}
	}
	var out []linkLosses
	for _, d := range r.Directions {
		out = append(out, directionLosses(d))
	}
	if len(out) == 0 {
		link := r.Active + "->" + r.Standby
		out = append(out, newLinkLosses(link, link, false, stopped, 0, nil))
	}
	return out
}

func directionLosses(d drill.Direction) linkLosses {
	return newLinkLosses(directionName(d), d.From+"->"+d.To, d.LossesRead, d.LossesError, d.LostToRetention, d.Losses)
}

// check is l as a line of the measurements: the count and the first
// ranges, none on record, or not measured. It has no objective: a loss is
// evidence of the link's past, not a failure of the drill.
func (l linkLosses) check() check {
	name := "lost to source retention (" + l.Link + ")"
	if l.Name != l.Link {
		name = l.Name + ": lost to source retention"
	}
	if !l.Read {
		return notMeasured(name, l.Why)
	}
	return check{name, l.Summary(), "-", resultNoObjective, vals("lost_records", l.Records, "lost_ranges", len(l.Ranges))}
}

// Summary reads "none on record", or "15 records in 1 range(s), not
// acknowledged: orders/0 offsets 10-24 (15 records) found 2026-12-01
// 02:00:00 UTC" (the first three ranges); "" when not read.
func (l linkLosses) Summary() string {
	switch {
	case !l.Read:
		return ""
	case len(l.Ranges) == 0 && l.Records == 0:
		return "none on record"
	case len(l.Ranges) == 0:
		return n64(l.Records) + " records, not acknowledged (this record does not hold their ranges)"
	}
	shown := make([]string, 0, 4)
	for _, r := range l.Ranges[:min(3, len(l.Ranges))] {
		shown = append(shown, r.String()+" found "+lostAt(r.At))
	}
	if more := len(l.Ranges) - len(shown); more > 0 {
		shown = append(shown, fmt.Sprintf("and %d more range(s)", more))
	}
	return fmt.Sprintf("%s records in %d range(s), not acknowledged: %s", n64(l.Records), len(l.Ranges), strings.Join(shown, ", "))
}

// Label names the link in the section: the direction and its link, or the
// link alone.
func (l linkLosses) Label() string {
	if l.Name == l.Link {
		return l.Link
	}
	return l.Name + " (link " + l.Link + ")"
}

func lostAt(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// mdLosses writes the Markdown section: per link, its ranges as a table,
// none on record, or not measured and why.
func mdLosses(b *strings.Builder, ls []linkLosses) {
	b.WriteString("\n## Lost to source retention\n\n" + lossesIntro(func(s string) string { return "`" + s + "`" }) + "\n")
	for _, l := range ls {
		switch {
		case !l.Read:
			fmt.Fprintf(b, "\n**%s**: _not measured_: %s\n", mdEscape(l.Label()), mdEscape(l.Why))
		case len(l.Ranges) == 0:
			fmt.Fprintf(b, "\n**%s**: %s.\n", mdEscape(l.Label()), mdEscape(l.Summary()))
		default:
			fmt.Fprintf(b, "\n**%s**: %s records in %d range(s), not acknowledged.\n\n", mdEscape(l.Label()), n64(l.Records), len(l.Ranges))
			b.WriteString("| Topic | Partition | Offsets | Records | Found at |\n|---|---|---|---|---|\n")
			for _, r := range l.Ranges {
				fmt.Fprintf(b, "| %s | %d | %d-%d | %s | %s |\n", mdEscape(r.Topic), r.Partition, r.From, r.To, n64(r.Records), lostAt(r.At))
			}
		}
	}
}
