package drill

import (
	"fmt"
	"time"

	"github.com/drctl/drctl/topology"
)

// Judge sets r's verdict and reasons from its steps, measurements and
// objectives. The rules run in a fixed order, each adding one reason in
// plain words; no reason means pass. Judge is pure.
func Judge(r *Record) {
	var reasons []string
	add := func(format string, args ...any) { reasons = append(reasons, fmt.Sprintf(format, args...)) }
	for _, s := range r.Steps {
		switch s.Status {
		case "failed":
			add("step %s failed: %s", s.Name, s.Error)
		case "skipped":
			add("step %s did not run", s.Name)
		}
	}
	if c := r.Canary; c != nil {
		if c.Missing > 0 {
			add("%d of %d canary records not replicated to %s within %s", c.Missing, c.Sent, c.Target, time.Duration(c.WaitedMS)*time.Millisecond)
		}
		if c.Duplicates > 0 {
			add("%d duplicate canary records among the %d read on %s (want 0)", c.Duplicates, c.Received, c.Target)
		}
		if c.OutOfOrder > 0 {
			add("%d of %d canary records out of order on %s (want 0)", c.OutOfOrder, c.Received, c.Target)
		}
		if o := r.Objectives.MaxCanaryLatencyMS; o > 0 && c.Received > 0 && c.LatencyMaxMS > o {
			add("canary latency max %.0f ms exceeds the objective %.0f ms (p99 %.0f ms)", c.LatencyMaxMS, o, c.LatencyP99MS)
		}
	}
	if g := r.GroupSync; g != nil && g.Skip == "" && !g.Exact {
		switch {
		case g.StandbyOffset < 0:
			add("group %s has no position on the standby after %s (group sync every %s): is drctl mirror run running?", g.Group,
				time.Duration(g.TookMS)*time.Millisecond, time.Duration(g.Interval)*time.Millisecond)
		default:
			add("group %s on the standby is at offset %d, the exact position is %d (%d re-read, %d skipped)", g.Group, g.StandbyOffset, g.ExpectedOffset, g.ReRead, g.Skipped)
		}
	}
	if p := r.Preflight; p != nil && !p.Ready {
		for _, pr := range p.Problems {
			add("failover preflight to %s: %s", p.To, pr)
		}
	}
	if p := r.RPO; p != nil && r.Objectives.RPOSeconds > 0 && p.Seconds > r.Objectives.RPOSeconds {
		add("RPO %.1f s (%d records behind on %s) exceeds the objective %.0f s", p.Seconds, p.Records, p.Link, r.Objectives.RPOSeconds)
	}
	if p := r.RTO; p != nil && r.Objectives.RTOSeconds > 0 && p.Seconds > r.Objectives.RTOSeconds {
		what := "measured"
		if p.Estimated {
			what = "estimated"
		}
		add("RTO %s at %.1f s exceeds the objective %.0f s", what, p.Seconds, r.Objectives.RTOSeconds)
	}
	for _, d := range r.Directions {
		if d.Error != "" {
			add("%s -> %s: %s", d.From, d.To, d.Error)
		}
		if d.Lost > 0 {
			add("%s -> %s: %d of %d canary records lost", d.From, d.To, d.Lost, d.Records)
		}
		if d.Duplicated > 0 {
			add("%s -> %s: %d of %d canary records duplicated", d.From, d.To, d.Duplicated, d.Records)
		}
		if d.ReRead > 0 {
			add("%s -> %s: the canary group re-read %d of %d records", d.From, d.To, d.ReRead, d.Records)
		}
		if p := d.Proof; p != nil && p.Differing > 0 {
			add("%s -> %s: the canary topic on %s differs from what %s holds: %d difference(s) on %d of %d partition(s)", d.From, d.To, d.To, d.From, p.Differences, p.Differing, p.Partitions)
		}
		if d.FenceNote != "" && !d.FenceVerified {
			add("%s -> %s: fence not verified: %s", d.From, d.To, d.FenceNote)
		}
		if o := r.Objectives.RTOSeconds; o > 0 && d.RTOWriteSeconds > o {
			add("%s -> %s: RTO %.1f s exceeds the objective %.0f s", d.From, d.To, d.RTOWriteSeconds, o)
		}
		if d.RPORecords > 0 && !d.Unplanned && r.Kind != string(topology.DrillCanary) {
			add("%s -> %s: the planned failover left %d of %d canary records behind on %s (its RPO must be 0)", d.From, d.To, d.RPORecords, d.Records, d.From)
		}
		// A direction whose run failed has its step's failure as the
		// reason; what it would have measured after is not judged.
		if d.Unplanned && d.Error == "" && d.RunError == "" {
			switch {
			case d.Unmirrored == 0:
				add("%s -> %s: no canary record was left behind on %s: the mirror's pause did not hold, nothing was rehearsed", d.From, d.To, d.From)
			case d.RPORecords != int64(d.UnmirroredAll):
				add("%s -> %s: the run reported an RPO of %d canary records, but %d never reached %s", d.From, d.To, d.RPORecords, d.UnmirroredAll, d.To)
			}
			if d.SalvageMismatch != "" {
				add("%s -> %s: the salvage does not hold exactly the %d canary records that never reached %s: %s", d.From, d.To, d.UnmirroredAll, d.To, d.SalvageMismatch)
			}
		}
	}
	r.Reasons = reasons
	if r.Reasons == nil {
		r.Reasons = []string{}
	}
	r.Verdict = Pass
	if len(reasons) > 0 {
		r.Verdict = Fail
	}
}
