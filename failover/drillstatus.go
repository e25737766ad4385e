package failover

import (
	"context"
	"encoding/json"
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
	FinishedAt time.Time `json:"finished_at"`
	Reasons    []string  `json:"reasons"`
}

// lastDrill reads the drills topic of every reachable cluster and returns
// the newest drill of topo, or nil when none was recorded.
func lastDrill(ctx context.Context, topo *topology.Topology, clients map[string]sarama.Client, now time.Time) *DrillStatus {
	var last *drillHeader
	var lastPass time.Time
	for _, c := range clients {
		info, err := kafkaread.Topic(ctx, c, topology.DrillsTopic)
		if err != nil || !info.Exists {
			continue
		}
		_, _ = kafkaread.ReadCommitted(ctx, c, topology.DrillsTopic, 0, 0, func(r kafkaread.Record) error {
			var h drillHeader
			if json.Unmarshal(r.Value, &h) != nil || h.Topology != topo.Name {
				return nil
			}
			if last == nil || h.FinishedAt.After(last.FinishedAt) {
				last = &h
			}
			if h.Verdict == "pass" && h.FinishedAt.After(lastPass) {
				lastPass = h.FinishedAt
			}
			return nil
		})
	}
	st := &DrillStatus{}
	if last != nil {
		st = &DrillStatus{ID: last.ID, Drill: last.Drill, Kind: last.Kind, Verdict: last.Verdict, FinishedAt: last.FinishedAt, Reasons: last.Reasons}
	}
	if !lastPass.IsZero() {
		st.LastPassAt = &lastPass
	}
	if age := topo.Drills.StaleAfter; age > 0 && (lastPass.IsZero() || now.Sub(lastPass) > age) {
		st.Stale = true
	}
	if last == nil && !st.Stale {
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
