package drill

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
	"github.com/drctl/drctl/topology"
)

// Step names of the disruptive drills.
const (
	StepFailover          = "drill-failover"
	StepHold              = "hold"
	StepFailback          = "drill-failback"
	StepSettle            = "canary-settle"
	StepUnplannedFailover = "drill-unplanned-failover"
)

type moveParams struct {
	From     string `json:"from"`
	To       string `json:"to"`
	Failback bool   `json:"failback,omitempty"`
}

type holdParams struct {
	Hold string `json:"hold"`
}

// failoverDrill is the state a failover drill's steps share: the canary
// application that follows the roles, and where each direction's records
// begin.
type failoverDrill struct {
	topo *topology.Topology
	// clusters is the drill's session, which its failover runs use too.
	clusters *kafkaconn.Clusters
	id       string
	journal  string
	// interrupts are the drill's, passed on to the failover runs it starts.
	interrupts *plans.Interrupts
	// noteRun records a run in the drill's started record before it runs.
	noteRun func(runID string) error
	app     *follower
	stop    context.CancelFunc
	done    chan struct{}

	mu     sync.Mutex
	starts []int // first sequence number of each direction

	// pause is the mirror pause this drill holds (nil: none); before is
	// the canary user's probe of the active before it (unplanned kind).
	pause  *linkstate.Pause
	before error
	// salvaged are the canary records the unplanned failover's salvage
	// holds: not lost.
	salvaged map[int]bool
	// failed are the directions whose step failed, with what they measured
	// before (a failed step has no outputs).
	failed []Direction
}

// keepFailed records what a failed direction measured, for the drill's
// record.
func (x *failoverDrill) keepFailed(dir *Direction, err error) {
	dir.RunError = err.Error()
	x.mu.Lock()
	defer x.mu.Unlock()
	x.failed = append(x.failed, *dir)
}

// Failed returns the directions whose step failed, with what they measured.
func (x *failoverDrill) Failed() []Direction {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]Direction(nil), x.failed...)
}

// failoverPlan builds the failover drill: a real planned failover from
// active to standby with the canary application writing and reading
// through it, a hold, a failback, and the tally of the canary. failed
// returns, after the run, the directions whose step failed.
func failoverPlan(clusters *kafkaconn.Clusters, d *topology.NamedDrill, id, active, standby string, o Options, noteRun func(runID string) error) (p *plans.Plan, r *plans.Registry, cleanup func(), failed func() []Direction) {
	topo := clusters.Topology()
	p = plans.New(id, "drill-failover")
	_ = p.SetInputs(map[string]any{"topology": topo.Name, "topology_digest": topo.Digest, "drill": d.Name, "active": active, "standby": standby})
	cp := canaryParams{Drill: id, Active: active, Standby: standby, Records: d.Params.Records, Rate: d.Params.Rate}
	steps := []plans.StepSpec{
		{Name: StepCanaryTopic, Title: fmt.Sprintf("Ensure the canary topic %s on %s; start the canary application", topo.CanaryTopic(), active), Params: cp},
		{Name: StepFailover, Title: fmt.Sprintf("Fail over to %s (a real planned failover)", standby), Destructive: true,
			Params: moveParams{From: active, To: standby, Failback: active != topo.Active}},
	}
	if d.Kind == topology.DrillUnplanned {
		steps = []plans.StepSpec{steps[0],
			{Name: StepPauseMirror, Title: fmt.Sprintf("Pause the mirror %s->%s while the canary writes %d records on %s", active, standby, d.Params.Records, active), Destructive: true,
				Params: pauseParams{Source: active, Target: standby, Records: d.Params.Records, Rate: d.Params.Rate}},
			{Name: StepUnplannedFailover, Title: fmt.Sprintf("Fail over to %s as if %s were lost (unplanned; %s is fenced, salvaged and re-seeded)", standby, active, active), Destructive: true,
				Params: moveParams{From: active, To: standby, Failback: active != topo.Active}},
		}
	}
	for _, s := range append(steps, []plans.StepSpec{
		{Name: StepHold, Title: fmt.Sprintf("Hold on %s for %s", standby, d.Params.Hold), Params: holdParams{Hold: d.Params.Hold.String()}},
		{Name: StepFailback, Title: fmt.Sprintf("Fail back to %s", active), Destructive: true,
			Params: moveParams{From: standby, To: active, Failback: active == topo.Active}},
		{Name: StepSettle, Title: "Stop the canary, let its group read everything, count lost, duplicated and re-read records", Params: cp},
	}...) {
		if err := p.Add(s); err != nil {
			panic(err)
		}
	}
	x := &failoverDrill{topo: topo, clusters: clusters, id: id, journal: o.journalDir(), interrupts: o.Interrupts, noteRun: noteRun, app: newFollower(topo, id, d.Params.Rate)}
	r = plans.NewRegistry()
	_ = plans.NewStepType[canaryParams](StepCanaryTopic).Register(r, func(ctx context.Context, cp canaryParams, _ *plans.RunContext) (plans.Result, error) {
		res, err := canaryTopicStep(ctx, clusters, cp)
		if err != nil {
			return res, err
		}
		x.start(cp.Active)
		return res, nil
	})
	move := func(ctx context.Context, mp moveParams, _ *plans.RunContext) (plans.Result, error) {
		dir, err := x.move(ctx, mp)
		if err != nil {
			return plans.Result{}, err
		}
		return plans.NewResult(fmt.Sprintf("%s is active: writes accepted after %.1f s, the canary group consumed after %.1f s (run %s)",
			mp.To, dir.RTOWriteSeconds, dir.RTOConsumeSeconds, dir.RunID), dir)
	}
	_ = plans.NewStepType[moveParams](StepFailover).Register(r, move)
	_ = plans.NewStepType[moveParams](StepFailback).Register(r, move)
	x.registerUnplanned(r)
	_ = plans.NewStepType[holdParams](StepHold).Register(r, func(ctx context.Context, hp holdParams, _ *plans.RunContext) (plans.Result, error) {
		d, err := time.ParseDuration(hp.Hold)
		if err != nil {
			return plans.Result{}, err
		}
		select {
		case <-ctx.Done():
			return plans.Result{}, ctx.Err()
		case <-time.After(d):
		}
		return plans.NewResult(fmt.Sprintf("held %s; the canary wrote and read throughout", d), nil)
	})
	_ = r.Register(StepSettle, plans.ActionFunc(func(ctx context.Context, s plans.Step, rc *plans.RunContext) (plans.Result, error) {
		dirs := x.settle(ctx, rc)
		return plans.NewResult(settleSummary(dirs), dirs)
	}))
	return p, r, func() {
		x.close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = x.releasePause(ctx)
	}, x.Failed
}

// start begins the canary application on cluster.
func (x *failoverDrill) start(cluster string) {
	if x.stop != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	x.stop, x.done = cancel, make(chan struct{})
	x.app.point(cluster, cluster)
	go func() { defer close(x.done); x.app.run(ctx) }()
}

func (x *failoverDrill) close() {
	if x.stop != nil {
		x.stop()
		<-x.done
		x.stop = nil
	}
}

// move runs one planned failover from mp.From to mp.To and measures it.
// The canary follows the run as an application redirected by the
// failover's hooks: its producer pauses when the old active is fenced and
// writes to the new active once the roles flip; its group stops reading
// when the drain starts (its position is what gets translated) and reads
// on the new active once the groups are translated.
func (x *failoverDrill) move(ctx context.Context, mp moveParams) (_ *Direction, err error) {
	dir := &Direction{From: mp.From, To: mp.To}
	defer func() {
		if err != nil {
			x.keepFailed(dir, err)
		}
	}()
	x.start(mp.From)
	x.mu.Lock()
	x.starts = append(x.starts, x.app.nextSeq())
	x.mu.Unlock()
	before := x.probe(ctx, mp.From)
	// The mirror follows the roles within its poll: right after a reseed
	// (the end of the run before) it restarts the link in steady mode,
	// and a planned failover's preflight needs it running. Wait a little
	// for it; if it does not come, the preflight says so.
	link := x.topo.Link(mp.From, mp.To)
	_ = pollUntil(ctx, 30*time.Second, func() error {
		if ls := linkstate.Describe(ctx, x.clusters, link); !ls.Running {
			return fmt.Errorf("no mirror process runs for %s", link)
		}
		return nil
	})
	p, err := x.planMove(ctx, mp, failover.FailoverRequest{To: mp.To}, "failover")
	if err != nil {
		return nil, err
	}
	dir.RunID = p.ID
	start := time.Now()
	var fenceErr error
	probed := false
	steps := &runSteps{}
	defer func() { dir.RunSteps = steps.steps }()
	watch := &eventWatcher{on: func(e plans.Event) {
		steps.handle(e)
		switch {
		case e.Type == plans.EventStepStarted && e.Name == failover.StepFenceActive:
			x.app.stopWrites()
		case e.Type == plans.EventStepDone && e.Name == failover.StepFenceActive:
			probed, fenceErr = true, x.probe(ctx, mp.From)
		case e.Type == plans.EventStepStarted && e.Name == failover.StepDrain:
			x.app.pointRead("")
		case e.Type == plans.EventStepDone && e.Name == runrecord.StepFlip:
			x.app.pointWrite(mp.To)
		case e.Type == plans.EventStepDone && e.Name == failover.StepTranslateGroups:
			x.app.pointRead(mp.To)
		case e.Type == plans.EventStepStarted && e.Name == runrecord.StepWipe:
			x.proveCopied(ctx, dir) // the run waits: the old active is intact until its wipe
		}
	}}
	err = failover.Execute(ctx, x.clusters, p, failover.RunOptions{JSON: watch, JournalDir: x.journal, Interrupts: x.interrupts,
		Confirm: func(string) error { x.app.stopWrites(); return nil }})
	// After the drain, whether the run finished or not: the losses found
	// while the mirror caught up are on record too.
	x.readLosses(ctx, dir)
	if err != nil {
		if skip := x.fenceSkip(dir.From); skip != "" || probed { // else it stopped before it fenced
			x.verifyFence(dir, before, probed, fenceErr)
		}
		if next, ok := plans.NextStep(err); ok && next > 0 {
			return nil, fmt.Errorf("failover run %s to %s: %w (drctl resume %s finishes it)", p.ID, mp.To, err, p.ID)
		}
		return nil, fmt.Errorf("failover run %s to %s: %w", p.ID, mp.To, err)
	}
	x.app.point(mp.To, mp.To)
	if err := x.awaitRTO(ctx, mp.To, start, dir); err != nil {
		return nil, err
	}
	x.verifyFence(dir, before, probed, fenceErr)
	return dir, nil
}

// readLosses notes on dir the records of its link lost to source
// retention that are on record now (on dir.To, until drctl mirror
// ack-lost), or why they could not be read.
func (x *failoverDrill) readLosses(ctx context.Context, dir *Direction) {
	c, err := need(ctx, x.clusters, dir.To)
	if err != nil {
		dir.noteLosses(nil, err)
		return
	}
	dir.noteLosses(linkstate.ReadLost(ctx, c, x.topo.Link(dir.From, dir.To)))
}

// planMove plans the run of one direction of a disruptive drill (req, made
// a failback when mp says so), records its id with the drill before it
// starts, and forgets the canary's first write and read on mp.To, which
// the run's RTO is measured by.
func (x *failoverDrill) planMove(ctx context.Context, mp moveParams, req failover.FailoverRequest, what string) (*plans.Plan, error) {
	if mp.Failback {
		req.Kind = rolestate.RunFailback
	}
	p, err := failover.PlanFailover(ctx, x.clusters, req)
	if err != nil {
		return nil, fmt.Errorf("plan the %s to %s: %w", what, mp.To, err)
	}
	if err := x.noteRun(p.ID); err != nil {
		return nil, fmt.Errorf("record run %s with the drill before it starts: %w", p.ID, err)
	}
	x.app.mu.Lock()
	delete(x.app.firstAck, mp.To)
	delete(x.app.firstRead, mp.To)
	x.app.mu.Unlock()
	return p, nil
}

// awaitRTO waits (a minute at most) until the new active accepted the
// canary's writes and its group consumed there, and sets dir's RTOs from
// start, or dir.Error.
func (x *failoverDrill) awaitRTO(ctx context.Context, to string, start time.Time, dir *Direction) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		x.app.mu.Lock()
		a, okA := x.app.firstAck[to]
		r, okR := x.app.firstRead[to]
		x.app.mu.Unlock()
		if okA && okR {
			// Milliseconds: on a fast pair the write RTO is well under 0.1 s.
			dir.RTOWriteSeconds, dir.RTOConsumeSeconds = roundMS(a.Sub(start)), roundMS(r.Sub(start))
			return nil
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	x.app.mu.Lock()
	defer x.app.mu.Unlock()
	dir.Error = fmt.Sprintf("the canary could not write to or read on %s within a minute of the failover: %s", to, x.app.writeErr[to])
	return nil
}

// verifyFence sets dir's fence verdict from the canary user's probes of
// the old active before the fence (before) and while fenced (probed,
// fenceErr).
func (x *failoverDrill) verifyFence(dir *Direction, before error, probed bool, fenceErr error) {
	switch skip := x.fenceSkip(dir.From); {
	case skip != "":
		// Nothing to verify in this setup, nothing claimed.
		dir.FenceSkip = skip
	case before != nil:
		dir.FenceNote = fmt.Sprintf("the canary user could not write to %s even before the fence (%v): grant it WRITE on %s", dir.From, before, x.topo.CanaryTopic())
	case !probed:
		dir.FenceNote = "the run did not fence " + dir.From
	case fenceErr == nil:
		dir.FenceNote = "the canary user's write to " + dir.From + " was accepted while it was fenced"
	case isRefused(fenceErr):
		dir.FenceVerified = true
	default:
		dir.FenceNote = fmt.Sprintf("the canary user's write to %s failed, but not as refused: %v", dir.From, fenceErr)
	}
}

// fenceSkip says why a drill has no fence of from to check in this
// topology ("" when it has one).
func (x *failoverDrill) fenceSkip(from string) string {
	switch {
	case x.topo.Failover.Fence == topology.FenceNone:
		return "fence: none: the run does not fence " + from
	case x.topo.Drills.CanaryUser == nil:
		return "no drills.canary_user to write to " + from + " as while it is fenced"
	}
	return ""
}

// probe writes one record as the canary user to the canary topic of
// cluster; nil means it was accepted (or there is no canary user).
func (x *failoverDrill) probe(ctx context.Context, cluster string) error {
	u := x.topo.Drills.CanaryUser
	if u == nil {
		return nil
	}
	c := *x.topo.Clusters[cluster]
	mech := "PLAIN"
	if c.SASL != nil {
		mech = c.SASL.Mechanism
	}
	c.SASL = &topology.SASL{Mechanism: mech, Username: u.Username, Password: u.Password}
	p, err := canaryProducer(&c)
	if err != nil {
		return err
	}
	defer p.Close()
	msg := canaryMessage(x.topo.CanaryTopic(), x.app.id+"-probe", 0, time.Now())
	_, _, err = p.SendMessage(msg)
	return err
}

// settle stops the producer, lets the group read everything on the final
// active, and completes each direction with its tally.
func (x *failoverDrill) settle(ctx context.Context, rc *plans.RunContext) []Direction {
	// Wait for the send in flight: a record acknowledged after the
	// group caught up would be counted lost.
	x.app.stopWrites()
	x.mu.Lock()
	kept := x.salvaged
	x.mu.Unlock()
	x.app.caughtUp(ctx, 2*time.Minute, kept)
	x.close()
	var dirs []Direction
	for _, name := range []string{StepFailover, StepUnplannedFailover, StepFailback} {
		var d Direction
		if rc.OutputOf(name, &d) == nil {
			dirs = append(dirs, d)
		}
	}
	x.mu.Lock()
	starts := append([]int(nil), x.starts...)
	x.mu.Unlock()
	end := x.app.nextSeq()
	for i := range dirs {
		if i >= len(starts) {
			break
		}
		hi := end
		if i+1 < len(starts) {
			hi = starts[i+1]
		}
		lo := 0
		if i > 0 {
			lo = starts[i]
		}
		dirs[i].Records, dirs[i].Tallied = x.app.ackedIn(lo, hi), true
		if dirs[i].Unplanned {
			// What never left the old active is in quarantine, not lost;
			// the run reported it (RPORecords).
			dirs[i].Lost, dirs[i].Duplicated, dirs[i].ReRead = x.app.tally(lo, hi, kept)
			continue
		}
		dirs[i].Lost, dirs[i].Duplicated, dirs[i].ReRead = x.app.tally(lo, hi, nil)
		dirs[i].RPORecords = int64(x.lostOn(lo, hi, dirs[i].From))
	}
	return dirs
}

// lostOn counts the lost records of [lo, hi) that cluster acknowledged: what
// the failover left behind on the old active.
func (x *failoverDrill) lostOn(lo, hi int, cluster string) int {
	x.app.mu.Lock()
	defer x.app.mu.Unlock()
	n := 0
	for seq := lo; seq < hi; seq++ {
		if a, ok := x.app.acked[seq]; ok && a.Cluster == cluster && len(x.app.reads[seq]) == 0 {
			n++
		}
	}
	return n
}

func settleSummary(dirs []Direction) string {
	var b bytes.Buffer
	for i, d := range dirs {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s->%s: %d lost, %d duplicated, %d re-read of %d canary records", d.From, d.To, d.Lost, d.Duplicated, d.ReRead, d.Records)
	}
	if len(dirs) == 0 {
		return "no direction completed"
	}
	return b.String()
}

// runSteps keeps a failover run's steps as they run, for the drill's record.
type runSteps struct{ steps []Step }

func (r *runSteps) handle(e plans.Event) {
	switch e.Type {
	case plans.EventRunStarted:
		if e.Plan != nil && r.steps == nil {
			for _, s := range e.Plan.Steps {
				r.steps = append(r.steps, Step{Name: s.Name, Title: s.Title, Status: "skipped"})
			}
		}
	case plans.EventStepStarted:
		if e.Index < len(r.steps) {
			r.steps[e.Index].StartedAt = e.Time.UTC()
		}
	case plans.EventStepDone:
		if e.Index < len(r.steps) {
			s := &r.steps[e.Index]
			s.Status, s.ElapsedMS, s.Summary = "done", e.ElapsedMS, e.Summary
		}
	case plans.EventStepFailed:
		if e.Index < len(r.steps) {
			s := &r.steps[e.Index]
			s.Status, s.ElapsedMS, s.Error = "failed", e.ElapsedMS, e.Error
		}
	}
}

// eventWatcher is the failover run's JSON stream, read as it is written:
// each event line is handed to on.
type eventWatcher struct {
	on  func(plans.Event)
	buf []byte
}

func (w *eventWatcher) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	consumed := 0
	for {
		i := bytes.IndexByte(w.buf[consumed:], '\n')
		if i < 0 {
			break
		}
		line := w.buf[consumed : consumed+i]
		consumed += i + 1
		var e plans.Event
		if json.Unmarshal(line, &e) == nil {
			w.on(e)
		}
	}
	w.buf = w.buf[consumed:]
	return len(p), nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// roundMS is d in seconds, to the millisecond.
func roundMS(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }
