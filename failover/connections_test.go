package failover

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/mirror"
	"github.com/drctl/drctl/topology"
)

// TestFailoverConnections counts the TCP connections one planned failover
// opens to the clusters, as drctl failover makes it: one session, the plan
// and the whole run through it (the mirror beside it counted apart, by its
// own client id). Each step, each record of the run's progress and each
// look at the drain used to open its own;
// now the session's clients and producers are opened once, and what is
// left is the role state's compare-and-set producers, the lease's claims
// and the topic creations' controller connections.
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
	clusters := kafkaconn.Open(pctx, topo)
	plan, err := PlanFailover(pctx, clusters, FailoverRequest{To: "west"})
	pcancel()
	if err != nil {
		t.Fatal(err)
	}
	planned := conns.ByClient(id)
	rctx, rcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer rcancel()
	if err := Execute(rctx, clusters, plan, RunOptions{JournalDir: t.TempDir(), Confirm: func(string) error { return nil }}); err != nil {
		t.Fatalf("failover: %v", err)
	}
	clusters.Close()
	ran := conns.ByClient(id)
	t.Logf("connections of client id %q: the session and the plan %d, the run %d, in all %d (the mirror's meanwhile: %d)",
		id, planned-before, ran-planned, ran-before, conns.ByClient("mirror-under-test"))
	if planned-before > 2*perClient {
		t.Errorf("making the plan opened %d connections; one session opens %d (one client per cluster)", planned-before, 2*perClient)
	}
	if n := ran - before; n > maxFailoverConnections {
		t.Errorf("one planned failover opened %d connections, more than %d", n, maxFailoverConnections)
	}
}

// perClient is what one sarama client of a one-broker kfake cluster opens:
// the bootstrap connection and the connection to the broker by its id.
const perClient = 2

// maxFailoverConnections bounds the connections of one planned failover
// of this test, with some headroom for retries (docs/failover.md has the
// figures).
const maxFailoverConnections = 50
