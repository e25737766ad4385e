package drill

// The unplanned drill rehearses the loss of the active cluster without
// harming its brokers:
//
//  1. the canary application writes to and reads on the active;
//  2. the mirror's copying active -> standby is paused (a linkstate.Pause the
//     running daemons honour, scoped to the link and epoch, recorded with
//     the drill id, expiring on its own) while the canary goes on writing:
//     those records never reach the standby, as if the active were lost
//     with them;
//  3. the canary stops (the active is "gone"); once the mirror has seen the
//     active's last records, an unplanned failover runs as if the active
//     were down (it still answers, so the run fences it first, forced), and
//     its RPO report must count exactly the canary records that never
//     reached the standby; its reseed salvages the old active, and the
//     quarantine must hold exactly those records, record by record;
//  4. a hold, a planned failback and the canary's tally, as in the
//     failover drill.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/poll"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
	"github.com/drctl/drctl/topology"
)

// StepPauseMirror pauses the mirror's copying in an unplanned drill.
const StepPauseMirror = "pause-mirror"

type pauseParams struct {
	Source  string `json:"source"`
	Target  string `json:"target"`
	Records int    `json:"records"`
	Rate    int    `json:"rate"`
}

// PauseResult is what the pause step did.
type PauseResult struct {
	ID    string    `json:"id"`
	Link  string    `json:"link"`
	Epoch int64     `json:"epoch"`
	Until time.Time `json:"until"`
	// HeldAfterMS: until the mirror confirmed it copies nothing more.
	HeldAfterMS int64 `json:"held_after_ms"`
	// Written counts the canary records the active acknowledged since.
	Written int `json:"written"`
}

// pauseConfirmWait bounds the wait for the mirror to hold a pause and to
// observe the active's last records.
const pauseConfirmWait = time.Minute

// pauseTTL bounds a pause: the time to write the records, and ample room
// for the failover that follows; a drill that died leaves no longer pause.
func pauseTTL(p pauseParams) time.Duration {
	return time.Duration(p.Records)*time.Second/time.Duration(max(p.Rate, 1)) + 10*time.Minute
}

func (x *failoverDrill) registerUnplanned(r *plans.Registry) {
	_ = plans.NewStepType[pauseParams](StepPauseMirror).Register(r, func(ctx context.Context, pp pauseParams, _ *plans.RunContext) (plans.Result, error) {
		res, err := x.pauseMirror(ctx, pp)
		if err != nil {
			return plans.Result{}, err
		}
		return plans.NewResult(fmt.Sprintf("the mirror %s holds pause %s (after %d ms); %s acknowledged %d canary records meanwhile",
			res.Link, res.ID, res.HeldAfterMS, pp.Source, res.Written), res)
	})
	_ = plans.NewStepType[moveParams](StepUnplannedFailover).Register(r, func(ctx context.Context, mp moveParams, _ *plans.RunContext) (plans.Result, error) {
		dir, err := x.unplanned(ctx, mp)
		if err != nil {
			return plans.Result{}, err
		}
		return plans.NewResult(fmt.Sprintf("%s is active (run %s): RPO reported %d canary record(s) (%d over all topics, %.1f s); %d of the %d records %s held never reached %s (%d of the %d this drill wrote there), %d salvaged; writes accepted after %.3f s, the canary group consumed after %.3f s",
			mp.To, dir.RunID, dir.RPORecords, dir.RPOAllRecords, dir.RPOSeconds, dir.UnmirroredAll, dir.Held, mp.From, mp.To, dir.Unmirrored, dir.Written, dir.Salvaged, dir.RTOWriteSeconds, dir.RTOConsumeSeconds), dir)
	})
}

// pauseMirror pauses the link pp.Source -> pp.Target, waits until the
// mirror holds the pause (its observation of the canary partition says
// so), then until the canary wrote pp.Records more records on the active.
func (x *failoverDrill) pauseMirror(ctx context.Context, pp pauseParams) (*PauseResult, error) {
	x.before = x.probe(ctx, pp.Source) // before anything it writes is left behind
	roles, err := liveRoles(ctx, x.clusters)
	if err != nil {
		return nil, err
	}
	if roles.Active != pp.Source || roles.Standby != pp.Target {
		return nil, fmt.Errorf("the roles moved: %s is active, %s standby (the drill started with %s active)", roles.Active, roles.Standby, pp.Source)
	}
	link := x.topo.Link(pp.Source, pp.Target)
	now := time.Now().UTC()
	p := linkstate.Pause{Topology: x.topo.Name, Source: pp.Source, Target: pp.Target, Epoch: roles.Epoch, ID: x.id,
		Holder: plans.LocalActor(), At: now, Until: now.Add(pauseTTL(pp))}
	if err := withClients(ctx, x.clusters, func(cs map[string]sarama.Client) error { return linkstate.PutPause(ctx, cs, p) }); err != nil {
		return nil, err
	}
	x.mu.Lock()
	x.pause = &p
	x.mu.Unlock()
	dst, err := need(ctx, x.clusters, pp.Target)
	if err != nil {
		return nil, err
	}
	tp := topology.TopicPartition{Topic: x.topo.CanaryTopic(), Partition: 0}
	err = pollUntil(ctx, pauseConfirmWait, func() error {
		seen, err := linkstate.LastObserved(ctx, dst, link)
		if err != nil {
			return err
		}
		if seen[tp].Paused != x.id {
			return errors.New("no observation of the canary partition under the pause yet")
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("the mirror %s did not hold the pause within %s (is drctl mirror run running, at a version that honours pauses?): %w", link, pauseConfirmWait, err)
	}
	heldAfter := time.Since(now)
	from := x.app.nextSeq()
	wait := time.Duration(pp.Records)*time.Second/time.Duration(max(pp.Rate, 1))*3 + 30*time.Second
	deadline := time.Now().Add(wait)
	for x.app.nextSeq()-from < pp.Records {
		if time.Now().After(deadline) {
			x.app.mu.Lock()
			why := x.app.writeErr[pp.Source]
			x.app.mu.Unlock()
			return nil, fmt.Errorf("the canary wrote %d of %d records on %s within %s: %s", x.app.nextSeq()-from, pp.Records, pp.Source, wait, why)
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return nil, err
		}
	}
	return &PauseResult{ID: x.id, Link: link.String(), Epoch: p.Epoch, Until: p.Until, HeldAfterMS: heldAfter.Milliseconds(), Written: x.app.nextSeq() - from}, nil
}

// unplanned stops the canary on the old active (it is "lost"), waits until
// the mirror observed its last records (so the RPO counts them), runs the
// unplanned failover to mp.To, forced since mp.From answers (it is fenced
// first), and measures it: the RPO it reported against the canary records
// that never reached mp.To, and its salvage against those records.
func (x *failoverDrill) unplanned(ctx context.Context, mp moveParams) (_ *Direction, err error) {
	dir := &Direction{From: mp.From, To: mp.To, Unplanned: true}
	defer func() {
		if err != nil {
			x.keepFailed(dir, err)
		}
	}()
	x.app.stopWrites()
	x.app.pointRead("") // the application is lost with the active
	x.mu.Lock()
	x.starts = append(x.starts, x.app.nextSeq())
	x.mu.Unlock()
	if err := x.awaitObserved(ctx, mp.From, mp.To); err != nil {
		return nil, err
	}
	// What the old active holds, and where the salvage will append: the
	// evidence the run's RPO and salvage are checked against.
	held, err := x.canaryKeys(ctx, mp.From, x.topo.CanaryTopic())
	if err != nil {
		return nil, err
	}
	quarantineFrom, err := x.partitionEnd(ctx, mp.To, x.topo.SalvageTopic(x.topo.CanaryTopic()))
	if err != nil {
		return nil, err
	}
	p, err := x.planMove(ctx, mp, failover.FailoverRequest{To: mp.To, Mode: failover.Unplanned, ForceUnplanned: true}, "unplanned failover")
	if err != nil {
		return nil, err
	}
	dir.RunID = p.ID
	dir.Held = len(held)
	start := time.Now()
	var (
		fenceErr error
		probed   bool
		rpo      *inspect.RPOReport
	)
	steps := &runSteps{}
	defer func() { dir.RunSteps = steps.steps }()
	watch := &eventWatcher{on: func(e plans.Event) {
		steps.handle(e)
		switch {
		case e.Type == plans.EventStepDone && e.Name == failover.StepFenceActive:
			probed, fenceErr = true, x.probe(ctx, mp.From)
		case e.Type == plans.EventStepDone && e.Name == runrecord.StepFlip:
			x.app.pointWrite(mp.To)
		case e.Type == plans.EventStepDone && e.Name == runrecord.StepRPO:
			rpo = decode[inspect.RPOReport](e.Outputs)
		case e.Type == plans.EventStepDone && e.Name == failover.StepTranslateGroups:
			x.app.pointRead(mp.To)
		case e.Type == plans.EventStepStarted && e.Name == runrecord.StepWipe:
			x.proveCopied(ctx, dir) // the run waits: the old active is intact until its wipe
		}
	}}
	err = failover.Execute(ctx, x.clusters, p, failover.RunOptions{JSON: watch, JournalDir: x.journal, Interrupts: x.interrupts,
		Confirm: func(string) error { return nil }})
	// The roles moved (or the run stopped): the pause has done its work.
	_ = x.releasePause(context.WithoutCancel(ctx))
	// What the run reported is evidence even when a later step of it failed.
	if rpo != nil {
		dir.RPOReported, dir.RPOAllRecords, dir.RPOSeconds = true, rpo.Records, round1(rpo.MaxSeconds)
		for _, pr := range rpo.Partitions {
			if pr.Topic == x.topo.CanaryTopic() {
				dir.RPORecords += pr.Records
			}
		}
	}
	switch {
	case rpo == nil: // the run stopped before its RPO: read them as it left them
		x.readLosses(ctx, dir)
	case rpo.LostError != "":
		dir.LossesError = rpo.LostError
	default:
		dir.noteLosses(rpo.LostToRetention, nil)
	}
	dir.Written = x.app.ackedBy(mp.From)
	if err != nil {
		if skip := x.fenceSkip(dir.From); skip != "" || probed { // else it stopped before it fenced
			x.verifyFence(dir, x.before, probed, fenceErr)
		}
		if next, ok := plans.NextStep(err); ok && next > 0 {
			return nil, fmt.Errorf("unplanned failover run %s to %s: %w (drctl resume %s finishes it)", p.ID, mp.To, err, p.ID)
		}
		return nil, fmt.Errorf("unplanned failover run %s to %s: %w", p.ID, mp.To, err)
	}
	x.app.point(mp.To, mp.To)
	if err := x.awaitRTO(ctx, mp.To, start, dir); err != nil {
		return nil, err
	}
	x.verifyFence(dir, x.before, probed, fenceErr)
	if rpo == nil {
		return nil, fmt.Errorf("run %s reported no RPO", p.ID)
	}
	if err := x.checkSalvage(ctx, dir, held, quarantineFrom); err != nil {
		return nil, err
	}
	return dir, nil
}

// awaitObserved waits until the mirror from -> to has observed the end of
// the canary partition on from: what the RPO is computed from.
func (x *failoverDrill) awaitObserved(ctx context.Context, from, to string) error {
	src, err := need(ctx, x.clusters, from)
	if err != nil {
		return err
	}
	ends, err := kafkaread.PartitionEnds(ctx, src, x.topo.CanaryTopic(), 0)
	if err != nil {
		return fmt.Errorf("%s on %s: %w", x.topo.CanaryTopic(), from, err)
	}
	dst, err := need(ctx, x.clusters, to)
	if err != nil {
		return err
	}
	link := x.topo.Link(from, to)
	tp := topology.TopicPartition{Topic: x.topo.CanaryTopic(), Partition: 0}
	err = pollUntil(ctx, pauseConfirmWait, func() error {
		seen, err := linkstate.LastObserved(ctx, dst, link)
		if err != nil {
			return err
		}
		if o := seen[tp]; o.End < ends.Stable {
			return fmt.Errorf("observed end %d of %d", o.End, ends.Stable)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("the mirror %s did not observe the last canary records on %s within %s (the RPO would not count them): %w", link, from, pauseConfirmWait, err)
	}
	return nil
}

// keyedRecord is one record of a canary partition: its key and offset.
type keyedRecord struct {
	key    string
	offset int64
}

// canaryKeys reads partition 0 of topic on cluster from its start and
// returns its records' keys with their offsets (canary keys are unique:
// "<drill id>/<seq>").
func (x *failoverDrill) canaryKeys(ctx context.Context, cluster, topic string) ([]keyedRecord, error) {
	return x.readKeyed(ctx, cluster, topic, 0, func(r kafkaread.Record) int64 { return r.Offset })
}

func (x *failoverDrill) readKeyed(ctx context.Context, cluster, topic string, from int64, offsetOf func(kafkaread.Record) int64) ([]keyedRecord, error) {
	c, err := need(ctx, x.clusters, cluster)
	if err != nil {
		return nil, err
	}
	info, err := kafkaread.Topic(ctx, c, topic)
	if err != nil || !info.Exists {
		return nil, err
	}
	var out []keyedRecord
	if _, err := kafkaread.ReadCommitted(ctx, c, topic, 0, from, func(r kafkaread.Record) error {
		out = append(out, keyedRecord{key: string(r.Key), offset: offsetOf(r)})
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read %s on %s: %w", topic, cluster, err)
	}
	return out, nil
}

// partitionEnd is the last stable offset of partition 0 of topic on
// cluster (0 when the topic does not exist).
func (x *failoverDrill) partitionEnd(ctx context.Context, cluster, topic string) (int64, error) {
	c, err := need(ctx, x.clusters, cluster)
	if err != nil {
		return 0, err
	}
	if info, err := kafkaread.Topic(ctx, c, topic); err != nil || !info.Exists {
		return 0, err
	}
	ends, err := kafkaread.PartitionEnds(ctx, c, topic, 0)
	if err != nil {
		return 0, fmt.Errorf("%s on %s: %w", topic, cluster, err)
	}
	return ends.Stable, nil
}

// checkSalvage compares, record by record, the canary records the old
// active held before the failover that never reached the new active (this
// drill's, and any earlier drill's the mirror had not copied yet) with
// those the run's salvage appended to the quarantine on the new active
// (from quarantineFrom): the same records, each salvaged from the very
// offset the old active held it at, none twice.
func (x *failoverDrill) checkSalvage(ctx context.Context, dir *Direction, held []keyedRecord, quarantineFrom int64) error {
	topic := x.topo.CanaryTopic()
	onNew, err := x.canaryKeys(ctx, dir.To, topic)
	if err != nil {
		return err
	}
	reached := map[string]bool{}
	for _, r := range onNew {
		reached[r.key] = true
	}
	unmirrored := map[string]int64{}
	for _, r := range held {
		if !reached[r.key] {
			unmirrored[r.key] = r.offset
		}
	}
	salvaged, err := x.readKeyed(ctx, dir.To, x.topo.SalvageTopic(topic), quarantineFrom, salvagedOffset)
	if err != nil {
		return err
	}
	var missing, extra, wrongOffset, twice []string
	seen := map[string]bool{}
	kept := map[int]bool{}
	for _, r := range salvaged {
		off, ok := unmirrored[r.key]
		switch {
		case seen[r.key]:
			twice = append(twice, r.key)
		case !ok:
			extra = append(extra, r.key)
		case off != r.offset:
			wrongOffset = append(wrongOffset, r.key)
		}
		seen[r.key] = true
		if id, seq, ok := strings.Cut(r.key, "/"); ok && id == x.id {
			if n, err := strconv.Atoi(seq); err == nil {
				kept[n] = true
			}
		}
	}
	for key := range unmirrored {
		if !seen[key] {
			missing = append(missing, key)
		}
	}
	// This drill's own records among them: those written while the mirror
	// was paused, at least.
	x.app.mu.Lock()
	for seq, a := range x.app.acked {
		if a.Cluster == dir.From && !reached[fmt.Sprintf("%s/%d", x.id, seq)] {
			dir.Unmirrored++
		}
	}
	x.app.mu.Unlock()
	dir.UnmirroredAll, dir.Salvaged = len(unmirrored), len(salvaged)
	var why []string
	for _, m := range []struct {
		what string
		keys []string
	}{{"not salvaged", missing}, {"salvaged although they reached " + dir.To, extra},
		{"salvaged from another offset than " + dir.From + " held them at", wrongOffset}, {"salvaged twice", twice}} {
		if len(m.keys) > 0 {
			why = append(why, fmt.Sprintf("%d %s (%s)", len(m.keys), m.what, someKeys(m.keys)))
		}
	}
	dir.SalvageMismatch = strings.Join(why, "; ")
	x.mu.Lock()
	x.salvaged = kept
	x.mu.Unlock()
	return nil
}

// salvagedOffset is the offset a quarantined record had on the stale
// cluster (-1: unknown).
func salvagedOffset(r kafkaread.Record) int64 {
	for _, h := range r.Headers {
		if string(h.Key) == topology.HeaderSalvagedOffset && len(h.Value) == 8 {
			return int64(binary.BigEndian.Uint64(h.Value))
		}
	}
	return -1
}

func someKeys(keys []string) string {
	slices.Sort(keys)
	if len(keys) > 5 {
		return strings.Join(keys[:5], ", ") + fmt.Sprintf(", … (%d more)", len(keys)-5)
	}
	return strings.Join(keys, ", ")
}

// releasePause ends the pause this drill holds, if any (best effort: a
// pause also ends at its expiry and when the roles move).
func (x *failoverDrill) releasePause(ctx context.Context) error {
	x.mu.Lock()
	p := x.pause
	x.pause = nil
	x.mu.Unlock()
	if p == nil {
		return nil
	}
	rel := *p
	rel.Released, rel.At = true, time.Now().UTC()
	return withClients(ctx, x.clusters, func(cs map[string]sarama.Client) error { return linkstate.PutPause(ctx, cs, rel) })
}

// ReleasePauses ends every mirror pause of topo that still holds. Only a
// drill holds a pause, and only while it runs: the caller holds the
// running lease (the next drill) or cleans up after a stopped one (drctl
// resume). It returns the pauses it released.
func ReleasePauses(ctx context.Context, clusters *kafkaconn.Clusters) ([]linkstate.Pause, error) {
	topo := clusters.Topology()
	var released []linkstate.Pause
	err := withClients(ctx, clusters, func(cs map[string]sarama.Client) error {
		ps, err := linkstate.Pauses(ctx, cs, topo.Name)
		if err != nil {
			return err
		}
		now := time.Now().UTC()
		var errs []error
		for _, p := range ps {
			if p.Released || !now.Before(p.Until) {
				continue
			}
			rel := p
			rel.Released, rel.At = true, now
			if _, ok := cs[p.Target]; !ok {
				continue
			}
			if err := linkstate.PutPause(ctx, cs, rel); err != nil {
				errs = append(errs, err)
				continue
			}
			released = append(released, p)
		}
		return errors.Join(errs...)
	})
	return released, err
}

func pauseNames(ps []linkstate.Pause) string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s->%s by %s", p.Source, p.Target, p.ID))
	}
	return strings.Join(out, ", ")
}

// withClients calls f with the session's clients of the clusters that
// answer (those that failed before dialled again).
func withClients(ctx context.Context, clusters *kafkaconn.Clusters, f func(map[string]sarama.Client) error) error {
	clusters.Redial(ctx)
	cs := clusters.Clients()
	if len(cs) == 0 {
		var errs []error
		for _, err := range clusters.Errors() {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}
	return f(cs)
}

// pollUntil calls check every 100 ms until it returns nil, ctx ends, or
// wait passes (then its last error, marked as a timeout).
func pollUntil(ctx context.Context, wait time.Duration, check func() error) error {
	var last error
	err := poll.Until(ctx, poll.Wait{What: "the drill's condition", Within: wait}, func(context.Context) (bool, string, error) {
		last = check()
		return last == nil, "", nil
	})
	if errors.Is(err, poll.ErrTimeout) {
		return fmt.Errorf("timed out after %s: %w", wait, last)
	}
	return err
}
