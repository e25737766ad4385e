package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// DrillStatus is the last drill the clusters recorded (package drill writes
// them; status only reads the few fields it shows).
type DrillStatus struct {
	ID         string    `json:"id" yaml:"id"`
	Drill      string    `json:"drill" yaml:"drill"`
	Kind       string    `json:"kind" yaml:"kind"`
	Verdict    string    `json:"verdict" yaml:"verdict"`
	FinishedAt time.Time `json:"finished_at" yaml:"finished_at"`
	Reasons    []string  `json:"reasons,omitempty" yaml:"reasons,omitempty"`
	// Unfinished: the newest drill recorded only its start (a disruptive
	// drill still running, or killed); StartedAt is when it started.
	Unfinished bool      `json:"unfinished,omitempty" yaml:"unfinished,omitempty"`
	StartedAt  time.Time `json:"started_at,omitzero" yaml:"started_at,omitempty"`
	// LastPassAt is when a drill last passed (absent: never).
	LastPassAt *time.Time `json:"last_pass_at,omitempty" yaml:"last_pass_at,omitempty"`
	// Stale is true when drills.stale_after is set and no drill passed
	// within it.
	Stale bool `json:"stale" yaml:"stale"`
}

// drillHeader is the part of a drill record status reads.
type drillHeader struct {
	ID         string    `json:"id"`
	Drill      string    `json:"drill"`
	Kind       string    `json:"kind"`
	Topology   string    `json:"topology"`
	Verdict    string    `json:"verdict"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	Reasons    []string  `json:"reasons"`
	Unfinished bool      `json:"unfinished"`
}

// at orders drill records: when the drill finished, or, for the record a
// disruptive drill stores when it starts, when it started.
func (h *drillHeader) at() time.Time {
	if h.FinishedAt.IsZero() || h.Unfinished {
		return h.StartedAt
	}
	return h.FinishedAt
}

// lastDrill reads the drills topic of every reachable cluster and returns
// the newest drill of topo, or nil when none was recorded.
func lastDrill(ctx context.Context, topo *topology.Topology, clients map[string]sarama.Client, now time.Time) *DrillStatus {
	f := drillFold{topology: topo.Name}
	for _, c := range clients {
		info, err := kafkaread.Topic(ctx, c, topology.DrillsTopic)
		if err != nil || !info.Exists {
			continue
		}
		_, _ = kafkaread.ReadCommitted(ctx, c, topology.DrillsTopic, 0, 0, func(r kafkaread.Record) error {
			f.add(r.Value)
			return nil
		})
	}
	return f.status(topo.Drills.StaleAfter, now)
}

// drillFold keeps, of the drill records it is given, the newest of its
// topology and when one last passed.
type drillFold struct {
	topology string
	last     *drillHeader
	lastPass time.Time
}

// decodeDrillHeader decodes the part of a drill record status reads; a
// record that names no drill or topology is refused.
func decodeDrillHeader(raw []byte) (drillHeader, error) {
	var h drillHeader
	if err := json.Unmarshal(raw, &h); err != nil {
		return drillHeader{}, err
	}
	if h.ID == "" || h.Topology == "" {
		return drillHeader{}, errors.New("drill record without an id or a topology")
	}
	return h, nil
}

// add folds one record of the drills topic (unreadable ones, and those of
// other topologies, are skipped).
func (f *drillFold) add(raw []byte) {
	h, err := decodeDrillHeader(raw)
	if err != nil || h.Topology != f.topology {
		return
	}
	if f.last == nil || h.at().After(f.last.at()) || (h.ID == f.last.ID && f.last.Unfinished && !h.Unfinished) {
		f.last = &h
	}
	if h.Verdict == "pass" && h.FinishedAt.After(f.lastPass) {
		f.lastPass = h.FinishedAt
	}
}

// status is the fold's DrillStatus at now, or nil when no drill was
// recorded and none is overdue.
func (f *drillFold) status(staleAfter time.Duration, now time.Time) *DrillStatus {
	st := &DrillStatus{}
	if last := f.last; last != nil {
		st = &DrillStatus{ID: last.ID, Drill: last.Drill, Kind: last.Kind, Verdict: last.Verdict, FinishedAt: last.FinishedAt, Reasons: last.Reasons,
			Unfinished: last.Unfinished, StartedAt: last.StartedAt}
	}
	if !f.lastPass.IsZero() {
		lp := f.lastPass
		st.LastPassAt = &lp
	}
	if staleAfter > 0 && (f.lastPass.IsZero() || now.Sub(f.lastPass) > staleAfter) {
		st.Stale = true
	}
	if f.last == nil && !st.Stale {
		return nil
	}
	return st
}

// drillProblems are status problems about drills: a failed last drill, and
// none passed within drills.stale_after.
func drillProblems(topo *topology.Topology, d *DrillStatus) []string {
	if d == nil {
		return nil
	}
	var out []string
	if d.Unfinished {
		return append(out, fmt.Sprintf("drill %s (%s) started at %s and recorded no result: it still runs, or it was killed with its changes in place; unless a drctl still runs it (drctl drill history), drctl resume puts back what it left",
			d.ID, d.Kind, d.StartedAt.UTC().Format(time.RFC3339)))
	}
	if d.ID != "" && d.Verdict != "pass" {
		why := ""
		if len(d.Reasons) > 0 {
			why = ": " + d.Reasons[0]
		}
		out = append(out, fmt.Sprintf("the last drill %s (%s) failed%s; see drctl drill report %s", d.ID, d.Kind, why, d.ID))
	}
	if d.Stale {
		since := "no drill has passed yet"
		if d.LastPassAt != nil {
			since = "the last passed at " + d.LastPassAt.UTC().Format(time.RFC3339)
		}
		out = append(out, fmt.Sprintf("no drill passed within drills.stale_after (%s): %s; run drctl drill run, or check drctl drill schedule", topo.Drills.StaleAfter, since))
	}
	return out
}
