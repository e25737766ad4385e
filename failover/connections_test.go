package failover

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/drctl/drctl/internal/kfaketest"
	"github.com/drctl/drctl/mirror"
	"github.com/drctl/drctl/topology"
)

// TestFailoverConnections counts the TCP connections one planned failover
// opens to the clusters (the mirror beside it counted apart, by its own
// client id).
func TestFailoverConnections(t *testing.T) {
	conns := kfaketest.NewConns()
	p := kfaketest.NewPair(t, kfaketest.Options{
		ClusterOpts: []kfake.Opt{conns.Opt()},
		Mirror:      "  topics: {include: [\"orders\"]}\n  groups: {include: [\"billing\"]}\n  group_sync_interval: 500ms",
		Extra:       "failover: {fence: none, drain_timeout: 30s, quiet_period: 300ms}\n",
	})
	topo := p.Topology
	kfaketest.Seed(t, topo, "east", "orders", 4, 40, "billing", 20)

	mt := *topo
	mt.Clusters = map[string]*topology.Cluster{}
	for name, c := range topo.Clusters {
		mc := *c
		mc.ClientID = "mirror-under-test"
		mt.Clusters[name] = &mc
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := mirror.NewDaemon(&mt, mirror.DaemonOptions{StatePoll: 200 * time.Millisecond,
		Engine: mirror.Options{Shards: 2, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond}})
	dDone := make(chan error, 1)
	go func() { dDone <- d.Run(ctx) }()
	defer func() { cancel(); <-dDone }()
	waitMirrored(t, topo, "east", "west")

	id := topo.Clusters["east"].ClientID
	before := conns.ByClient(id)
	pctx, pcancel := context.WithTimeout(ctx, 30*time.Second)
	plan, err := PlanFailover(pctx, topo, FailoverRequest{To: "west"})
	pcancel()
	if err != nil {
		t.Fatal(err)
	}
	planned := conns.ByClient(id)
	rctx, rcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer rcancel()
	if err := Execute(rctx, topo, plan, RunOptions{JournalDir: t.TempDir(), Confirm: func(string) error { return nil }}); err != nil {
		t.Fatalf("failover: %v", err)
	}
	ran := conns.ByClient(id)
	t.Logf("connections of client id %q: plan %d, run %d (the mirror's: %d)", id, planned-before, ran-planned, conns.ByClient("mirror-under-test"))
}
