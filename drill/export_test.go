package drill

import (
	"context"
	"testing"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// For the tests of package drill_test, which render records with
// drill/report (an import this package's own tests cannot make).

func NewTestPair(t *testing.T, extra string) *kfaketest.Pair { return newPair(t, extra) }

func StartTestMirror(t *testing.T, topo *topology.Topology) (stop func()) {
	return startMirror(t, topo)
}

// ReadDirectionLosses is the direction from -> to with the losses to
// source retention a failover drill's role change reads when its run ends.
func ReadDirectionLosses(ctx context.Context, topo *topology.Topology, from, to string) Direction {
	d := Direction{From: from, To: to}
	clusters := kafkaconn.Open(ctx, topo)
	defer clusters.Close()
	(&failoverDrill{topo: topo, clusters: clusters}).readLosses(ctx, &d)
	return d
}
