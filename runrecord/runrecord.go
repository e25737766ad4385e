package runrecord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kvstore"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

// Step names that readers of a record look for: the RPO report, and the
// points of no return of plans saved before steps carried the mark.
// Package failover builds its plans with these names.
const (
	StepFlip = "flip-roles"
	StepWipe = "wipe"
	StepRPO  = "rpo-report"
)

// Record is a run's progress as the clusters keep it.
type Record struct {
	Plan    *plans.Plan             `json:"plan"`
	Done    []bool                  `json:"done"`
	Outputs map[int]json.RawMessage `json:"outputs"`
	// Started is the step running or last started (-1: none).
	Started  int           `json:"started"`
	Finished bool          `json:"finished"`
	Outcome  plans.Outcome `json:"outcome,omitempty"`
	Error    string        `json:"error,omitempty"`
	// Aborted is set when drctl abort undid the run; it is never resumed.
	Aborted *Aborted `json:"aborted,omitempty"`
	// WrittenAt is when the clusters last recorded the run (LoadRun sets
	// it from the record's timestamp): for a finished run, when it ended.
	WrittenAt time.Time `json:"-"`
}

// Start returns where a resume begins: the first step not done, with the
// outputs of the steps before it.
func (r *Record) Start() plans.Start {
	next := 0
	for next < len(r.Done) && r.Done[next] {
		next++
	}
	return plans.Start{From: next, Outputs: r.Outputs, Rerun: r.Started == next}
}

// Aborted records who aborted a run, when, why and what was undone.
type Aborted struct {
	By     string    `json:"by" yaml:"by"`
	At     time.Time `json:"at" yaml:"at"`
	Reason string    `json:"reason" yaml:"reason"`
	// Step is the step the run was at (its index, from 0).
	Step   int      `json:"step" yaml:"step"`
	Undone []string `json:"undone" yaml:"undone"`
}

// PointOfNoReturn is the index of the step from whose start a run can only
// be finished: the step the plan marks (the flip of a failover or
// failback, the wipe of a reseed), or, in a plan saved before steps
// carried the mark, the step of that name; 0 when there is neither.
func PointOfNoReturn(p *plans.Plan) int {
	if i := p.PointOfNoReturn(); i >= 0 {
		return i
	}
	name := StepFlip
	if p.Kind == string(rolestate.RunReseed) {
		name = StepWipe
	}
	for i, s := range p.Steps {
		if s.Name == name {
			return i
		}
	}
	return 0
}

// TopologyOf is the name of the topology a plan was built for: the
// "topology" of its inputs, which every drctl plan records (failover,
// failback, reseed, drills). "" when the inputs do not say.
func TopologyOf(p *plans.Plan) string {
	if p == nil {
		return ""
	}
	var in struct {
		Topology string `json:"topology"`
	}
	if json.Unmarshal(p.Inputs, &in) != nil {
		return ""
	}
	return in.Topology
}

// Load reads a run's progress from the session's clusters (every cluster
// the session has not dialled yet is dialled once; the most advanced
// record wins); nil when no cluster knows it as a run of the session's
// topology (the runs topic is shared by every topology whose clusters
// these are).
func Load(ctx context.Context, clusters *kafkaconn.Clusters, id string) *Record {
	clusters.Connect(ctx)
	topo := clusters.Topology().Name
	var best *Record
	for _, c := range clusters.Clients() {
		raw, at, found, err := kvstore.GetAt(ctx, c, topology.RunsTopic, id)
		if err != nil || !found {
			continue
		}
		rec, err := Decode(raw)
		if err != nil || TopologyOf(rec.Plan) != topo {
			continue
		}
		rec.WrittenAt = at
		if best == nil || rec.Start().From > best.Start().From {
			best = rec
		}
	}
	return best
}

// List reads every run of the session's topology the clusters recorded in
// topology.RunsTopic (a topic that every topology sharing the clusters
// writes: the runs of another topology are left out); for a run both
// hold, the most advanced record wins. Every cluster the session has not
// dialled yet is dialled once. It fails only when no cluster could be
// read; unreadable records are skipped.
func List(ctx context.Context, clusters *kafkaconn.Clusters) ([]*Record, error) {
	clusters.Connect(ctx)
	topoName := clusters.Topology().Name
	best := map[string]*Record{}
	var errs []error
	read := 0
	for name, c := range clusters.Clients() {
		all, err := kvstore.All(ctx, c, topology.RunsTopic)
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", name, err))
			continue
		}
		read++
		for id, raw := range all {
			rec, err := Decode(raw)
			if err != nil || rec.Plan == nil || TopologyOf(rec.Plan) != topoName {
				continue
			}
			if b := best[id]; b == nil || rec.Start().From > b.Start().From || (rec.Finished && !b.Finished) {
				best[id] = rec
			}
		}
	}
	if read == 0 {
		return nil, fmt.Errorf("read runs from the clusters: %w", errors.Join(append(errs, rolestate.ErrNoneReachable)...))
	}
	out := make([]*Record, 0, len(best))
	for _, r := range best {
		out = append(out, r)
	}
	return out, nil
}

// Decode decodes a run record read back from a cluster. It holds
// a valid plan, and its progress fits that plan (one done flag per step,
// outputs and the started step within it): a resume indexes the plan's
// steps with them.
func Decode(raw []byte) (*Record, error) {
	var rec Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, err
	}
	if rec.Plan == nil {
		return nil, errors.New("run record without a plan")
	}
	if err := rec.Plan.Validate(); err != nil {
		return nil, err
	}
	n := len(rec.Plan.Steps)
	if len(rec.Done) != n {
		return nil, fmt.Errorf("run record of %s: %d done flags for %d steps", rec.Plan.ID, len(rec.Done), n)
	}
	if rec.Started < -1 || rec.Started >= n {
		return nil, fmt.Errorf("run record of %s: started step %d of %d", rec.Plan.ID, rec.Started, n)
	}
	for i := range rec.Outputs {
		if i < 0 || i >= n {
			return nil, fmt.Errorf("run record of %s: outputs of step %d of %d", rec.Plan.ID, i, n)
		}
	}
	return &rec, nil
}

// Put writes rec to every reachable cluster of the session at once (each
// write is independent: the record is the same, and one that lands is
// enough, so a step boundary costs one write's time, not one per cluster).
// It fails only when no cluster took the record, with every cluster's
// error.
func Put(ctx context.Context, clusters *kafkaconn.Clusters, rec *Record) error {
	raw, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var errs []error
	ok := 0
	var wg sync.WaitGroup
	for name, c := range clusters.Clients() {
		wg.Go(func() {
			p, err := clusters.Producer(name)
			if err == nil {
				err = kvstore.PutWith(ctx, c, p, topology.RunsTopic, rec.Plan.ID, raw)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("cluster %s: %w", name, err))
				return
			}
			ok++
		})
	}
	wg.Wait()
	if ok == 0 {
		slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
		return fmt.Errorf("record run progress in the clusters: %w", errors.Join(append(errs, rolestate.ErrNoneReachable)...))
	}
	return nil
}
