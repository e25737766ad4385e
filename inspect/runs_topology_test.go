package inspect

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/kfaketest"
	"github.com/drctl/drctl/internal/kvstore"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

// TestRunsOfOneTopology: clusters shared by two topologies hold both
// topologies' runs in one runs topic; ListRuns and LoadRun give only the
// runs of the topology they were asked for (an unfinished failover of
// another topology is not this one's).
func TestRunsOfOneTopology(t *testing.T) {
	pair := kfaketest.NewPair(t, kfaketest.Options{})
	topo := pair.Topology // named "test"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	east := kfaketest.Dial(t, topo, "east")
	put := func(id, topoName string) {
		p := plans.New(id, "failover")
		if err := p.SetInputs(map[string]any{"topology": topoName, "to": "west"}); err != nil {
			t.Fatal(err)
		}
		for _, st := range []plans.StepSpec{{Name: "preflight", Title: "Check"}, {Name: StepFlip, Title: "Flip"}} {
			if err := p.Add(st); err != nil {
				t.Fatal(err)
			}
		}
		raw, err := json.Marshal(RunRecord{Plan: p, Done: []bool{true, false}, Started: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := kvstore.Put(ctx, east, topology.RunsTopic, id, raw); err != nil {
			t.Fatal(err)
		}
	}
	put("failover-mine", "test")
	put("failover-other", "other")
	runs, err := ListRuns(ctx, topo)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Plan.ID != "failover-mine" {
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.Plan.ID)
		}
		t.Fatalf("ListRuns of topology test: %q, want only failover-mine", ids)
	}
	if rec, _ := LoadRun(ctx, topo, "failover-other"); rec != nil {
		t.Fatal("LoadRun of topology test found the other topology's run")
	}
	if rec, _ := LoadRun(ctx, topo, "failover-mine"); rec == nil {
		t.Fatal("LoadRun did not find the topology's own run")
	}
}
