package failover

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
	"github.com/drctl/drctl/topology"
)

// Step names: the vocabulary of failover, failback and reseed plans.
const (
	StepPreflight       = "preflight"
	StepHooksBefore     = "run-before-hooks"
	StepBegin           = "begin"
	StepConfirmStopped  = "confirm-producers-stopped"
	StepFenceActive     = "fence-active"
	StepDrain           = "drain"
	StepFenceMirror     = "fence-mirror"
	StepTranslateGroups = "translate-groups"
	StepUnfenceNew      = "unfence-new-active"
	StepHooks           = "run-hooks"
	StepFenceStale      = "fence-stale"
	StepSalvage         = "salvage"
	StepReseedStart     = "reseed-start"
	StepWaitReseeded    = "wait-reseeded"
	StepFinish          = "finish"
)

// Step types: each step name with the type of its parameters, shared by
// the builder (buildSteps) and the actions (registry).
var (
	preflightStep      = plans.NewStepType[preflightParams](StepPreflight)
	beginStep          = plans.NewStepType[stateParams](StepBegin)
	confirmStoppedStep = plans.NewStepType[clusterParams](StepConfirmStopped)
	fenceActiveStep    = plans.NewStepType[clusterParams](StepFenceActive)
	drainStep          = plans.NewStepType[drainParams](StepDrain)
	flipStep           = plans.NewStepType[stateParams](runrecord.StepFlip)
	fenceMirrorStep    = plans.NewStepType[linkParams](StepFenceMirror)
	rpoStep            = plans.NewStepType[linkParams](runrecord.StepRPO)
	translateStep      = plans.NewStepType[translateParams](StepTranslateGroups)
	unfenceNewStep     = plans.NewStepType[clusterParams](StepUnfenceNew)
	hooksBeforeStep    = plans.NewStepType[hooksParams](StepHooksBefore)
	hooksStep          = plans.NewStepType[hooksParams](StepHooks)
	fenceStaleStep     = plans.NewStepType[clusterParams](StepFenceStale)
	salvageStep        = plans.NewStepType[reseedParams](StepSalvage)
	wipeStep           = plans.NewStepType[reseedParams](runrecord.StepWipe)
	reseedStartStep    = plans.NewStepType[stateParams](StepReseedStart)
	waitReseededStep   = plans.NewStepType[waitParams](StepWaitReseeded)
	finishStep         = plans.NewStepType[stateParams](StepFinish)
)

// Inputs is what a plan was built against; the guard compares it with the
// world before every step.
type Inputs struct {
	Topology       string `json:"topology"`
	TopologyDigest string `json:"topology_digest"`
	// Epoch, Active, Standby and Phase are the live roles the plan starts
	// from.
	Epoch   int64           `json:"epoch"`
	Active  string          `json:"active"`
	Standby string          `json:"standby"`
	Phase   rolestate.Phase `json:"phase"`
	// From and To: the cluster losing and the cluster gaining the active
	// role (for reseed: To is the active, From the stale cluster).
	From      string `json:"from"`
	To        string `json:"to"`
	Unplanned bool   `json:"unplanned,omitempty"`
	// Force says the operator forced the plan past a refusal: an unplanned
	// failover although the old active answered (it is fenced first), or
	// a reseed of a cluster that is not stale.
	Force bool `json:"force,omitempty"`
	// ForceReason is the refusal the operator forced past, for the record.
	ForceReason string `json:"force_reason,omitempty"`
	// ClusterIDs holds each cluster's id when the plan was made: as it
	// answered, or as the role state recorded it when it did not. The
	// preflight refuses two names with one id, and a cluster that returns
	// with another id is reported as rebuilt.
	ClusterIDs map[string]string `json:"cluster_ids,omitempty"`
}

// stateParams is the role state a step writes.
type stateParams struct {
	State    rolestate.State `json:"state"`
	Clusters []string        `json:"clusters"`
}

type clusterParams struct {
	Cluster string `json:"cluster"`
}

type linkParams struct {
	Source string `json:"source"`
	Target string `json:"target"`
}

type drainParams struct {
	Source      string `json:"source"`
	Target      string `json:"target"`
	Timeout     string `json:"timeout"`
	QuietPeriod string `json:"quiet_period"`
	Fence       string `json:"fence"`
	// Rollback is the state to restore when the drain times out: the plan's
	// starting roles, steady.
	Rollback stateParams `json:"rollback"`
}

type translateParams struct {
	Source       string `json:"source"`
	Target       string `json:"target"`
	FromSnapshot bool   `json:"from_snapshot,omitempty"`
}

type reseedParams struct {
	Stale  string `json:"stale"`
	Active string `json:"active"`
}

type waitParams struct {
	Source  string `json:"source"`
	Target  string `json:"target"`
	Timeout string `json:"timeout"`
}

type preflightParams struct {
	From       string            `json:"from"`
	To         string            `json:"to"`
	Unplanned  bool              `json:"unplanned,omitempty"`
	Reseed     bool              `json:"reseed,omitempty"`
	Force      bool              `json:"force,omitempty"`
	ClusterIDs map[string]string `json:"cluster_ids,omitempty"`
}

// hooksParams are the commands of failover.hooks.before or .after and the
// template data both get: the roles as they are after the flip.
type hooksParams struct {
	Commands []string `json:"commands"`
	Active   string   `json:"active"`
	Standby  string   `json:"standby"`
}

// ErrRefused means the request cannot be planned in the current state; the
// message says why and what to do.
var ErrRefused = errors.New("refused")

// newRunID returns a short, unique, sortable run id.
func newRunID(kind string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%s-%s", kind, time.Now().UTC().Format("20060102T150405"), hex.EncodeToString(b[:]))
}

// ReseedTimeout bounds the wait for a re-seeded standby to catch up.
const ReseedTimeout = 2 * time.Hour

// Mode says whether the old active cluster takes part in a failover.
type Mode string

const (
	// Planned: the old active answers; it is fenced and the mirror from it
	// drained before the roles flip. The zero Mode is Planned.
	Planned Mode = "planned"
	// Unplanned: the old active is down; no drain from it, the groups are
	// translated from the standby's snapshot, and the reseed steps wait for
	// it to come back.
	Unplanned Mode = "unplanned"
)

// FailoverRequest says which failover to plan.
type FailoverRequest struct {
	// To is the cluster that becomes active.
	To string
	// Kind is rolestate.RunFailover (the zero value means it too) or
	// rolestate.RunFailback (To must then be the home active).
	Kind rolestate.RunKind
	// Mode is Planned (the zero value) or Unplanned.
	Mode Mode
	// ForceUnplanned allows an unplanned failover although the active
	// answers (--force-unplanned): the plan fences it first.
	ForceUnplanned bool
}

// PlanFailover builds the plan that moves the active role to req.To.
// Planned: preflight, the before hooks, begin, fence the old active, drain the mirror, flip
// the roles, fence the mirror link, translate the groups, unfence the new
// active, run the hooks, then reseed the old active (salvage, wipe,
// re-seed) and finish. Unplanned (the old active is down): no drain from
// the old active; the groups are translated from the standby's snapshot;
// the roles flip on the new active alone; the reseed steps wait for the
// old active to come back (the run stops at them and `drctl resume`
// finishes it). An unplanned failover of an active that answers is
// refused unless req.ForceUnplanned, and then fences it first. Two names
// for one cluster (equal cluster ids) are refused.
func PlanFailover(ctx context.Context, clusters *kafkaconn.Clusters, req FailoverRequest) (*plans.Plan, error) {
	topo := clusters.Topology()
	to := req.To
	kind := req.Kind
	if kind == "" {
		kind = rolestate.RunFailover
	}
	var unplanned bool
	switch req.Mode {
	case "", Planned:
	case Unplanned:
		unplanned = true
	default:
		return nil, fmt.Errorf("%w: failover mode %q is not known; use planned or unplanned", ErrRefused, req.Mode)
	}
	switch {
	case kind != rolestate.RunFailover && kind != rolestate.RunFailback:
		return nil, fmt.Errorf("%w: a failover plan is a failover or a failback, not %q", ErrRefused, kind)
	case req.ForceUnplanned && !unplanned:
		return nil, fmt.Errorf("%w: --force-unplanned forces an unplanned failover; add --unplanned", ErrRefused)
	case kind == rolestate.RunFailback && (to != topo.Active || unplanned):
		return nil, fmt.Errorf("%w: a failback is a planned failover to the home active %s (active: in %s); for anything else plan a failover", ErrRefused, topo.Active, topo.Path)
	}
	if _, ok := topo.Clusters[to]; !ok {
		return nil, fmt.Errorf("%w: no cluster %q in %s; use one of %v", ErrRefused, to, topo.Path, topo.ClusterNames())
	}
	w := within(ctx, clusters)
	defer w.Close()
	v := w.view(ctx)
	if v.Lost != "" {
		return nil, fmt.Errorf("%w: %w: %s", ErrRefused, rolestate.ErrLost, v.Lost)
	}
	cur := v.Current
	if _, err := w.Need(to); err != nil {
		return nil, fmt.Errorf("%w: the new active %s is unreachable: %v", ErrRefused, to, err)
	}
	ids, err := w.clusterIDs(ctx, v)
	if err != nil {
		return nil, err
	}
	if cur.Active == to {
		return nil, fmt.Errorf("%w: %s is already the active cluster (epoch %d); nothing to fail over", ErrRefused, to, cur.Epoch)
	}
	if cur.Phase != rolestate.PhaseSteady {
		id := ""
		if cur.Run != nil {
			id = cur.Run.ID
		}
		return nil, fmt.Errorf("%w: run %s is in progress (phase %s); finish it with drctl resume %s", ErrRefused, id, cur.Phase, id)
	}
	from := cur.Active
	_, fromErr := w.Need(from)
	switch {
	case fromErr != nil && !unplanned:
		return nil, fmt.Errorf("%w: the active cluster %s is unreachable (%w); if it is really down, fail over with --unplanned", ErrRefused, from, fromErr)
	case fromErr == nil && unplanned && !req.ForceUnplanned:
		return nil, fmt.Errorf("%w: %s", ErrRefused, activeAnswers(from))
	}
	if fromErr != nil && ids[from] == "" {
		// Down, and no role state recorded its id: the mirror's
		// provenance on the new active names it.
		if id := originOnTarget(ctx, topo, w.clients[to]); id != "" {
			if ids == nil {
				ids = map[string]string{}
			}
			ids[from] = id
			if err := oneNameEach(topo.Path, ids, nil); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrRefused, err)
			}
		}
	}
	p := plans.New(newRunID(string(kind)), string(kind))
	in := Inputs{Topology: topo.Name, TopologyDigest: topo.Digest, Epoch: cur.Epoch, Active: cur.Active, Standby: cur.Standby,
		Phase: cur.Phase, From: from, To: to, Unplanned: unplanned, Force: unplanned && fromErr == nil, ClusterIDs: ids}
	if in.Force {
		in.ForceReason = fmt.Sprintf("the active cluster %s answered when the plan was made; it is fenced first", from)
	}
	if err := p.SetInputs(in); err != nil {
		return nil, err
	}
	if err := buildSteps(topo, p, in); err != nil {
		return nil, err
	}
	return p, nil
}

// activeAnswers is the refusal of an unplanned failover of an active
// cluster that answers.
func activeAnswers(from string) string {
	return fmt.Sprintf("the active cluster %s answers: an unplanned failover would strand what its producers still write there. "+
		"Fail over planned (without --unplanned), or, if %s must be given up although it answers, add --force-unplanned (drctl fences it first)", from, from)
}

// ReseedOptions tune PlanReseedWith.
type ReseedOptions struct {
	// Force allows the reseed of a cluster that is not stale (--force):
	// the plan salvages what it holds that the active lacks, then wipes it.
	Force bool
}

// PlanReseed builds the plan that rebuilds cluster stale; see
// PlanReseedWith.
func PlanReseed(ctx context.Context, clusters *kafkaconn.Clusters, stale string) (*plans.Plan, error) {
	return PlanReseedWith(ctx, clusters, stale, ReseedOptions{})
}

// ErrNotStale means a reseed was asked of a cluster that is not stale; the
// message says why it is not, and that --force rebuilds it anyway.
var ErrNotStale = errors.New("not stale")

// PlanReseedWith builds the plan that rebuilds cluster stale as the
// standby of the live active cluster: fence it, salvage, wipe, re-seed,
// finish. It is for a cluster left stale by an unplanned failover whose
// run was not resumed (it holds an older role state, or none while the
// active holds one), or one that returned with another cluster id. Any
// other cluster (the healthy standby) is refused unless o.Force.
func PlanReseedWith(ctx context.Context, clusters *kafkaconn.Clusters, stale string, o ReseedOptions) (*plans.Plan, error) {
	topo := clusters.Topology()
	if _, ok := topo.Clusters[stale]; !ok {
		return nil, fmt.Errorf("%w: no cluster %q in %s", ErrRefused, stale, topo.Path)
	}
	w := within(ctx, clusters)
	defer w.Close()
	v := w.view(ctx)
	if v.Lost != "" {
		return nil, fmt.Errorf("%w: %w: %s", ErrRefused, rolestate.ErrLost, v.Lost)
	}
	cur := v.Current
	for _, name := range []string{stale, cur.Active} {
		if _, err := w.Need(name); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrRefused, err)
		}
	}
	ids, err := w.clusterIDs(ctx, v)
	if err != nil {
		return nil, err
	}
	if cur.Active == stale {
		return nil, fmt.Errorf("%w: %s is the active cluster; only the standby can be re-seeded", ErrRefused, stale)
	}
	if cur.Run != nil {
		return nil, fmt.Errorf("%w: run %s is in progress (phase %s); finish it with drctl resume %s", ErrRefused, cur.Run.ID, cur.Phase, cur.Run.ID)
	}
	why := notStale(v, stale, ids)
	if why != "" && !o.Force {
		return nil, fmt.Errorf("%w: %w: %s. A reseed deletes its mirrored topics and groups; if it must be rebuilt anyway, run drctl reseed %s --force", ErrRefused, ErrNotStale, why, stale)
	}
	p := plans.New(newRunID("reseed"), string(rolestate.RunReseed))
	in := Inputs{Topology: topo.Name, TopologyDigest: topo.Digest, Epoch: cur.Epoch, Active: cur.Active, Standby: cur.Standby,
		Phase: cur.Phase, From: stale, To: cur.Active, Force: why != "", ForceReason: why, ClusterIDs: ids}
	if err := p.SetInputs(in); err != nil {
		return nil, err
	}
	if err := buildSteps(topo, p, in); err != nil {
		return nil, err
	}
	return p, nil
}

// notStale says why cluster c is not stale ("" when it is): it holds the
// winning role state and the cluster id the role state recorded for it.
func notStale(v rolestate.View, c string, ids map[string]string) string {
	cs := v.Clusters[c]
	if cs.Stale {
		return ""
	}
	if rec := v.Current.ClusterIDs[c]; rec != "" && ids[c] != "" && rec != ids[c] {
		return "" // it came back as another cluster: rebuilt
	}
	if !cs.Found && v.Source == rolestate.SourceTopologyFile {
		return fmt.Sprintf("%s is the standby and no cluster records a failover (epoch 0, the topology file's roles): it is not stale", c)
	}
	return fmt.Sprintf("%s is the standby and holds the current role state (%s): it is not stale", c, v.Current)
}

// buildSteps appends the steps of p from its kind and inputs alone, so
// that a saved plan can be re-derived and compared before it runs (see
// verifyPlan). Everything a step carries comes from topo, in and the
// plan's id, kind, creation time and creator.
func buildSteps(topo *topology.Topology, p *plans.Plan, in Inputs) error {
	kind := rolestate.RunKind(p.Kind)
	run := &rolestate.Run{ID: p.ID, Kind: kind, StartedAt: p.CreatedAt, By: p.CreatedBy}
	var err error
	add := func(s plans.StepSpec) {
		if err == nil {
			err = p.Add(s)
		}
	}
	switch kind {
	case rolestate.RunFailover, rolestate.RunFailback:
		failoverSteps(topo, in, kind, run, add)
	case rolestate.RunReseed:
		reseedSteps(topo, in, run, add)
	default:
		return fmt.Errorf("plan %s: unknown kind %q (known: failover, failback, reseed)", p.ID, p.Kind)
	}
	return err
}

func failoverSteps(topo *topology.Topology, in Inputs, kind rolestate.RunKind, run *rolestate.Run, add func(plans.StepSpec)) {
	from, to, unplanned := in.From, in.To, in.Unplanned
	phase := rolestate.PhaseFailingOver
	if kind == rolestate.RunFailback {
		phase = rolestate.PhaseFailingBack
	}
	st := func(epoch int64, active, standby string, ph rolestate.Phase, r *rolestate.Run) rolestate.State {
		return rolestate.State{Topology: topo.Name, Epoch: epoch, Active: active, Standby: standby, Phase: ph, Run: r, ClusterIDs: in.ClusterIDs}
	}
	add(preflightStep.Spec(fmt.Sprintf("Check %s and %s are ready", from, to),
		preflightParams{From: from, To: to, Unplanned: unplanned, Force: in.Force, ClusterIDs: in.ClusterIDs}))
	if len(topo.Failover.HooksBefore) > 0 {
		// Before anything changes: a hook that fails stops the run with
		// the roles, ACLs, data and groups as they were.
		add(hooksBeforeStep.Spec("Run the before hooks", hooksParams{Commands: topo.Failover.HooksBefore, Active: to, Standby: from}))
	}
	if (!unplanned || in.Force) && topo.Failover.Fence == topology.FenceNone {
		// The one question of a run, asked before its first change.
		add(confirmStoppedStep.Spec(fmt.Sprintf("Ask that producers writing to %s stop (fence none; changes nothing)", from), clusterParams{Cluster: from}))
	}
	flipEpoch := in.Epoch + 1
	if !unplanned {
		begin := st(in.Epoch+1, from, to, phase, run)
		s := beginStep.Spec(fmt.Sprintf("Record the %s run in both clusters", kind), stateParams{State: begin, Clusters: []string{to, from}})
		s.Expect, s.Intend = map[string]any{"epoch": in.Epoch, "phase": in.Phase}, map[string]any{"epoch": begin.Epoch, "phase": phase}
		add(s)
	}
	if !unplanned || in.Force {
		s := fenceActiveStep.Spec(fmt.Sprintf("Fence %s against writes (%s)", from, topo.Failover.Fence), clusterParams{Cluster: from})
		s.Destructive = topo.Failover.Fence != topology.FenceNone // fence none changes nothing
		intend := map[string]any{"fence": string(topo.Failover.Fence)}
		if topo.Failover.Fence == topology.FenceACL {
			intend["principals"] = fencePrincipals(topo) // whom the ACLs deny
		}
		s.Intend = intend
		add(s)
	}
	if !unplanned {
		s := drainStep.Spec(fmt.Sprintf("Drain the mirror %s->%s", from, to),
			drainParams{Source: from, Target: to, Timeout: topo.Failover.DrainTimeout.String(), QuietPeriod: topo.Failover.QuietPeriod.String(),
				Fence: string(topo.Failover.Fence), Rollback: stateParams{State: st(in.Epoch+1, from, to, rolestate.PhaseSteady, nil), Clusters: []string{to, from}}})
		s.Intend = map[string]any{"lag_records": 0}
		add(s)
		flipEpoch = in.Epoch + 2
	}
	flip := st(flipEpoch, to, from, rolestate.PhaseWiping, run)
	flipOn := []string{to, from}
	if unplanned {
		flipOn = []string{to}
	}
	s := flipStep.Spec(fmt.Sprintf("Make %s the active cluster", to), stateParams{State: flip, Clusters: flipOn})
	s.Destructive, s.PointOfNoReturn = true, true
	s.Expect, s.Intend = map[string]any{"active": from, "standby": to}, map[string]any{"active": to, "standby": from, "epoch": flip.Epoch}
	add(s)
	add(fenceMirrorStep.Spec(fmt.Sprintf("Fence the mirror link %s->%s", from, to), linkParams{Source: from, Target: to}))
	if unplanned {
		add(rpoStep.Spec(fmt.Sprintf("Report what never left %s (RPO)", from), linkParams{Source: from, Target: to}))
	}
	add(translateStep.Spec(fmt.Sprintf("Move consumer-group positions to %s", to), translateParams{Source: from, Target: to, FromSnapshot: unplanned}))
	add(unfenceNewStep.Spec(fmt.Sprintf("Remove drctl's fence from %s, if any", to), clusterParams{Cluster: to}))
	if len(topo.Failover.HooksAfter) > 0 {
		add(hooksStep.Spec("Run the after hooks", hooksParams{Commands: topo.Failover.HooksAfter, Active: to, Standby: from}))
	}
	addReseed(topo, in.ClusterIDs, add, from, to, flip.Epoch, run, unplanned, false)
}

func reseedSteps(topo *topology.Topology, in Inputs, run *rolestate.Run, add func(plans.StepSpec)) {
	stale, active := in.From, in.To
	add(preflightStep.Spec(fmt.Sprintf("Check %s and %s are ready", stale, active),
		preflightParams{From: stale, To: active, Reseed: true, Force: in.Force, ClusterIDs: in.ClusterIDs}))
	begin := rolestate.State{Topology: topo.Name, Epoch: in.Epoch + 1, Active: active, Standby: stale, Phase: rolestate.PhaseWiping, Run: run, ClusterIDs: in.ClusterIDs}
	add(beginStep.Spec("Record the reseed run in both clusters (the mirror into "+stale+" stops)", stateParams{State: begin, Clusters: []string{active, stale}}))
	addReseed(topo, in.ClusterIDs, add, stale, active, begin.Epoch, run, true, true)
}

// addReseed appends the steps that rebuild stale as the standby of active;
// the wipe is the point of no return of a plan that has none before it (a
// reseed's own).
func addReseed(topo *topology.Topology, ids map[string]string, add func(plans.StepSpec), stale, active string, epoch int64, run *rolestate.Run, fenceFirst, wipeIsPointOfNoReturn bool) {
	st := func(ph rolestate.Phase, r *rolestate.Run) rolestate.State {
		return rolestate.State{Topology: topo.Name, Epoch: epoch, Active: active, Standby: stale, Phase: ph, Run: r, ClusterIDs: ids}
	}
	if fenceFirst {
		s := fenceStaleStep.Spec(fmt.Sprintf("Fence the stale cluster %s (waits for it to be reachable)", stale), clusterParams{Cluster: stale})
		s.Destructive = true
		add(s)
	}
	salvage := salvageStep.Spec(fmt.Sprintf("Salvage records on %s that never reached %s", stale, active), reseedParams{Stale: stale, Active: active})
	salvage.Intend = map[string]any{"into": topo.SalvageTopic("<topic>") + " on " + active}
	add(salvage)
	wipe := wipeStep.Spec(fmt.Sprintf("Wipe the mirrored topics and groups on %s", stale), reseedParams{Stale: stale, Active: active})
	wipe.Destructive, wipe.PointOfNoReturn = true, wipeIsPointOfNoReturn
	add(wipe)
	add(reseedStartStep.Spec(fmt.Sprintf("Start re-seeding %s from %s", stale, active),
		stateParams{State: st(rolestate.PhaseReseeding, run), Clusters: []string{active, stale}}))
	add(waitReseededStep.Spec(fmt.Sprintf("Wait until %s has caught up with %s", stale, active),
		waitParams{Source: active, Target: stale, Timeout: ReseedTimeout.String()}))
	add(finishStep.Spec("Mark the roles steady", stateParams{State: st(rolestate.PhaseSteady, nil), Clusters: []string{active, stale}}))
}
