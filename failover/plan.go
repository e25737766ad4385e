package failover

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

// Step names: the vocabulary of failover, failback and reseed plans.
const (
	StepPreflight       = "preflight"
	StepBegin           = "begin"
	StepFenceActive     = "fence-active"
	StepDrain           = "drain"
	StepFlip            = "flip-roles"
	StepFenceMirror     = "fence-mirror"
	StepTranslateGroups = "translate-groups"
	StepUnfenceNew      = "unfence-new-active"
	StepHooks           = "run-hooks"
	StepFenceStale      = "fence-stale"
	StepSalvage         = "salvage"
	StepWipe            = "wipe"
	StepReseedStart     = "reseed-start"
	StepWaitReseeded    = "wait-reseeded"
	StepFinish          = "finish"
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
	From      string `json:"from"`
	To        string `json:"to"`
	Unplanned bool   `json:"unplanned,omitempty"`
	Reseed    bool   `json:"reseed,omitempty"`
}

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

// PlanFailover builds the plan that moves the active role to cluster to.
// Planned: preflight, begin, fence the old active, drain the mirror, flip
// the roles, fence the mirror link, translate the groups, unfence the new
// active, run the hooks, then reseed the old active (salvage, wipe,
// re-seed) and finish. Unplanned (the old active is down, or the operator
// says so): no fence of, and no drain from, the old active; the groups are
// translated from the standby's snapshot; the roles flip on the new
// active alone; the reseed steps wait for the old active to come back
// (the run stops at them and `drctl resume` finishes it). failback plans
// the same towards the home active.
func PlanFailover(ctx context.Context, topo *topology.Topology, to string, unplanned, failback bool) (*plans.Plan, error) {
	if _, ok := topo.Clusters[to]; !ok {
		return nil, fmt.Errorf("%w: no cluster %q in %s; use one of %v", ErrRefused, to, topo.Path, topo.ClusterNames())
	}
	w := connect(ctx, topo)
	defer w.close()
	v := w.view(ctx)
	cur := v.Current
	if _, err := w.need(to); err != nil {
		return nil, fmt.Errorf("%w: the new active %s is unreachable: %v", ErrRefused, to, err)
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
	if _, err := w.need(from); err != nil && !unplanned {
		return nil, fmt.Errorf("%w: the active cluster %s is unreachable (%v); if it is really down, fail over with --unplanned", ErrRefused, from, err)
	}
	kind, phase := rolestate.RunFailover, rolestate.PhaseFailingOver
	if failback {
		kind, phase = rolestate.RunFailback, rolestate.PhaseFailingBack
	}
	p := plans.New(newRunID(string(kind)), string(kind))
	in := Inputs{Topology: topo.Name, TopologyDigest: topo.Digest, Epoch: cur.Epoch, Active: cur.Active, Standby: cur.Standby,
		Phase: cur.Phase, From: from, To: to, Unplanned: unplanned}
	if err := p.SetInputs(in); err != nil {
		return nil, err
	}
	run := &rolestate.Run{ID: p.ID, Kind: kind, StartedAt: p.CreatedAt, By: p.CreatedBy}
	st := func(epoch int64, active, standby string, ph rolestate.Phase, r *rolestate.Run) rolestate.State {
		return rolestate.State{Topology: topo.Name, Epoch: epoch, Active: active, Standby: standby, Phase: ph, Run: r}
	}
	add := func(s plans.StepSpec) {
		if err := p.Add(s); err != nil {
			panic(err) // the specs below are encodable by construction
		}
	}
	add(plans.StepSpec{Name: StepPreflight, Title: fmt.Sprintf("Check %s and %s are ready", from, to),
		Params: preflightParams{From: from, To: to, Unplanned: unplanned}})
	flipEpoch := cur.Epoch + 1
	if !unplanned {
		begin := st(cur.Epoch+1, from, to, phase, run)
		add(plans.StepSpec{Name: StepBegin, Title: fmt.Sprintf("Record the %s run in both clusters", kind),
			Params: stateParams{State: begin, Clusters: []string{to, from}},
			Expect: map[string]any{"epoch": cur.Epoch, "phase": cur.Phase}, Intend: map[string]any{"epoch": begin.Epoch, "phase": phase}})
		add(plans.StepSpec{Name: StepFenceActive, Title: fmt.Sprintf("Fence %s against writes (%s)", from, topo.Failover.Fence),
			Params: clusterParams{Cluster: from}, Destructive: true,
			Intend: map[string]any{"fence": string(topo.Failover.Fence), "principals": fencePrincipals(topo)}})
		add(plans.StepSpec{Name: StepDrain, Title: fmt.Sprintf("Drain the mirror %s->%s", from, to),
			Params: drainParams{Source: from, Target: to, Timeout: topo.Failover.DrainTimeout.String(), QuietPeriod: topo.Failover.QuietPeriod.String(),
				Fence: string(topo.Failover.Fence), Rollback: stateParams{State: st(cur.Epoch+1, from, to, rolestate.PhaseSteady, nil), Clusters: []string{to, from}}},
			Intend: map[string]any{"lag_records": 0}})
		flipEpoch = cur.Epoch + 2
	}
	flip := st(flipEpoch, to, from, rolestate.PhaseWiping, run)
	flipOn := []string{to, from}
	if unplanned {
		flipOn = []string{to}
	}
	add(plans.StepSpec{Name: StepFlip, Title: fmt.Sprintf("Make %s the active cluster", to), Destructive: true,
		Params: stateParams{State: flip, Clusters: flipOn},
		Expect: map[string]any{"active": from, "standby": to}, Intend: map[string]any{"active": to, "standby": from, "epoch": flip.Epoch}})
	add(plans.StepSpec{Name: StepFenceMirror, Title: fmt.Sprintf("Fence the mirror link %s->%s", from, to), Params: linkParams{Source: from, Target: to}})
	if unplanned {
		add(plans.StepSpec{Name: StepRPO, Title: fmt.Sprintf("Report what never left %s (RPO)", from), Params: linkParams{Source: from, Target: to}})
	}
	add(plans.StepSpec{Name: StepTranslateGroups, Title: fmt.Sprintf("Move consumer-group positions to %s", to),
		Params: translateParams{Source: from, Target: to, FromSnapshot: unplanned}})
	add(plans.StepSpec{Name: StepUnfenceNew, Title: fmt.Sprintf("Remove drctl's fence from %s, if any", to), Params: clusterParams{Cluster: to}})
	if len(topo.Failover.HooksAfter) > 0 {
		add(plans.StepSpec{Name: StepHooks, Title: "Run the after hooks", Params: hooksParams{Commands: topo.Failover.HooksAfter, Active: to, Standby: from}})
	}
	addReseed(p, topo, add, from, to, flip.Epoch, run, unplanned)
	return p, nil
}

// addReseed appends the steps that rebuild stale as the standby of active.
func addReseed(p *plans.Plan, topo *topology.Topology, add func(plans.StepSpec), stale, active string, epoch int64, run *rolestate.Run, fenceFirst bool) {
	st := func(ph rolestate.Phase, r *rolestate.Run) rolestate.State {
		return rolestate.State{Topology: topo.Name, Epoch: epoch, Active: active, Standby: stale, Phase: ph, Run: r}
	}
	if fenceFirst {
		add(plans.StepSpec{Name: StepFenceStale, Title: fmt.Sprintf("Fence the stale cluster %s (waits for it to be reachable)", stale),
			Params: clusterParams{Cluster: stale}, Destructive: true})
	}
	add(plans.StepSpec{Name: StepSalvage, Title: fmt.Sprintf("Salvage records on %s that never reached %s", stale, active),
		Params: reseedParams{Stale: stale, Active: active}, Intend: map[string]any{"into": "<topic>" + topo.Failover.SalvageTopicSuffix + " on " + active}})
	add(plans.StepSpec{Name: StepWipe, Title: fmt.Sprintf("Wipe the mirrored topics and groups on %s", stale), Destructive: true,
		Params: reseedParams{Stale: stale, Active: active}})
	add(plans.StepSpec{Name: StepReseedStart, Title: fmt.Sprintf("Start re-seeding %s from %s", stale, active),
		Params: stateParams{State: st(rolestate.PhaseReseeding, run), Clusters: []string{active, stale}}})
	add(plans.StepSpec{Name: StepWaitReseeded, Title: fmt.Sprintf("Wait until %s has caught up with %s", stale, active),
		Params: waitParams{Source: active, Target: stale, Timeout: ReseedTimeout.String()}})
	add(plans.StepSpec{Name: StepFinish, Title: "Mark the roles steady",
		Params: stateParams{State: st(rolestate.PhaseSteady, nil), Clusters: []string{active, stale}}})
}

// PlanReseed builds the plan that rebuilds cluster stale as the standby of
// the live active cluster: fence it, salvage, wipe, re-seed, finish. It is
// for a cluster left stale by an unplanned failover whose run was not
// resumed, or one that must be rebuilt.
func PlanReseed(ctx context.Context, topo *topology.Topology, stale string) (*plans.Plan, error) {
	if _, ok := topo.Clusters[stale]; !ok {
		return nil, fmt.Errorf("%w: no cluster %q in %s", ErrRefused, stale, topo.Path)
	}
	w := connect(ctx, topo)
	defer w.close()
	v := w.view(ctx)
	cur := v.Current
	if cur.Active == stale {
		return nil, fmt.Errorf("%w: %s is the active cluster; only the standby can be re-seeded", ErrRefused, stale)
	}
	if cur.Run != nil {
		return nil, fmt.Errorf("%w: run %s is in progress (phase %s); finish it with drctl resume %s", ErrRefused, cur.Run.ID, cur.Phase, cur.Run.ID)
	}
	for _, name := range []string{stale, cur.Active} {
		if _, err := w.need(name); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrRefused, err)
		}
	}
	p := plans.New(newRunID("reseed"), string(rolestate.RunReseed))
	in := Inputs{Topology: topo.Name, TopologyDigest: topo.Digest, Epoch: cur.Epoch, Active: cur.Active, Standby: cur.Standby,
		Phase: cur.Phase, From: stale, To: cur.Active}
	if err := p.SetInputs(in); err != nil {
		return nil, err
	}
	run := &rolestate.Run{ID: p.ID, Kind: rolestate.RunReseed, StartedAt: p.CreatedAt, By: p.CreatedBy}
	add := func(s plans.StepSpec) {
		if err := p.Add(s); err != nil {
			panic(err)
		}
	}
	add(plans.StepSpec{Name: StepPreflight, Title: fmt.Sprintf("Check %s and %s are ready", stale, cur.Active),
		Params: preflightParams{From: stale, To: cur.Active, Reseed: true}})
	begin := rolestate.State{Topology: topo.Name, Epoch: cur.Epoch + 1, Active: cur.Active, Standby: stale, Phase: rolestate.PhaseWiping, Run: run}
	add(plans.StepSpec{Name: StepBegin, Title: "Record the reseed run in both clusters (the mirror into " + stale + " stops)",
		Params: stateParams{State: begin, Clusters: []string{cur.Active, stale}}})
	addReseed(p, topo, add, stale, cur.Active, begin.Epoch, run, true)
	return p, nil
}
