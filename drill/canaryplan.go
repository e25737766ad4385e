package drill

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

// Step names of drill plans.
const (
	StepCanaryTopic       = "canary-topic"
	StepCanary            = "canary"
	StepGroupSync         = "group-sync"
	StepFailoverPreflight = "failover-preflight"
	StepRPO               = "rpo"
	StepRTO               = "rto-estimate"
)

// canaryParams are the parameters every canary step reads.
type canaryParams struct {
	Drill   string `json:"drill"`
	Active  string `json:"active"`
	Standby string `json:"standby"`
	Records int    `json:"records"`
	Rate    int    `json:"rate"`
	// WaitMS bounds the wait for the last canary record on the standby
	// and for the group's translated position.
	WaitMS      int64 `json:"wait_ms"`
	GroupWaitMS int64 `json:"group_wait_ms"`
}

// canaryWait is how long the standby is read after the last canary record
// was written: twice the latency objective, or 30 s without one.
func canaryWait(d *topology.NamedDrill) time.Duration {
	if o := d.Objectives.MaxCanaryLatency; o > 0 {
		return max(2*o, 3*time.Second)
	}
	return 30 * time.Second
}

// groupWait is how long the canary group's position is awaited on the
// standby: two sync intervals and some slack for a loaded machine.
func groupWait(topo *topology.Topology) time.Duration {
	return 2*topo.Mirror.GroupSyncInterval + 10*time.Second
}

// canaryPlan builds the canary drill: every step only reads, except that
// the canary topic, its records and the canary group's position are
// written on the active cluster.
func canaryPlan(clusters *kafkaconn.Clusters, d *topology.NamedDrill, id, active, standby, journalDir string) (*plans.Plan, *plans.Registry) {
	topo := clusters.Topology()
	p := plans.New(id, "drill-canary")
	cp := canaryParams{Drill: id, Active: active, Standby: standby, Records: d.Params.Records, Rate: d.Params.Rate,
		WaitMS: canaryWait(d).Milliseconds(), GroupWaitMS: groupWait(topo).Milliseconds()}
	_ = p.SetInputs(map[string]any{"topology": topo.Name, "topology_digest": topo.Digest, "drill": d.Name, "active": active, "standby": standby})
	for _, s := range []plans.StepSpec{
		{Name: StepCanaryTopic, Title: fmt.Sprintf("Ensure the canary topic %s on %s", topo.CanaryTopic(), active), Params: cp},
		{Name: StepCanary, Title: fmt.Sprintf("Write %d canary records on %s, read them on %s", cp.Records, active, standby), Params: cp},
		{Name: StepGroupSync, Title: fmt.Sprintf("Check the canary group's exact position on %s", standby), Params: cp},
		{Name: StepFailoverPreflight, Title: fmt.Sprintf("Plan a failover to %s and run its preflight (not executed)", standby), Params: cp},
		{Name: StepRPO, Title: fmt.Sprintf("Measure the RPO of %s->%s", active, standby), Params: cp},
		{Name: StepRTO, Title: "Estimate the RTO from the last disruptive drill", Params: cp},
	} {
		if err := p.Add(s); err != nil {
			panic(err) // encodable by construction
		}
	}
	return p, canaryRegistry(clusters, journalDir)
}

func canaryRegistry(clusters *kafkaconn.Clusters, journalDir string) *plans.Registry {
	topo := clusters.Topology()
	r := plans.NewRegistry()
	reg := func(name string, f func(ctx context.Context, cp canaryParams, rc *plans.RunContext) (plans.Result, error)) {
		_ = plans.NewStepType[canaryParams](name).Register(r, f)
	}
	reg(StepCanaryTopic, func(ctx context.Context, cp canaryParams, _ *plans.RunContext) (plans.Result, error) {
		return canaryTopicStep(ctx, clusters, cp)
	})
	reg(StepCanary, func(ctx context.Context, cp canaryParams, _ *plans.RunContext) (plans.Result, error) {
		out, err := runCanary(ctx, clusters, cp.Drill, cp.Active, cp.Standby,
			topology.DrillParams{Records: cp.Records, Rate: cp.Rate}, time.Duration(cp.WaitMS)*time.Millisecond)
		if err != nil {
			return plans.Result{}, err
		}
		c := out.Result
		return plans.NewResult(fmt.Sprintf("%d/%d read on %s, %d missing, %d duplicate(s); latency p50 %.0f ms, p99 %.0f ms, max %.0f ms",
			c.Received, c.Sent, c.Target, c.Missing, c.Duplicates, c.LatencyP50MS, c.LatencyP99MS, c.LatencyMaxMS), out)
	})
	reg(StepGroupSync, func(ctx context.Context, cp canaryParams, rc *plans.RunContext) (plans.Result, error) {
		var c canaryOutput
		if err := rc.OutputOf(StepCanary, &c); err != nil {
			return plans.Result{}, err
		}
		g, err := checkGroupSync(ctx, clusters, cp.Active, cp.Standby, &c, time.Duration(cp.GroupWaitMS)*time.Millisecond)
		if err != nil {
			return plans.Result{}, err
		}
		summary := fmt.Sprintf("exact: offset %d on %s after %d ms", g.StandbyOffset, cp.Standby, g.TookMS)
		switch {
		case g.Skip != "":
			summary = "skipped: " + g.Skip
		case !g.Exact:
			summary = fmt.Sprintf("NOT exact: offset %d on %s, want %d", g.StandbyOffset, cp.Standby, g.ExpectedOffset)
		}
		return plans.NewResult(summary, g)
	})
	reg(StepFailoverPreflight, func(ctx context.Context, cp canaryParams, _ *plans.RunContext) (plans.Result, error) {
		pf := failoverPreflight(ctx, clusters, cp.Standby)
		summary := "a failover to " + cp.Standby + " could start now"
		if !pf.Ready {
			summary = fmt.Sprintf("%d problem(s): %s", len(pf.Problems), strings.Join(pf.Problems, "; "))
		}
		return plans.NewResult(summary, pf)
	})
	reg(StepRPO, func(ctx context.Context, cp canaryParams, _ *plans.RunContext) (plans.Result, error) {
		link := topo.Link(cp.Active, cp.Standby)
		rep, err := linkstate.MeasureLag(ctx, clusters, link)
		if err != nil {
			return plans.Result{}, fmt.Errorf("lag of %s: %w", link, err)
		}
		rpo := RPO{Records: rep.TotalRecords, Seconds: round1(rep.MaxSeconds), Link: link.String(),
			LostRecords: rep.LostUnacknowledged, Losses: rep.Losses, LossesRead: rep.LossesError == "", LossesError: rep.LossesError}
		summary := fmt.Sprintf("%d record(s), %.1f s behind", rpo.Records, rpo.Seconds)
		switch {
		case !rpo.LossesRead:
			summary += "; losses to source retention not measured: " + rpo.LossesError
		case len(rpo.Losses) > 0:
			summary += fmt.Sprintf("; %d record(s) in %d range(s) lost to source retention, not acknowledged", rpo.LostRecords, len(rpo.Losses))
		}
		return plans.NewResult(summary, rpo)
	})
	reg(StepRTO, func(ctx context.Context, cp canaryParams, _ *plans.RunContext) (plans.Result, error) {
		rto := estimateRTO(ctx, clusters, journalDir)
		if rto.From == "" {
			return plans.NewResult("no disruptive drill has measured an RTO yet", rto)
		}
		return plans.NewResult(fmt.Sprintf("%.1f s (measured by %s)", rto.Seconds, rto.From), rto)
	})
	return r
}

// canaryTopicStep ensures the canary topic on the active cluster. When the
// standby does not have it yet (a first drill), it primes the path: one
// record, awaited on the standby, so that the drill measures replication
// and not the mirror discovering a new topic.
func canaryTopicStep(ctx context.Context, clusters *kafkaconn.Clusters, cp canaryParams) (plans.Result, error) {
	topo := clusters.Topology()
	c, err := need(ctx, clusters, cp.Active)
	if err != nil {
		return plans.Result{}, err
	}
	created, err := ensureCanaryTopic(ctx, c, topo)
	if err != nil {
		return plans.Result{}, fmt.Errorf("%s: %w", cp.Active, err)
	}
	primed, err := primeCanary(ctx, clusters, cp.Drill, cp.Active, cp.Standby, primeWait)
	if err != nil {
		return plans.Result{}, err
	}
	msg := "exists"
	if created {
		msg = fmt.Sprintf("created with retention %s", topo.Drills.CanaryRetention)
	}
	if primed > 0 {
		msg += fmt.Sprintf("; the mirror copied it to %s in %s", cp.Standby, primed.Round(time.Millisecond))
	}
	return plans.NewResult(msg, nil)
}

// primeWait bounds the wait for the mirror to copy a new canary topic.
const primeWait = 2 * time.Minute

// primeCanary returns 0 at once when standby has the canary topic;
// otherwise it writes one record on active and waits until standby holds
// it, returning how long that took.
func primeCanary(ctx context.Context, clusters *kafkaconn.Clusters, id, active, standby string, wait time.Duration) (time.Duration, error) {
	topo := clusters.Topology()
	dst, err := need(ctx, clusters, standby)
	if err != nil {
		return 0, err
	}
	topic := topo.CanaryTopic()
	if info, err := kafkaread.Topic(ctx, dst, topic); err == nil && info.Exists {
		return 0, nil
	}
	start := time.Now()
	p, err := canaryProducer(topo.Clusters[active])
	if err != nil {
		return 0, err
	}
	_, _, err = p.SendMessage(canaryMessage(topic, id+"-prime", 0, start))
	_ = p.Close()
	if err != nil {
		return 0, fmt.Errorf("prime %s on %s: %w", topic, active, err)
	}
	for {
		found := false
		_, _ = kafkaread.ReadCommitted(ctx, dst, topic, 0, 0, func(r kafkaread.Record) error {
			if _, ok := canarySeq(r, id+"-prime", 1); ok {
				found = true
			}
			return nil
		})
		if found {
			return time.Since(start), nil
		}
		if time.Since(start) > wait {
			return 0, fmt.Errorf("the mirror did not copy the canary topic %s to %s within %s: is drctl mirror run running?", topic, standby, wait)
		}
		if err := kafkaread.Sleep(ctx, 200*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

// failoverPreflight builds the planned failover to `to` and runs its
// preflight, then asks the readiness verdict that status and the TUI show
// (inspect.Assess); refusals, problems and a NOT READY or UNKNOWN verdict
// become the result's problems.
func failoverPreflight(ctx context.Context, clusters *kafkaconn.Clusters, to string) *PreflightResult {
	pf := &PreflightResult{To: to}
	p, err := failover.PlanFailover(ctx, clusters, failover.FailoverRequest{To: to})
	if err == nil {
		_, err = failover.Preflight(ctx, clusters, p)
	}
	st, _ := inspect.CollectStatus(ctx, clusters)
	v := st.Readiness
	pf.Readiness = &v
	if err != nil {
		pf.Problems = problemLines(err)
		return pf
	}
	if v.Level == inspect.NotReady || v.Level == inspect.Unknown {
		for _, r := range v.Reasons {
			pf.Problems = append(pf.Problems, fmt.Sprintf("ready to fail over? %s: %s", v.Level, r))
		}
		return pf
	}
	pf.Ready = true
	return pf
}

// problemLines splits failover's "N problem(s):\n  - a\n  - b" into lines.
func problemLines(err error) []string {
	var out []string
	for l := range strings.SplitSeq(err.Error(), "\n") {
		if s, ok := strings.CutPrefix(strings.TrimSpace(l), "- "); ok {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		out = []string{strings.TrimPrefix(err.Error(), failover.ErrRefused.Error()+": ")}
	}
	return out
}

// estimateRTO is the write RTO of the last disruptive drill in the history
// that measured one (the slower direction; a direction whose run failed
// measured none), or an empty estimate.
func estimateRTO(ctx context.Context, clusters *kafkaconn.Clusters, journalDir string) RTO {
	hist, err := History(ctx, clusters, HistoryOptions{JournalDir: journalDir})
	if err != nil && !errors.Is(err, kafkaconn.ErrUnreachable) {
		return RTO{Estimated: true}
	}
	for _, r := range hist { // newest first
		if worst, ok := r.MeasuredRTO(); ok {
			return RTO{Seconds: worst, From: r.ID, Estimated: true}
		}
	}
	return RTO{Estimated: true}
}
