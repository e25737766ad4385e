package failover

import (
	"testing"
	"time"

	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfakefault"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestRollbackWaitsForABrokerThatListsNoneAlive: a drain that timed out
// because the standby hung restores the roles as soon as the standby
// answers again. On Kafka 4.1.1, a broker resumed after a pause longer
// than its controller session first answers metadata listing no broker
// and no leader; the rollback took that for a final error ("open
// transactional producer: You must provide at least one broker address")
// and left both clusters failing-over (CI, TestBrokerHungDuringDrainRealKafka).
// It must wait such answers out and restore the roles on both clusters.
func TestRollbackWaitsForABrokerThatListsNoneAlive(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML})
	topo := p.Topology
	run := &rolestate.Run{ID: "failover-test-rollback", Kind: rolestate.RunFailover, StartedAt: time.Now()}
	draining := rolestate.State{Topology: topo.Name, Epoch: 1, Active: "east", Standby: "west", Phase: rolestate.PhaseFailingOver, Run: run}
	setState(t, topo, 0, draining, "west", "east")

	// The standby's answers to look-ups of topics list no broker for a
	// while, as a resumed KRaft broker's do until it has registered again
	// (in CI the client connected, then its look-ups of the state topic
	// were answered so).
	brokerless := kfakefault.NoLiveBroker(p.West, 6)

	restored := rolestate.State{Topology: topo.Name, Epoch: 2, Active: "east", Standby: "west", Phase: rolestate.PhaseSteady}
	ctx := kfaketest.Ctx(t, 45*time.Second)
	if err := restoreRoles(ctx, kfaketest.Session(t, topo), stateParams{State: restored, Clusters: []string{"west", "east"}}, run.ID); err != nil {
		t.Fatalf("restore the roles: %v", err)
	}
	if n := brokerless.Load(); n > 0 {
		t.Fatalf("only %d of 6 brokerless answers were asked for: the test did not exercise them", 6-n)
	}
	for _, c := range []string{"west", "east"} {
		got, found, err := rolestate.Read(ctx, kfaketest.Dial(t, topo, c), topo.Name)
		if err != nil || !found || !sameState(got, restored) {
			t.Errorf("%s holds %+v (found %v, %v), want %s", c, got, found, err, restored)
		}
	}
}
