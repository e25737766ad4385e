package drill

import (
	"context"
	"fmt"
	"time"

	"github.com/drctl/drctl/internal/drilllease"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/topology"
)

// claim is one record of the locks topic.
type claim = drilllease.Claim

// Lock is a lease of the locks topic on the topology's home active cluster
// (the protocol: drilllease.Take).
type Lock struct {
	topo   *topology.Topology
	Key    string
	Holder string
	// Drill names what holds the lease, for whoever it refuses.
	Drill string
}

// NewHolder returns a name for this process that no other process uses.
func NewHolder() string { return drilllease.NewHolder() }

// Acquire takes the lease of key for ttl, or returns an error wrapping
// drilllease.ErrLocked that names the holder.
func Acquire(ctx context.Context, topo *topology.Topology, key, holder string, ttl time.Duration) (*Lock, error) {
	return AcquireFor(ctx, topo, key, holder, "", ttl)
}

// AcquireFor is Acquire with a description of what holds the lease ("drill
// NAME (ID)"), which a refused failover names.
func AcquireFor(ctx context.Context, topo *topology.Topology, key, holder, what string, ttl time.Duration) (*Lock, error) {
	c, err := kafkaconn.Dial(ctx, topo.Clusters[topo.Active], nil)
	if err != nil {
		return nil, fmt.Errorf("drill lock on %s: %w", topo.Active, err)
	}
	defer c.Close()
	now := time.Now().UTC()
	if err := drilllease.Take(ctx, c, topo.Clusters[topo.Active], claim{Key: key, Holder: holder, Drill: what, At: now, Expires: now.Add(ttl)}); err != nil {
		return nil, err
	}
	return &Lock{topo: topo, Key: key, Holder: holder, Drill: what}, nil
}

// Release ends the lease (best effort: an unreleased lease expires).
func (l *Lock) Release(ctx context.Context) error {
	c, err := kafkaconn.Dial(ctx, l.topo.Clusters[l.topo.Active], nil)
	if err != nil {
		return err
	}
	defer c.Close()
	return drilllease.Give(ctx, c, l.topo.Clusters[l.topo.Active], l.Key, l.Holder, l.Drill)
}
