package failover

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/aclfence"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/poll"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/mirror/groupsync"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

// ErrDrainTimeout means the mirror did not drain in time; the run rolled
// the fence and the roles back.
var ErrDrainTimeout = errors.New("drain timed out")

// Confirm asks the operator a question (fence mode none); nil error means
// yes.
type Confirm func(question string) error

// answers are what the operator decided for a run: how its question
// steps get their answers (asked through confirm, or given in advance by
// --yes: yes), and where its salvage saves records (salvageTo, from
// --salvage-to: files under that directory instead of quarantine topics).
type answers struct {
	confirm   Confirm
	yes       bool
	salvageTo string
}

// ErrNotConfirmed is an operator's "no" (or Ctrl-C) at a run's question.
// Every question is a step of its own ahead of the run's first change, so
// after it nothing was changed.
var ErrNotConfirmed = errors.New("not confirmed")

// registry returns the actions of every step, bound to the run's session
// with the clusters of its topology.
func registry(clusters *kafkaconn.Clusters, ans answers) *plans.Registry {
	topo := clusters.Topology()
	r := plans.NewRegistry()
	var errs []error
	must := func(err error) { errs = append(errs, err) }
	must(preflightStep.Register(r, func(ctx context.Context, p preflightParams, _ *plans.RunContext) (plans.Result, error) {
		return preflight(ctx, clusters, p)
	}))
	stateStep := func(ctx context.Context, p stateParams, rc *plans.RunContext) (plans.Result, error) {
		w := within(ctx, clusters, p.Clusters...)
		defer w.Close()
		if err := w.transition(ctx, p.State, rc.Plan.ID, p.Clusters...); err != nil {
			return plans.Result{}, err
		}
		return plans.NewResult(p.State.String(), p.State)
	}
	for _, t := range []plans.StepType[stateParams]{beginStep, flipStep, reseedStartStep, finishStep} {
		must(t.Register(r, stateStep))
	}
	must(rpoStep.Register(r, func(ctx context.Context, p linkParams, _ *plans.RunContext) (plans.Result, error) {
		return reportRPO(ctx, clusters, p)
	}))
	must(confirmStoppedStep.Register(r, func(_ context.Context, p clusterParams, rc *plans.RunContext) (plans.Result, error) {
		drained := slices.ContainsFunc(rc.Plan.Steps, func(s plans.Step) bool { return s.Name == StepDrain })
		return confirmStopped(p.Cluster, drained, ans)
	}))
	must(fenceActiveStep.Register(r, func(ctx context.Context, p clusterParams, _ *plans.RunContext) (plans.Result, error) {
		return fenceCluster(ctx, clusters, p.Cluster, ans)
	}))
	must(fenceStaleStep.Register(r, func(ctx context.Context, p clusterParams, _ *plans.RunContext) (plans.Result, error) {
		if topo.Failover.Fence == topology.FenceNone {
			return plans.NewResult("fence none: nothing to do on the stale cluster (the mirror does not run into it until it is wiped)", nil)
		}
		rec, err := Fence(ctx, clusters, p.Cluster)
		if err != nil {
			return plans.Result{}, fmt.Errorf("%w; when %s is back, run drctl resume", err, p.Cluster)
		}
		return plans.NewResult(fmt.Sprintf("%d DENY WRITE ACL(s) in place on %s", len(rec.Added)+len(rec.Existing), p.Cluster), rec)
	}))
	must(drainStep.Register(r, func(ctx context.Context, p drainParams, rc *plans.RunContext) (plans.Result, error) {
		return drain(ctx, clusters, p, rc)
	}))
	must(fenceMirrorStep.Register(r, func(ctx context.Context, p linkParams, _ *plans.RunContext) (plans.Result, error) {
		n, err := linkstate.Fence(ctx, clusters, topo.Link(p.Source, p.Target))
		if err != nil {
			return plans.Result{}, err
		}
		return plans.NewResult(fmt.Sprintf("%d shard(s) of %s->%s fenced", n, p.Source, p.Target), map[string]int{"shards": n})
	}))
	must(translateStep.Register(r, func(ctx context.Context, p translateParams, _ *plans.RunContext) (plans.Result, error) {
		return translateGroups(ctx, clusters, p)
	}))
	must(unfenceNewStep.Register(r, func(ctx context.Context, p clusterParams, _ *plans.RunContext) (plans.Result, error) {
		removed, err := Unfence(ctx, clusters, p.Cluster)
		if err != nil {
			return plans.Result{}, err
		}
		return plans.NewResult(fmt.Sprintf("%d ACL(s) removed from %s", len(removed), p.Cluster), removed)
	}))
	must(hooksBeforeStep.Register(r, func(ctx context.Context, p hooksParams, rc *plans.RunContext) (plans.Result, error) {
		res, err := runHooks(ctx, p)
		if err != nil {
			return plans.Result{}, fmt.Errorf("failover.hooks.before: %w; nothing was changed (the before hooks run ahead of the fence and the role change): once what the hook checks is in order, run drctl resume %s (it runs the hooks again), or plan again", err, rc.Plan.ID)
		}
		return res, nil
	}))
	must(hooksStep.Register(r, func(ctx context.Context, p hooksParams, _ *plans.RunContext) (plans.Result, error) {
		res, err := runHooks(ctx, p)
		if err != nil {
			return plans.Result{}, fmt.Errorf("failover.hooks.after: %w", err)
		}
		return res, nil
	}))
	must(salvageStep.Register(r, func(ctx context.Context, p reseedParams, rc *plans.RunContext) (plans.Result, error) {
		w := within(ctx, clusters, p.Stale)
		changed := identityOf(w, rc, p.Stale)
		w.Close()
		var rep *SalvageReport
		var err error
		if ans.salvageTo != "" {
			rep, err = SalvageToDir(ctx, clusters, p.Stale, p.Active, ans.salvageTo)
		} else {
			rep, err = Salvage(ctx, clusters, p.Stale, p.Active)
		}
		if _, ok := errors.AsType[*QuarantineError](err); ok {
			// Past the flip nothing goes back: the way on that loses
			// nothing is a salvage the active cluster need not take.
			return plans.Result{}, fmt.Errorf("%w. Then run drctl resume %s; or, without changing %s, save the records to files instead: drctl resume %s --salvage-to DIR", err, rc.Plan.ID, p.Active, rc.Plan.ID)
		}
		if err != nil {
			return plans.Result{}, err
		}
		rep.Identity = changed
		msg := fmt.Sprintf("%d record(s) salvaged from %s into quarantine topics on %s, each read back (%d skipped: they came from %s)", rep.Records, p.Stale, p.Active, rep.FromActive, p.Active)
		if rep.Dir != "" {
			msg = fmt.Sprintf("%d record(s) salvaged from %s into files under %s, each read back (%d skipped: they came from %s)", rep.Records, p.Stale, rep.Dir, rep.FromActive, p.Active)
		}
		if changed != nil {
			msg = changed.String() + "; " + msg
		}
		return plans.NewResult(msg, rep)
	}))
	must(wipeStep.Register(r, func(ctx context.Context, p reseedParams, rc *plans.RunContext) (plans.Result, error) {
		rep, err := wipe(ctx, clusters, p.Stale, p.Active, rc)
		if err != nil {
			return plans.Result{}, err
		}
		return plans.NewResult(fmt.Sprintf("deleted on %s: %d topic(s) (%s) and %d group(s) (%s)", p.Stale,
			len(rep.TopicsDeleted), someNames(rep.TopicsDeleted), len(rep.GroupsDeleted), someNames(rep.GroupsDeleted)), rep)
	}))
	must(waitReseededStep.Register(r, func(ctx context.Context, p waitParams, rc *plans.RunContext) (plans.Result, error) {
		return waitReseeded(ctx, clusters, p, rc)
	}))
	if err := errors.Join(errs...); err != nil {
		panic(err) // two steps of one name: a programming error, caught by every test
	}
	return r
}

// mirrorStartWait is how long a planned run's preflight waits for a mirror
// process to run the link before it refuses: the mirror restarts its link
// within its role poll (5 s) after the roles change.
const mirrorStartWait = 10 * time.Second

func preflight(ctx context.Context, clusters *kafkaconn.Clusters, p preflightParams) (plans.Result, error) {
	topo := clusters.Topology()
	names := []string{p.To}
	if !p.Unplanned || p.Force {
		names = append(names, p.From)
	}
	w := within(ctx, clusters)
	defer w.Close()
	for _, n := range names {
		if _, err := w.Need(n); err != nil {
			return plans.Result{}, fmt.Errorf("preflight: %w", err)
		}
	}
	var lost []linkstate.LostRange // the link's losses to source retention, for the run's report
	problems, err := identityProblems(w, p.ClusterIDs)
	if err != nil {
		return plans.Result{}, fmt.Errorf("preflight: %w", err)
	}
	if len(problems) > 0 {
		return plans.Result{}, fmt.Errorf("preflight: %d problem(s), nothing was changed:\n  - %s", len(problems), strings.Join(problems, "\n  - "))
	}
	if err := drillRunning(ctx, w, p.Unplanned); err != nil {
		return plans.Result{}, fmt.Errorf("preflight: %w; nothing was changed", err)
	}
	if !p.Reseed {
		for _, n := range names {
			if c, err := w.Need(n); err == nil {
				if pr := inspect.FencePermission(ctx, topo, n, c); pr != "" {
					problems = append(problems, pr)
				}
			}
		}
	}
	if _, err := w.Need(p.From); err == nil && p.Unplanned && !p.Force {
		problems = append(problems, activeAnswers(p.From))
	}
	if !p.Unplanned && !p.Reseed {
		src, _ := w.Need(p.From)
		dst, _ := w.Need(p.To)
		srcTopics, err := topicShapes(src, topo)
		if err != nil {
			return plans.Result{}, fmt.Errorf("preflight: topics of %s: %w", p.From, err)
		}
		dstTopics, err := topicShapes(dst, topo)
		if err != nil {
			return plans.Result{}, fmt.Errorf("preflight: topics of %s: %w", p.To, err)
		}
		for t, n := range srcTopics {
			switch m, ok := dstTopics[t]; {
			case !ok:
				problems = append(problems, fmt.Sprintf("topic %s is missing on %s (is drctl mirror run running?)", t, p.To))
			case m != n:
				problems = append(problems, fmt.Sprintf("topic %s has %d partitions on %s and %d on %s", t, n, p.From, m, p.To))
			}
		}
		link := topo.Link(p.From, p.To)
		// Right after a role change (the end of a failback or reseed) the
		// mirror restarts its link within its role poll and its worker
		// group is empty for a moment: give it mirrorStartWait to come.
		var ls linkstate.State
		_ = poll.Until(ctx, poll.Wait{What: "a mirror process of " + link.String(), Every: 500 * time.Millisecond, Within: mirrorStartWait},
			func(ctx context.Context) (bool, string, error) {
				ls, _ = linkstate.DescribeLag(ctx, w.Clusters, link)
				return ls.Error != "" || ls.Running, "", nil
			})
		switch {
		case ls.Error != "":
			problems = append(problems, "mirror "+ls.Link+": "+ls.Error)
		case !ls.Running:
			problems = append(problems, "no mirror process runs for "+ls.Link+": start drctl mirror run (the drain needs it)")
		}
		lost = ls.Losses
	}
	if !p.Reseed && len(problems) == 0 {
		dst, _ := w.Need(p.To)
		admin, err := sarama.NewClusterAdminFromClient(dst)
		if err != nil {
			return plans.Result{}, fmt.Errorf("preflight: %w", err)
		}
		groups, err := inspect.SelectedGroups(admin, topo)
		if err != nil {
			return plans.Result{}, fmt.Errorf("preflight: groups of %s: %w", p.To, err)
		}
		for _, g := range slices.Sorted(maps.Keys(groups)) {
			if groups[g].Members > 0 {
				problems = append(problems, fmt.Sprintf("group %s has %d member(s) on %s: stop those consumers first; their positions are about to be set", g, groups[g].Members, p.To))
			}
		}
	}
	if len(problems) > 0 {
		return plans.Result{}, fmt.Errorf("preflight: %d problem(s), nothing was changed:\n  - %s", len(problems), strings.Join(problems, "\n  - "))
	}
	if n := linkstate.TotalLost(lost); n > 0 {
		// Not a refusal: those records are in neither cluster, and a
		// failover cannot bring them back; the run's report keeps them.
		return plans.NewResult(fmt.Sprintf("ready; %d record(s) of %s were lost to source retention before they were mirrored (%d range(s), kept on record until drctl mirror ack-lost): they are in neither cluster",
			n, topo.Link(p.From, p.To), len(lost)), map[string]any{"lost_to_retention": lost})
	}
	return plans.NewResult("ready", nil)
}

func topicShapes(client sarama.Client, topo *topology.Topology) (map[string]int32, error) {
	tps, err := linkstate.MirroredPartitions(client, topo)
	if err != nil {
		return nil, err
	}
	out := map[string]int32{}
	for _, tp := range tps {
		out[tp.Topic]++
	}
	return out, nil
}

// ProducersQuestion is what a fence: none run asks before its first
// change, about the cluster that loses the active role. It fits one line of
// an 80-column terminal for a cluster name of up to 10 characters; the
// step's title says that nothing has changed yet.
func ProducersQuestion(cluster string) string {
	return fmt.Sprintf("fence none: stop every producer writing to %s now. Have they stopped?", cluster)
}

// confirmStopped is the fence: none question, asked as a step of its own
// before the run's first change: a "no" leaves the clusters as they were.
// drained says whether the run drains the mirror after it (a planned run)
// or not (a forced unplanned one).
func confirmStopped(cluster string, drained bool, ans answers) (plans.Result, error) {
	next := "the drain waits for end offsets to stay still"
	if !drained {
		next = fmt.Sprintf("there is no drain (unplanned): what %s holds beyond the mirror is the RPO, salvaged after the flip", cluster)
	}
	if ans.yes {
		return plans.NewResult(fmt.Sprintf("that producers on %s stopped was confirmed by --yes, not by the operator; %s", cluster, next), nil)
	}
	if ans.confirm == nil {
		return plans.Result{}, fmt.Errorf("%w: fence none needs the operator's confirmation that producers on %s stopped; run on a terminal or pass --yes (nothing was changed)", ErrNotConfirmed, cluster)
	}
	if err := ans.confirm(ProducersQuestion(cluster)); err != nil {
		if errors.Is(err, ErrNotConfirmed) {
			return plans.Result{}, err
		}
		return plans.Result{}, fmt.Errorf("%w: %w (nothing was changed)", ErrNotConfirmed, err)
	}
	return plans.NewResult(fmt.Sprintf("the operator confirmed at %s that producers on %s stopped; %s", time.Now().UTC().Format(time.RFC3339), cluster, next), nil)
}

func fenceCluster(ctx context.Context, clusters *kafkaconn.Clusters, cluster string, ans answers) (plans.Result, error) {
	topo := clusters.Topology()
	if topo.Failover.Fence == topology.FenceNone {
		// Nothing to put in place: the operator was asked (or --yes
		// answered) before the run's first change.
		return plans.NewResult(fmt.Sprintf("fence none: no ACLs on %s; that its producers stopped was confirmed before the run began", cluster), nil)
	}
	rec, err := Fence(ctx, clusters, cluster)
	if err != nil {
		return plans.Result{}, err
	}
	return plans.NewResult(fmt.Sprintf("%d DENY WRITE ACL(s) added on %s and verified", len(rec.Added), cluster), rec)
}

// drain waits until the mirror has copied everything up to the source's
// last stable offsets and those stayed still for the quiet period, or,
// with the acl fence, until the drain is proven complete (proveDrained)
// twice, fenceSettle apart, with the same end offsets: then the quiet
// period is not needed. On timeout it restores the plan's starting roles
// and removes its fence, so both clusters are as they were, and returns
// ErrDrainTimeout.
func drain(ctx context.Context, clusters *kafkaconn.Clusters, p drainParams, rc *plans.RunContext) (plans.Result, error) {
	topo := clusters.Topology()
	timeout, err := time.ParseDuration(p.Timeout)
	if err != nil {
		return plans.Result{}, err
	}
	quiet, err := time.ParseDuration(p.QuietPeriod)
	if err != nil {
		return plans.Result{}, err
	}
	fenced := p.Fence == string(topology.FenceACL)
	settle := min(fenceSettle, quiet)
	link := topo.Link(p.Source, p.Target)
	start := time.Now()
	var lastEnds string
	stillSince := time.Now()
	// proven: the last measurement proved the drain; provenEnds and
	// provenAt: the high-water marks of the first proof of a run of
	// proofs that saw the same ones, and when it was made.
	var proven bool
	var provenEnds string
	var provenAt time.Time
	for {
		// One measurement may not outlast the drain's deadline by much: a
		// hung broker must not hold the drain (and its rollback) for long.
		mctx, cancel := context.WithTimeout(ctx, min(20*time.Second, max(time.Second, timeout-time.Since(start))))
		measured := time.Now()
		rep, proof, err := measureDrain(mctx, clusters, link, fenced)
		took := time.Since(measured)
		cancel()
		if err == nil {
			ends := endsKey(rep)
			if ends != lastEnds {
				lastEnds, stillSince = ends, time.Now()
			}
			switch {
			case !fenced || proof.why != "":
				proven = false
			case !proven || proof.ends != provenEnds:
				proven, provenEnds, provenAt = true, proof.ends, time.Now()
			case measured.Sub(provenAt) >= settle:
				return plans.NewResult(fmt.Sprintf("drained in %v: proven (the fence holds on every broker, no transaction is open, every partition is mirrored to its last stable offset)", time.Since(start).Round(time.Millisecond)),
					map[string]any{"lag_records": 0, "partitions": len(rep.Partitions), "proven": true})
			}
			caught := rep.Caught()
			if caught && time.Since(stillSince) >= quiet {
				return plans.NewResult(fmt.Sprintf("drained in %v", time.Since(start).Round(time.Millisecond)), map[string]any{"lag_records": 0, "partitions": len(rep.Partitions)})
			}
			msg := fmt.Sprintf("%d records, %.1fs behind", rep.TotalRecords, rep.MaxSeconds)
			switch {
			case proven:
				msg = fmt.Sprintf("caught up and proven drained; confirming the end offsets %v later", settle)
			case caught && fenced:
				msg = fmt.Sprintf("caught up; waiting %v for the end offsets to stay still (not proven drained: %s)", quiet, proof.why)
			case caught:
				msg = fmt.Sprintf("caught up; waiting %v for the end offsets to stay still", quiet)
			}
			rc.Progress(msg, -1)
		} else {
			proven = false
			rc.Progress("lag unknown: "+err.Error(), -1)
		}
		if time.Since(start) > timeout {
			why := fmt.Sprintf("the mirror %s->%s did not catch up within %v", p.Source, p.Target, timeout)
			switch {
			case err != nil:
				why = fmt.Sprintf("the mirror %s->%s could not be measured within %v: %v", p.Source, p.Target, timeout, err)
			case rep.Caught() && took > quiet:
				// A broker that hangs (or answers very slowly) holds the
				// measurement, not the producers.
				why = fmt.Sprintf("the mirror %s->%s caught up, but measuring its lag took %v (a broker of %s or %s is hung or very slow), so the end offsets could not be seen still for %v within %v",
					p.Source, p.Target, took.Round(time.Millisecond), p.Source, p.Target, quiet, timeout)
			case rep.Caught():
				why = fmt.Sprintf("the mirror %s->%s caught up, but the source end offsets did not stay still for %v within %v (are producers still writing? is failover.quiet_period shorter than failover.drain_timeout?)", p.Source, p.Target, quiet, timeout)
				if fenced && proof.why != "" {
					why += "; the drain was not proven complete either: " + proof.why
				}
			}
			return plans.Result{}, rollbackDrain(ctx, clusters, p, why, rc.Plan.ID)
		}
		// While a proof holds, the next measurement is the one that can
		// confirm it: no sooner than the settle allows.
		next := 250 * time.Millisecond
		if proven {
			next = max(time.Until(provenAt.Add(settle)), 10*time.Millisecond)
		}
		select {
		case <-ctx.Done():
			return plans.Result{}, ctx.Err()
		case <-rc.Stopping():
			return plans.Result{}, fmt.Errorf("%w: stopped draining %s->%s (drctl resume drains again; drctl abort undoes the run)", plans.ErrInterrupted, p.Source, p.Target)
		case <-time.After(next):
		}
	}
}

// measureDrain measures the link's lag and, when fenced, proves what it
// can of the drain (proveDrained), through one session: first the fence,
// then the lag, then the high-water marks, so that what the lag shows was
// read with the fence already in force. A failed proof is no error: its
// reason is the proof's.
func measureDrain(ctx context.Context, clusters *kafkaconn.Clusters, link topology.Link, fenced bool) (*linkstate.LagReport, drainProof, error) {
	topo := clusters.Topology()
	clusters.Redial(ctx, link.Source, link.Target)
	var fence aclfence.Proof
	var ferr error
	if fenced {
		if src, err := clusters.Need(link.Source); err == nil {
			fence, ferr = aclfence.Prove(ctx, src, topo, link.Source)
		}
	}
	rep, err := linkstate.MeasureLag(ctx, clusters, link)
	if err != nil || !fenced {
		return rep, drainProof{}, err
	}
	if ferr != nil {
		return rep, drainProof{why: "the fence could not be read on every broker: " + ferr.Error()}, nil //nolint:nilerr // a failed proof is the proof's reason, not the drain's error
	}
	proof, perr := proveDrained(ctx, clusters, topo, link.Source, fence, rep)
	if perr != nil {
		return rep, drainProof{why: perr.Error()}, nil //nolint:nilerr // as above
	}
	return rep, proof, nil
}

func rollbackDrain(ctx context.Context, clusters *kafkaconn.Clusters, p drainParams, why string, runID string) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	var undo []string
	if p.Fence == string(topology.FenceACL) {
		if removed, err := Unfence(rctx, clusters, p.Source); err != nil {
			undo = append(undo, "unfence "+p.Source+" failed: "+err.Error()+" (run drctl unfence "+p.Source+")")
		} else {
			undo = append(undo, fmt.Sprintf("removed the %d fence ACL(s) from %s", len(removed), p.Source))
		}
	}
	if err := restoreRoles(rctx, clusters, p.Rollback, runID); err != nil {
		undo = append(undo, "restoring the roles failed: "+err.Error())
	} else {
		undo = append(undo, "roles restored ("+p.Rollback.State.String()+")")
	}
	return fmt.Errorf("%w: %s; %s. Check drctl mirror lag, raise failover.drain_timeout, or fail over with --unplanned",
		ErrDrainTimeout, why, strings.Join(undo, "; "))
}

// restoreRoles writes the rollback state, again while a cluster is
// unreachable or its answer is transient (a broker that held the drain may
// answer again a moment later; right after it resumes, a new client can
// still fail, and its controller may not yet list it as alive), until ctx
// ends. The transition is idempotent: a cluster already restored is left
// alone, so a write whose outcome was unknown is not repeated.
func restoreRoles(ctx context.Context, clusters *kafkaconn.Clusters, rb stateParams, runID string) error {
	for {
		w := within(ctx, clusters, rb.Clusters...)
		err := w.transition(ctx, rb.State, runID, rb.Clusters...)
		w.Close()
		if err == nil || !(errors.Is(err, kafkaconn.ErrUnreachable) || kafkaread.Retriable(err)) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}

func endsKey(rep *linkstate.LagReport) string {
	var b strings.Builder
	for _, pl := range rep.Partitions {
		fmt.Fprintf(&b, "%s/%d=%d;", pl.Topic, pl.Partition, pl.SourceEnd)
	}
	return b.String()
}

func translateGroups(ctx context.Context, clusters *kafkaconn.Clusters, p translateParams) (plans.Result, error) {
	topo := clusters.Topology()
	link := topo.Link(p.Source, p.Target)
	w := within(ctx, clusters, p.Source, p.Target)
	defer w.Close()
	rep, err := groupsync.Translate(ctx, w.Clusters, link, groupsync.TranslateOptions{FromSnapshot: p.FromSnapshot})
	if err != nil {
		return plans.Result{}, fmt.Errorf("translate groups over %s: %w", link, err)
	}
	planned := groupsync.Decide(rep)
	applied, err := groupsync.Apply(ctx, w.Clusters, link, planned)
	if err != nil {
		return plans.Result{}, fmt.Errorf("commit translated positions on %s: %w", p.Target, err)
	}
	if bad := applied.NotSynced(); len(bad) > 0 {
		var names []string
		for _, g := range bad {
			names = append(names, fmt.Sprintf("%s (%s)", g.Group, g.Action))
		}
		return plans.Result{}, fmt.Errorf("groups not moved to %s: %s; stop their consumers on %s and resume", p.Target, strings.Join(names, ", "), p.Target)
	}
	unchanged := 0
	for _, g := range applied.Groups {
		unchanged += g.Unchanged
	}
	return plans.NewResult(fmt.Sprintf("%d group(s) on %s: %d partition position(s) changed, %d already in place (kept in sync by the mirror)",
		len(applied.Groups), p.Target, applied.Changes(), unchanged), applied)
}

// runHooks runs each command in turn with sh -c, after filling in the
// template data {{.Active}} and {{.Standby}} (the roles after the flip).
// The first command that fails, or runs longer than five minutes, stops
// the rest; its error carries the command's output.
func runHooks(ctx context.Context, p hooksParams) (plans.Result, error) {
	var ran []string
	for _, c := range p.Commands {
		tmpl, err := template.New("hook").Option("missingkey=error").Parse(c)
		if err != nil {
			return plans.Result{}, fmt.Errorf("hook %q: %w", c, err)
		}
		var b bytes.Buffer
		if err := tmpl.Execute(&b, map[string]string{"Active": p.Active, "Standby": p.Standby}); err != nil {
			return plans.Result{}, fmt.Errorf("hook %q: %w", c, err)
		}
		hctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		out, err := exec.CommandContext(hctx, "sh", "-c", b.String()).CombinedOutput()
		cancel()
		if err != nil {
			return plans.Result{}, fmt.Errorf("hook %q failed: %v: %s", b.String(), err, strings.TrimSpace(string(out)))
		}
		ran = append(ran, b.String())
	}
	return plans.NewResult(fmt.Sprintf("%d hook(s) ran", len(ran)), ran)
}

func waitReseeded(ctx context.Context, clusters *kafkaconn.Clusters, p waitParams, rc *plans.RunContext) (plans.Result, error) {
	topo := clusters.Topology()
	timeout, err := time.ParseDuration(p.Timeout)
	if err != nil {
		return plans.Result{}, err
	}
	link := topo.Link(p.Source, p.Target)
	start := time.Now()
	// goal holds each partition's source end when the wait first saw it:
	// the target has caught up once the mirror is past it. Zero lag is no
	// test: while producers write to the active, the lag is rarely zero.
	goal := map[topology.TopicPartition]int64{}
	// The run's session for the whole wait, its clients of the link dialled
	// again after a failed look: a new session per round cost both clusters
	// their handshakes and metadata every half second, and a round (link
	// state and lag together) took 1.5 to 4 s at 1,200 partitions when it
	// measured the lag twice.
	var (
		prevLag int64 = -1 // the lag of the previous look (-1: none)
		prevAt  time.Time
	)
	for {
		clusters.Redial(ctx, link.Source, link.Target)
		lookAt := time.Now()
		ls, rep := linkstate.DescribeLag(ctx, clusters, link)
		poll := reseedPollMax
		if ls.Error == "" {
			poll = reseedPoll(prevLag, ls.LagRecords, time.Since(prevAt), time.Since(lookAt))
			prevLag, prevAt = ls.LagRecords, time.Now()
		}
		if ls.Error != "" {
			clusters.Drop(link.Source, link.Target)
		}
		switch {
		case ls.Error == "" && ls.Running:
			past := rep != nil && allMirrored(rep)
			for i := 0; rep != nil && i < len(rep.Partitions); i++ {
				pl := rep.Partitions[i]
				tp := topology.TopicPartition{Topic: pl.Topic, Partition: pl.Partition}
				if _, ok := goal[tp]; !ok && pl.Error == "" {
					goal[tp] = pl.SourceEnd
				}
				if pl.Error != "" || (pl.Records > 0 && pl.Mirrored < goal[tp]) {
					past = false
				}
			}
			if past {
				return plans.NewResult(fmt.Sprintf("%s caught up in %v", p.Target, time.Since(start).Round(time.Second)), nil)
			}
			rc.Progress(fmt.Sprintf("%d records to copy into %s", ls.LagRecords, p.Target), -1)
		case ls.Error == "" && !ls.Running:
			rc.Progress(fmt.Sprintf("waiting for a mirror process for %s: start drctl mirror run", link), -1)
		default:
			rc.Progress(fmt.Sprintf("%d records to copy into %s", ls.LagRecords, p.Target), -1)
		}
		if time.Since(start) > timeout {
			return plans.Result{}, fmt.Errorf("%s did not catch up with %s within %v (lag %d records); check drctl mirror lag and resume", p.Target, p.Source, timeout, ls.LagRecords)
		}
		select {
		case <-ctx.Done():
			return plans.Result{}, ctx.Err()
		case <-rc.Stopping():
			return plans.Result{}, fmt.Errorf("%w: stopped waiting for %s to catch up (drctl resume waits again)", plans.ErrInterrupted, p.Target)
		case <-time.After(poll):
		}
	}
}

// The wait for a reseed looks at the lag every reseedPollMax, and as often
// as every reseedPollMin when the copy is about to end.
const (
	reseedPollMin = 100 * time.Millisecond
	reseedPollMax = 500 * time.Millisecond
)

// reseedPoll is the pause before the wait's next look at the lag: the
// lag fell from prevLag to lag in the time between two looks, and the look
// took took. It is reseedPollMax unless the lag falls at a pace that
// reaches zero sooner: then about when it should (a fixed half second
// added a quarter of a second to every reseed's tail on average). It is
// not shorter than the look itself took (up to reseedPollMax), so that the
// wait does not spend the clusters' time that the copy needs.
func reseedPoll(prevLag, lag int64, between, took time.Duration) time.Duration {
	d := reseedPollMax
	if prevLag > lag && lag >= 0 && between > 0 {
		d = min(d, time.Duration(float64(between)*float64(lag)/float64(prevLag-lag)))
	}
	return max(d, reseedPollMin, min(took, reseedPollMax))
}

// allMirrored reports whether every partition has mirror progress (a fresh
// link reports no lag on empty partitions before it ever ran).
func allMirrored(rep *linkstate.LagReport) bool {
	for _, p := range rep.Partitions {
		if p.Mirrored < 0 && p.SourceEnd > 0 {
			return false
		}
	}
	return true
}

// someNames lists up to eight names for a progress line, and how many more.
func someNames(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) <= 8 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:8], ", "), len(names)-8)
}
