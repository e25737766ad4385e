package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
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

// JSON writes the record's canonical JSON (the stable schema of
// docs/drills.md): the very bytes the drill recorded, which its digest and
// signature cover.
func JSON(w io.Writer, r *drill.Record) error {
	raw, err := r.CanonicalJSON()
	if err != nil {
		return err
	}
	_, err = w.Write(raw)
	return err
}

// result is how a check came out. A check that did not happen is never
// "ok": it is n/a (there is nothing to check in this setup, as with
// fence: none) or not measured (the drill did not get to it); a figure
// measured against no objective says so.
type result string

const (
	resultOK          result = "ok"
	resultFail        result = "FAIL"
	resultNoObjective result = "no objective"
	resultNA          result = "n/a"
	resultNotMeasured result = "not measured"
)

// Measured is whether the check has a measurement (it passed, failed, or
// was measured against no objective).
func (r result) Measured() bool { return r != resultNA && r != resultNotMeasured }

// passed is whether the check is no failure.
func (r result) passed() bool { return r != resultFail }

func judged(ok bool) result {
	if ok {
		return resultOK
	}
	return resultFail
}

// check is one line of a report: what was measured, against what, and how
// it came out; Values are its figures by name (JUnit properties).
type check struct {
	Name, Measured, Objective string
	Result                    result
	Values                    []value
}

type value struct{ Name, Value string }

func vals(kv ...any) []value {
	var out []value
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, value{fmt.Sprint(kv[i]), fmt.Sprint(kv[i+1])})
	}
	return out
}

// notMeasured is a check the drill should have made and did not.
func notMeasured(name, why string) check {
	return check{Name: name, Measured: why, Objective: "-", Result: resultNotMeasured}
}

// stopped says why a measurement of a later step is missing.
const stopped = "the drill stopped before it (see the steps)"

// checks lists the record's measurements as judged lines, in report order:
// the measured ones first, then those n/a or not measured, apart.
func checks(r *drill.Record) []check {
	var out []check
	disruptive := r.Kind == "failover" || r.Kind == "unplanned"
	if c := r.Canary; c != nil {
		out = append(out,
			check{"canary records replicated", fmt.Sprintf("%s of %s read on %s", n(c.Received), n(c.Sent), c.Target), "all", judged(c.Missing == 0),
				vals("sent", c.Sent, "received", c.Received, "missing", c.Missing, "waited_ms", c.WaitedMS)},
			check{"canary duplicates", fmt.Sprintf("%s among the %s read", n(c.Duplicates), n(c.Received)), "0", judged(c.Duplicates == 0),
				vals("duplicates", c.Duplicates, "received", c.Received)},
			check{"canary order", fmt.Sprintf("%s of %s read out of order", n(c.OutOfOrder), n(c.Received)), "0", judged(c.OutOfOrder == 0),
				vals("out_of_order", c.OutOfOrder, "received", c.Received)})
		const latName = "canary latency (p50 / p99 / max)"
		if c.Received == 0 {
			out = append(out, notMeasured(latName, "no canary record was read on "+c.Target))
		} else {
			lat := check{latName, fmt.Sprintf("%s / %s / %s", ms(c.LatencyP50MS), ms(c.LatencyP99MS), ms(c.LatencyMaxMS)), "-", resultNoObjective,
				vals("latency_p50_ms", c.LatencyP50MS, "latency_p99_ms", c.LatencyP99MS, "latency_max_ms", c.LatencyMaxMS)}
			if o := r.Objectives.MaxCanaryLatencyMS; o > 0 {
				lat.Objective, lat.Result = "max ≤ "+ms(o), judged(c.Missing == 0 && c.LatencyMaxMS <= o)
			}
			out = append(out, lat)
		}
	} else if !disruptive {
		out = append(out, notMeasured("canary records replicated", stopped))
	}
	if g := r.GroupSync; g != nil {
		name := "group sync (" + g.Group + ")"
		if g.Skip != "" {
			out = append(out, notMeasured(name, g.Skip))
		} else {
			of := ""
			if r.Canary != nil {
				of = " of " + n(r.Canary.Sent) + " canary records"
			}
			out = append(out, check{name, fmt.Sprintf("offset %d, exact %d (%s re-read, %s skipped%s) in %s", g.StandbyOffset, g.ExpectedOffset, n(g.ReRead), n(g.Skipped), of, dur(g.TookMS)),
				"exact within " + dur(g.Interval) + " sync interval", judged(g.Exact),
				vals("standby_offset", g.StandbyOffset, "expected_offset", g.ExpectedOffset, "re_read", g.ReRead, "skipped", g.Skipped, "took_ms", g.TookMS)})
		}
	} else if !disruptive {
		out = append(out, notMeasured("group sync", stopped))
	}
	if p := r.Preflight; p != nil {
		m := "ready"
		if !p.Ready {
			m = fmt.Sprintf("%d problem(s)", len(p.Problems))
		}
		out = append(out, check{"failover preflight to " + p.To, m, "ready", judged(p.Ready), vals("problems", len(p.Problems))})
	} else if !disruptive {
		out = append(out, notMeasured("failover preflight", stopped))
	}
	if p := r.RPO; p != nil {
		c := check{"RPO (" + p.Link + ")", fmt.Sprintf("%.1f s, %s records behind", p.Seconds, n64(p.Records)), "-", resultNoObjective,
			vals("rpo_seconds", p.Seconds, "rpo_records", p.Records)}
		if o := r.Objectives.RPOSeconds; o > 0 {
			c.Objective, c.Result = fmt.Sprintf("≤ %.0f s", o), judged(p.Seconds <= o)
		}
		out = append(out, c)
	} else if r.Kind != "failover" {
		out = append(out, notMeasured("RPO", stopped))
	}
	if !disruptive || len(r.Directions) == 0 { // else each role change has its own
		for _, l := range lossesOf(r) {
			out = append(out, l.check())
		}
	}
	if p := r.RTO; p != nil {
		if p.From == "" {
			out = append(out, notMeasured("RTO estimate", "no disruptive drill has measured an RTO yet"))
		} else {
			c := check{"RTO estimate", fmt.Sprintf("%.1f s (measured by %s)", p.Seconds, p.From), "-", resultNoObjective, vals("rto_seconds", p.Seconds, "from", p.From)}
			if o := r.Objectives.RTOSeconds; o > 0 {
				c.Objective, c.Result = fmt.Sprintf("≤ %.0f s", o), judged(p.Seconds <= o)
			}
			out = append(out, c)
		}
	} else if !disruptive {
		out = append(out, notMeasured("RTO estimate", stopped))
	}
	for _, d := range r.Directions {
		out = append(out, directionChecks(r, d)...)
	}
	if disruptive && len(r.Directions) == 0 {
		out = append(out, notMeasured("role change to "+r.Standby, stopped))
	}
	slices.SortStableFunc(out, func(a, b check) int {
		switch {
		case a.Result.Measured() == b.Result.Measured():
			return 0
		case a.Result.Measured():
			return -1
		}
		return 1
	})
	return out
}

// directionChecks are the checks of one role change of a disruptive drill.
func directionChecks(r *drill.Record, d drill.Direction) []check {
	name := directionName(d)
	var out []check
	if d.RunError != "" {
		out = append(out, check{name + ": role change", "failed: " + d.RunError, "done", resultFail, vals("run_id", d.RunID)})
	}
	const tallyStopped = "the drill stopped before the canary's tally"
	switch {
	case d.RunError != "":
		out = append(out, notMeasured(name+": RTO", "the run did not finish"))
	case d.Error != "":
		out = append(out, check{name + ": RTO (writes / consuming)", d.Error, rtoObjective(r), resultFail, nil})
	default:
		rto := check{name + ": RTO (writes / consuming)", fmt.Sprintf("%.1f s / %.1f s", d.RTOWriteSeconds, d.RTOConsumeSeconds), "-", resultNoObjective,
			vals("rto_write_seconds", d.RTOWriteSeconds, "rto_consume_seconds", d.RTOConsumeSeconds, "run_id", d.RunID)}
		if o := r.Objectives.RTOSeconds; o > 0 {
			rto.Objective, rto.Result = rtoObjective(r), judged(d.RTOWriteSeconds <= o)
		}
		out = append(out, rto)
	}
	switch {
	case d.Unplanned && d.RPOReported:
		c := check{name + ": RPO the run reported", fmt.Sprintf("%s canary records (%s over all topics, %.1f s)", n64(d.RPORecords), n64(d.RPOAllRecords), d.RPOSeconds),
			"-", resultNoObjective, vals("rpo_records", d.RPORecords, "rpo_all_records", d.RPOAllRecords, "rpo_seconds", d.RPOSeconds)}
		if d.RunError == "" {
			c.Objective = fmt.Sprintf("= the %s records that never reached %s", n(d.UnmirroredAll), d.To)
			c.Result = judged(d.RPORecords == int64(d.UnmirroredAll) && d.Unmirrored > 0)
		}
		out = append(out, c)
		if d.RunError != "" {
			out = append(out, notMeasured(name+": salvage", "the run did not finish"))
		} else {
			out = append(out, check{name + ": salvage",
				fmt.Sprintf("%s of the %s records %s held never reached %s (%s of the %s this drill wrote there); %s salvaged", n(d.UnmirroredAll), n(d.Held), d.From, d.To, n(d.Unmirrored), n(d.Written), n(d.Salvaged)),
				"exactly those salvaged", judged(d.SalvageMismatch == "" && d.Unmirrored > 0),
				vals("unmirrored_all", d.UnmirroredAll, "held", d.Held, "unmirrored", d.Unmirrored, "written", d.Written, "salvaged", d.Salvaged)})
		}
	case d.Unplanned:
		out = append(out, notMeasured(name+": RPO the run reported", "the run stopped before it reported its RPO"))
	case d.Tallied:
		out = append(out, check{name + ": RPO", fmt.Sprintf("%s of %s canary records left behind on %s", n64(d.RPORecords), n(d.Records), d.From), rpoObjective(r),
			judged(r.Kind != "failover" || d.RPORecords == 0), vals("rpo_records", d.RPORecords, "records", d.Records)})
	default:
		out = append(out, notMeasured(name+": RPO", tallyStopped))
	}
	if d.Tallied {
		out = append(out, check{name + ": canary lost / duplicated / re-read",
			fmt.Sprintf("%s / %s / %s of %s canary records", n(d.Lost), n(d.Duplicated), n(d.ReRead), n(d.Records)), "0 / 0 / 0",
			judged(d.Lost == 0 && d.Duplicated == 0 && d.ReRead == 0), vals("lost", d.Lost, "duplicated", d.Duplicated, "re_read", d.ReRead, "records", d.Records)})
	} else {
		out = append(out, notMeasured(name+": canary lost / duplicated / re-read", tallyStopped))
	}
	if p := d.Proof; p != nil {
		out = append(out, proofCheck(name, d, p))
	}
	fence := name + ": fence verified"
	switch {
	case d.FenceVerified:
		out = append(out, check{fence, "the canary user's write to " + d.From + " was refused", "refused writes", resultOK, nil})
	case d.FenceNote != "":
		out = append(out, check{fence, d.FenceNote, "refused writes", resultFail, nil})
	case d.FenceSkip != "":
		out = append(out, check{fence, d.FenceSkip, "-", resultNA, nil})
	case d.RunError != "":
		out = append(out, notMeasured(fence, "the run stopped before the fence was checked"))
	default: // a record from before fence_skip
		out = append(out, check{fence, "not checked (fence: none, or no drills.canary_user)", "-", resultNA, nil})
	}
	return append(out, directionLosses(d).check())
}

// proofCheck is the record-by-record proof of a planned role change: the
// canary topic on the new active identical to what the link copied of it.
func proofCheck(name string, d drill.Direction, p *drill.Proof) check {
	name += ": canary topic proven identical"
	if p.Error != "" {
		return notMeasured(name, "the comparison could not run: "+p.Error)
	}
	of := fmt.Sprintf("%s of %s partition(s) identical, %s of %s records compared", n(p.Identical), n(p.Partitions), n64(p.Compared), n64(p.SourceRecords))
	v := vals("partitions", p.Partitions, "identical", p.Identical, "differing", p.Differing, "not_verified", p.NotVerified,
		"source_records", p.SourceRecords, "compared", p.Compared, "differences", p.Differences)
	switch {
	case p.Differing > 0:
		return check{name, fmt.Sprintf("%s: %s difference(s): %s", of, n64(p.Differences), strings.Join(p.Reasons[:min(3, len(p.Reasons))], "; ")), "identical", resultFail, v}
	case p.NotVerified > 0 || p.Partitions == 0:
		return notMeasured(name, fmt.Sprintf("%s; %s", of, strings.Join(p.Reasons, "; ")))
	}
	var ranges []string
	for _, r := range p.Ranges[:min(3, len(p.Ranges))] {
		ranges = append(ranges, fmt.Sprintf("%s %s/%d [%s, %s) = %s [%s, %s)", d.From, p.Topic, r.Partition, n64(r.SourceFrom), n64(r.SourceTo), d.To, n64(r.TargetFrom), n64(r.TargetTo)))
	}
	m := fmt.Sprintf("%s: %s (the canary topic, compared after the flip, before the wipe)", of, strings.Join(ranges, ", "))
	if len(p.Notes) > 0 {
		m += "; " + strings.Join(p.Notes[:min(3, len(p.Notes))], "; ")
	}
	return check{name, m, "identical", resultOK, v}
}

// directionName names a role change in its checks ("east → west",
// "east → west (unplanned)").
func directionName(d drill.Direction) string {
	if d.Unplanned {
		return d.From + " → " + d.To + " (unplanned)"
	}
	return d.From + " → " + d.To
}

func rtoObjective(r *drill.Record) string {
	if o := r.Objectives.RTOSeconds; o > 0 {
		return fmt.Sprintf("≤ %.0f s", o)
	}
	return "-"
}

func rpoObjective(r *drill.Record) string {
	if r.Kind == "failover" {
		return "0 (planned)"
	}
	return "-"
}

// n writes a count with thousands separators (1,240).
func n(v int) string { return n64(int64(v)) }

func n64(v int64) string {
	s := strconv.FormatInt(v, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func ms(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.2f s", v/1000)
	}
	return fmt.Sprintf("%.0f ms", v)
}

func dur(msec int64) string { return (time.Duration(msec) * time.Millisecond).String() }

// passText is the verdict of a passed drill: every check that ran met its
// objective, and how many did not run.
func passText(cs []check) string {
	missing := 0
	for _, c := range cs {
		if !c.Result.Measured() {
			missing++
		}
	}
	if missing == 0 {
		return "every check met its objective."
	}
	return fmt.Sprintf("every check that was measured met its objective; %d not measured or not applicable (listed last).", missing)
}

// directionTitle names a role change of a disruptive drill.
func directionTitle(d drill.Direction) string {
	t := d.From + " → " + d.To
	if d.Unplanned {
		return "Unplanned failover " + t
	}
	return "Role change " + t
}
