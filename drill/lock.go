package drill

import (
	"context"
	"time"

	"github.com/drctl/drctl/internal/drilllease"
	"github.com/drctl/drctl/internal/kafkaconn"
)

// NewHolder returns a name for this process that no other process uses.
func NewHolder() string { return drilllease.NewHolder() }

// Acquire takes the drills' lease of key on the topology's home active
// cluster for ttl (drilllease.Acquire), or returns an error wrapping
// drilllease.ErrLocked that names the holder.
func Acquire(ctx context.Context, clusters *kafkaconn.Clusters, key, holder string, ttl time.Duration) (*drilllease.Lease, error) {
	return AcquireFor(ctx, clusters, key, holder, "", ttl)
}

// AcquireFor is Acquire with a description of what holds the lease ("drill
// NAME (ID)"), which a refused failover names.
func AcquireFor(ctx context.Context, clusters *kafkaconn.Clusters, key, holder, what string, ttl time.Duration) (*drilllease.Lease, error) {
	return drilllease.Acquire(ctx, clusters, clusters.Topology().Active, key, holder, what, ttl)
}
