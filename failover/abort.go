package failover

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
	"github.com/drctl/drctl/topology"
)

// ErrPastPointOfNoReturn means a run cannot be aborted: it started the
// step after which the clusters cannot be put back as they were (the flip
// of a failover or failback, the wipe of a reseed). Resume finishes it.
var ErrPastPointOfNoReturn = errors.New("past its point of no return")

// ErrAborted means a run was aborted (drctl abort) and is never resumed.
var ErrAborted = errors.New("the run was aborted")

// AbortOptions tune Abort.
type AbortOptions struct {
	// Reason is why the operator aborts, recorded with the run.
	Reason string
	// JournalDir holds the local journals (default JournalDir()).
	JournalDir string
}

// AbortReport is the outcome of Abort.
type AbortReport struct {
	RunID   string            `json:"run_id" yaml:"run_id"`
	Kind    string            `json:"kind" yaml:"kind"`
	Aborted runrecord.Aborted `json:"aborted" yaml:"aborted"`
	// Already is true when the run had been aborted before; nothing was done.
	Already bool `json:"already,omitempty" yaml:"already,omitempty"`
}

// Abort undoes run id (the run in progress when id is empty) if it has not
// started its point of no return: it removes the fence the run added (fence
// acl), writes the roles the run started from, steady, over the run's own
// state (at the epoch the run reached, so that the run's plan is stale from
// then on), and records who aborted, why and what was undone in the run
// record of both clusters and in the local journal. Past the point of no
// return it refuses (ErrPastPointOfNoReturn) and changes nothing. A process
// still running the run must be stopped first. Abort is idempotent.
func Abort(ctx context.Context, clusters *kafkaconn.Clusters, id string, o AbortOptions) (*AbortReport, error) {
	topo := clusters.Topology()
	id, err := runInProgress(ctx, clusters, id, ErrNothingToAbort)
	if err != nil {
		return nil, err
	}
	dir := o.JournalDir
	if dir == "" {
		dir = JournalDir()
	}
	jpath := filepath.Join(dir, id+".jsonl")
	js, _ := plans.ReadJournal(jpath)
	w := within(ctx, clusters)
	defer w.Close()
	rec := runrecord.Load(ctx, w.Clusters, id)
	var p *plans.Plan
	switch {
	case rec != nil && rec.Plan != nil:
		p = rec.Plan
	case js != nil:
		p = js.Plan
	default:
		return nil, fmt.Errorf("run %s is known neither to the local journal in %s nor to the clusters; nothing to abort", id, dir)
	}
	if rec != nil && rec.Aborted != nil {
		return &AbortReport{RunID: id, Kind: p.Kind, Aborted: *rec.Aborted, Already: true}, nil
	}
	if (rec != nil && rec.Finished) || (js != nil && js.Finished) {
		return nil, fmt.Errorf("run %s finished; there is nothing to abort", id)
	}
	var in Inputs
	if err := p.DecodeInputs(&in); err != nil {
		return nil, err
	}
	if in.Topology != topo.Name {
		return nil, fmt.Errorf("run %s belongs to topology %s, the file %s describes %s", id, in.Topology, topo.Path, topo.Name)
	}
	if err := verifyPlan(topo, p, in); err != nil {
		return nil, err
	}
	reached := reachedStep(rec, js)
	v := w.view(ctx)
	ponr := runrecord.PointOfNoReturn(p)
	if reached >= ponr || rolesMoved(v, id, in) {
		return nil, fmt.Errorf("%w: run %s has started step %d/%d (%s), after which the clusters cannot be put back as they were; nothing was changed. Finish it with drctl resume %s (if its salvage cannot write a record into quarantine, drctl resume %s --salvage-to DIR saves the records to files instead)",
			ErrPastPointOfNoReturn, id, ponr+1, len(p.Steps), p.Steps[ponr].Name, id, id)
	}
	ab := runrecord.Aborted{By: rolestate.Actor(), At: time.Now().UTC().Truncate(time.Millisecond), Reason: o.Reason, Step: max(reached, 0), Undone: []string{}}
	if ab.Reason == "" {
		ab.Reason = "no reason given"
	}

	// The fence this run added.
	fenceAt, fenced := -1, ""
	for i, s := range p.Steps[:ponr] {
		for _, t := range []plans.StepType[clusterParams]{fenceActiveStep, fenceStaleStep} {
			if cp, err := t.Params(s); err == nil {
				fenceAt, fenced = i, cp.Cluster
			}
		}
	}
	if fenceAt >= 0 && reached >= fenceAt && topo.Failover.Fence == topology.FenceACL {
		removed, err := Unfence(ctx, clusters, fenced)
		if err != nil {
			return nil, fmt.Errorf("abort %s: remove the fence from %s: %w (nothing else was undone; run drctl abort %s again)", id, fenced, err, id)
		}
		ab.Undone = append(ab.Undone, fmt.Sprintf("removed the %d fence ACL(s) drctl added to %s", len(removed), fenced))
	}

	// The roles: back to the ones the run started from, steady, over any
	// state of this run.
	epoch, ours := int64(-1), false
	for _, cs := range v.Clusters {
		if cs.Found && cs.State.Run != nil && cs.State.Run.ID == id {
			epoch, ours = max(epoch, cs.State.Epoch), true
		}
	}
	if ours {
		back := rolestate.State{Topology: topo.Name, Epoch: epoch, Active: in.Active, Standby: in.Standby, Phase: rolestate.PhaseSteady, ClusterIDs: in.ClusterIDs}
		if err := w.transition(ctx, back, id, topo.ClusterNames()...); err != nil {
			return nil, fmt.Errorf("abort %s: restore the roles: %w (undone so far: %v; run drctl abort %s again)", id, err, ab.Undone, id)
		}
		ab.Undone = append(ab.Undone, "roles restored: "+back.String())
	}

	// Why, in the run record and the journal.
	if rec == nil {
		rec = &runrecord.Record{Plan: p, Done: make([]bool, len(p.Steps)), Started: reached}
	}
	rec.Aborted, rec.Outcome = &ab, plans.OutcomeAborted
	rec.Error = fmt.Sprintf("aborted by %s: %s", ab.By, ab.Reason)
	if err := runrecord.Put(ctx, w.Clusters, rec); err != nil {
		return nil, fmt.Errorf("abort %s: the run was undone (%v), but %w", id, ab.Undone, err)
	}
	if _, err := os.Stat(jpath); err == nil {
		if err := journalAbort(ctx, jpath, p, ab, rec.Error); err != nil {
			return nil, fmt.Errorf("abort %s: the run was undone (%v) and recorded in the clusters, but the journal: %w", id, ab.Undone, err)
		}
	}
	return &AbortReport{RunID: id, Kind: p.Kind, Aborted: ab}, nil
}

// reachedStep is the highest step the run started or finished (-1: none),
// from the clusters' record and the local journal.
func reachedStep(rec *runrecord.Record, js *plans.JournalState) int {
	reached := -1
	if rec != nil {
		reached = rec.Started
		for i, d := range rec.Done {
			if d {
				reached = max(reached, i)
			}
		}
	}
	if js != nil {
		n := js.Next - 1
		if js.Rerun {
			n = js.Next
		}
		reached = max(reached, n)
	}
	return reached
}

// rolesMoved reports whether a cluster holds a state of run id in which the
// roles flipped (the new active is active).
func rolesMoved(v rolestate.View, id string, in Inputs) bool {
	for _, cs := range v.Clusters {
		if cs.Found && cs.State.Run != nil && cs.State.Run.ID == id && cs.State.Active != in.Active {
			return true
		}
	}
	return false
}

// journalAbort appends a run-done "aborted" record with the reason.
func journalAbort(ctx context.Context, path string, p *plans.Plan, ab runrecord.Aborted, why string) error {
	j, st, err := plans.OpenJournal(path)
	if err != nil {
		return err
	}
	defer j.Close()
	return j.Handle(ctx, plans.Event{Version: plans.EventVersion, Type: plans.EventRunDone, Time: ab.At, RunID: p.ID, Kind: p.Kind,
		Actor: ab.By, Index: st.Next, Total: len(p.Steps), Outcome: plans.OutcomeAborted, Error: why})
}
