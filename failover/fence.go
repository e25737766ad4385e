package failover

import (
	"context"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/aclfence"
	"github.com/drctl/drctl/topology"
)

// Fence adds and verifies drctl's DENY WRITE ACLs on cluster (see
// aclfence.Fence).
func Fence(ctx context.Context, topo *topology.Topology, cluster string) (*aclfence.Record, error) {
	return aclfence.Fence(ctx, topo, cluster)
}

// Unfence removes exactly the ACLs drctl's fence added (see
// aclfence.Unfence).
func Unfence(ctx context.Context, topo *topology.Topology, cluster string) ([]aclfence.ACL, error) {
	return aclfence.Unfence(ctx, topo, cluster)
}

func fencePrincipals(topo *topology.Topology) []string { return aclfence.Principals(topo) }

func mirroredTopicNames(admin sarama.ClusterAdmin, topo *topology.Topology) ([]string, error) {
	return aclfence.MirroredTopicNames(admin, topo)
}
