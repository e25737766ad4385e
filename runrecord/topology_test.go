package runrecord

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kvstore"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

// TestRunsOfOneTopology: clusters shared by two topologies hold both
// topologies' runs in one runs topic; List and Load give only the
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
		raw, err := json.Marshal(Record{Plan: p, Done: []bool{true, false}, Started: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := kvstore.Put(ctx, east, topology.RunsTopic, id, raw); err != nil {
			t.Fatal(err)
		}
	}
	put("failover-mine", "test")
	put("failover-other", "other")
	clusters := kafkaconn.Open(ctx, topo)
	defer clusters.Close()
	runs, err := List(ctx, clusters)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Plan.ID != "failover-mine" {
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.Plan.ID)
		}
		t.Fatalf("List of topology test: %q, want only failover-mine", ids)
	}
	if rec := Load(ctx, clusters, "failover-other"); rec != nil {
		t.Fatal("Load of topology test found the other topology's run")
	}
	if rec := Load(ctx, clusters, "failover-mine"); rec == nil {
		t.Fatal("Load did not find the topology's own run")
	}
}

// TestPutAndLoad: Put writes the record to every reachable cluster, and a
// session that reaches only one of them loads it back; with no cluster
// reachable Put fails naming why.
func TestPutAndLoad(t *testing.T) {
	pair := kfaketest.NewPair(t, kfaketest.Options{})
	topo := pair.Topology
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := plans.New("failover-put", "failover")
	if err := p.SetInputs(map[string]any{"topology": topo.Name}); err != nil {
		t.Fatal(err)
	}
	for _, st := range []plans.StepSpec{{Name: "preflight", Title: "Check"}, {Name: StepFlip, Title: "Flip", PointOfNoReturn: true}} {
		if err := p.Add(st); err != nil {
			t.Fatal(err)
		}
	}
	clusters := kafkaconn.Open(ctx, topo)
	defer clusters.Close()
	if err := Put(ctx, clusters, &Record{Plan: p, Done: []bool{true, false}, Started: 1}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"east", "west"} {
		one := kafkaconn.Open(ctx, topo, name)
		rec := Load(ctx, one, p.ID)
		one.Close()
		if rec == nil || !rec.Done[0] || rec.Started != 1 {
			t.Errorf("the record read back from %s alone: %+v", name, rec)
		}
	}
	closed := kafkaconn.Open(ctx, topo)
	closed.Close()
	if err := Put(ctx, closed, &Record{Plan: p, Done: []bool{true, true}, Started: 1}); err == nil || !strings.Contains(err.Error(), "no cluster") {
		t.Errorf("Put with no cluster reachable: %v", err)
	}
}

// TestPointOfNoReturnOfAnOldPlan: a plan saved before steps carried the
// mark has its point of no return at the step of that name (the flip, a
// reseed's wipe); a marked plan at its mark.
func TestPointOfNoReturnOfAnOldPlan(t *testing.T) {
	build := func(kind string, mark bool) *plans.Plan {
		p := plans.New("run", kind)
		for _, st := range []plans.StepSpec{{Name: "preflight", Title: "Check"}, {Name: StepWipe, Title: "Wipe"}, {Name: StepFlip, Title: "Flip", PointOfNoReturn: mark}} {
			if err := p.Add(st); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	for _, c := range []struct {
		kind string
		mark bool
		want int
	}{{"failover", false, 2}, {"reseed", false, 1}, {"reseed", true, 2}, {"failover", true, 2}} {
		if got := PointOfNoReturn(build(c.kind, c.mark)); got != c.want {
			t.Errorf("%s plan (marked %v): point of no return at step %d, want %d", c.kind, c.mark, got, c.want)
		}
	}
}
