package failover

import (
	"context"
	"fmt"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/aclfence"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/topology"
)

// Fence adds and verifies drctl's DENY WRITE ACLs on cluster (see
// aclfence.Fence).
func Fence(ctx context.Context, clusters *kafkaconn.Clusters, cluster string) (*aclfence.Record, error) {
	topo := clusters.Topology()
	w := within(ctx, clusters, cluster)
	defer w.Close()
	client, err := w.Need(cluster)
	if err != nil {
		return nil, fmt.Errorf("fence: %w", err) // the error names the cluster
	}
	return aclfence.Fence(ctx, client, topo, cluster)
}

// Unfence removes exactly the ACLs drctl's fence added (see
// aclfence.Unfence).
func Unfence(ctx context.Context, clusters *kafkaconn.Clusters, cluster string) ([]aclfence.ACL, error) {
	topo := clusters.Topology()
	w := within(ctx, clusters, cluster)
	defer w.Close()
	client, err := w.Need(cluster)
	if err != nil {
		return nil, fmt.Errorf("unfence: %w", err) // the error names the cluster
	}
	return aclfence.Unfence(ctx, client, topo, cluster)
}

func fencePrincipals(topo *topology.Topology) []string { return aclfence.Principals(topo) }

func mirroredTopicNames(admin sarama.ClusterAdmin, topo *topology.Topology) ([]string, error) {
	return aclfence.MirroredTopicNames(admin, topo)
}
