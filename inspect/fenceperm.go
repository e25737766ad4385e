package inspect

import (
	"context"
	"fmt"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// FencePermission returns a problem when the acl fence is configured and
// drctl's principal may not Alter (create and delete ACLs) on cluster
// name, whose client is c; "" when it may, when another fence is used, or
// when the brokers do not report permissions (drctl validate warns then).
func FencePermission(ctx context.Context, topo *topology.Topology, name string, c sarama.Client) string {
	if topo.Failover.Fence != topology.FenceACL {
		return ""
	}
	md, _, err := kafkaread.AnyBrokerMetadata(ctx, c, &sarama.MetadataRequest{Version: 10, IncludeClusterAuthorizedOperations: true})
	if err != nil {
		return fmt.Sprintf("cannot read drctl's permissions on %s: %v", name, err)
	}
	if md.ClusterAuthorizedOperations == opsNotProvided || len(missingOps(md.ClusterAuthorizedOperations, opAlter)) == 0 {
		return ""
	}
	return fmt.Sprintf("fence acl: drctl's principal may not Alter the cluster %s, so it cannot create or remove the fence ACLs; grant it Alter on the cluster (kafka-acls --add --operation Alter --cluster), make it a super user, or choose another failover.fence", name)
}
