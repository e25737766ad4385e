package failover

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/mirror"
)

// TestRunReportsCarryLossesToRetention: records the source removed before
// the mirror copied them are in neither cluster; a run says so in its
// report: a planned failover's preflight result and an unplanned one's RPO
// step, with the count and the ranges, until an operator acknowledges them:
// a failover and a failback, whose wipe deletes the old link's bookkeeping
// on the cluster it re-seeds, keep the losses on record.
func TestRunReportsCarryLossesToRetention(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: fenceNoneYAML})
	topo := p.Topology
	kfaketest.CreateTopic(t, topo, "east", "orders", 1, nil)
	kfaketest.Produce(t, topo, "east", "orders", 10)
	// One pass of the engine copies the 10; with it stopped, 20 more
	// arrive and the first 25 are removed; the next pass records the loss.
	pass := func() {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		e, err := mirror.NewEngine(topo, "east", "west", mirror.Options{Epoch: -1, Shards: 2, TopicSyncInterval: 200 * time.Millisecond, IdleCheck: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		kfaketest.Wait(t, 30*time.Second, "the mirror caught up", func() (bool, string) {
			rep, err := linkstate.MeasureLag(kfaketest.Ctx(t, 10*time.Second), kfaketest.Session(t, topo), topo.Link("east", "west"))
			if err != nil {
				return false, err.Error()
			}
			return rep.TotalRecords == 0 && len(rep.Partitions) > 0, fmt.Sprintf("%d behind", rep.TotalRecords)
		})
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	pass()
	kfaketest.Produce(t, topo, "east", "orders", 20)
	admin, err := sarama.NewClusterAdminFromClient(kfaketest.Dial(t, topo, "east"))
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.DeleteRecords("orders", map[int32]int64{0: 25}); err != nil {
		t.Fatal(err)
	}
	pass()

	rep, err := inspect.MeasureRPO(kfaketest.Ctx(t, 20*time.Second), kfaketest.Session(t, topo), "east", "west")
	if err != nil || rep.LostRecords != 15 || len(rep.LostToRetention) != 1 {
		t.Fatalf("RPO report %+v %v; want the 15 records lost to retention", rep, err)
	}
	res, err := reportRPO(kfaketest.Ctx(t, 20*time.Second), kfaketest.Session(t, topo), linkParams{Source: "east", Target: "west"})
	if err != nil || !strings.Contains(res.Summary, "15 record(s) were lost to source retention") {
		t.Errorf("the unplanned run's RPO step says %q (%v); want the loss", res.Summary, err)
	}
	startMirror(t, topo, "east", "west")
	waitMirrored(t, topo, "east", "west")
	res, err = Preflight(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), planTo(t, topo, "west"))
	if err != nil || !strings.Contains(res.Summary, "15 record(s) of east->west were lost to source retention") || !strings.Contains(res.Summary, "drctl mirror ack-lost") {
		t.Errorf("the planned failover's preflight says %q (%v); want the loss and how to acknowledge it", res.Summary, err)
	}

	c := &confirmCounter{}
	if err := execute(t, topo, planTo(t, topo, "west"), t.TempDir(), c); err != nil {
		t.Fatalf("failover to west: %v", err)
	}
	waitMirrored(t, topo, "west", "east")
	back, err := PlanFailover(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), FailoverRequest{To: "east", Kind: rolestate.RunFailback})
	if err != nil {
		t.Fatal(err)
	}
	if err := execute(t, topo, back, t.TempDir(), c); err != nil {
		t.Fatalf("failback to east: %v", err)
	}
	lost, err := linkstate.ReadLost(kfaketest.Ctx(t, 10*time.Second), kfaketest.Dial(t, topo, "west"), topo.Link("east", "west"))
	if err != nil || linkstate.TotalLost(lost) != 15 {
		t.Errorf("after a failover and a failback the losses on record of east->west are %v (%v); want the 15, until acknowledged", lost, err)
	}
}
