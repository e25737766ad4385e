package linkstate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/topology"
)

// Fence makes every mirror process of link unable to write into its
// target again, even one that is hung now and wakes up later: it
// initialises each shard's transactional id, and the group sync's
// (GroupsTransactionalID), on the target, which aborts the holder's open
// transaction and fails all its later calls.
//
// Contract with the caller (failover): record the new role state (its
// higher epoch) on the target BEFORE calling Fence. A fenced process
// can only write again by initialising its id anew, and a shard checks the
// target's role state right after every initialisation, so it then sees
// the new epoch and stops. It returns the number of shards fenced; a link
// that never ran on this target has nothing to fence (0, nil).
func Fence(ctx context.Context, clusters *kafkaconn.Clusters, link topology.Link) (int, error) {
	topo := clusters.Topology()
	dst := topo.Clusters[link.Target]
	if dst == nil {
		return 0, fmt.Errorf("fence %s: no cluster %q in topology %s", link, link.Target, topo.Name)
	}
	clusters.Connect(ctx, link.Target)
	client, err := clusters.Need(link.Target)
	if err != nil {
		return 0, fmt.Errorf("fence %s: %w", link, err)
	}
	if err := client.RefreshMetadata(link.ShardsTopic()); err != nil {
		if errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
			return 0, nil
		}
		return 0, fmt.Errorf("fence %s: metadata of %s on %s: %w", link, link.ShardsTopic(), link.Target, err)
	}
	parts, err := client.Partitions(link.ShardsTopic())
	if err != nil {
		if errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
			return 0, nil
		}
		return 0, fmt.Errorf("fence %s: %w", link, err)
	}
	// The offset map's partition count is the link's first shard count,
	// and Reshard never shrinks it: a process of a count the link had
	// before a shrink may still hold one of the ids above today's count.
	ids := int32(len(parts))
	if err := client.RefreshMetadata(link.OffsetsTopic()); err == nil {
		if op, err := client.Partitions(link.OffsetsTopic()); err == nil {
			ids = max(ids, int32(len(op)))
		}
	}
	for shard := range ids {
		if err := ctx.Err(); err != nil {
			return int(shard), fmt.Errorf("fence %s: stopped after %d of %d shards: %w", link, shard, ids, err)
		}
		if err := fenceID(dst, link.TransactionalID(shard)); err != nil {
			return int(shard), fmt.Errorf("fence %s: shard %d: %w", link, shard, err)
		}
	}
	if err := fenceID(dst, link.GroupsTransactionalID()); err != nil {
		return int(ids), fmt.Errorf("fence %s: group sync: %w", link, err)
	}
	return int(ids), nil
}

// fenceID initialises a transactional id and lets it go.
func fenceID(c *topology.Cluster, id string) error {
	cfg, err := c.SaramaConfig()
	if err != nil {
		return err
	}
	kafkaconn.CopyProducer(cfg)
	cfg.Producer.Transaction.ID = id
	cfg.Producer.Transaction.Timeout = 60 * time.Second
	p, err := sarama.NewAsyncProducer(c.Bootstrap, cfg)
	if err != nil {
		return fmt.Errorf("initialise transactional id %s on %s: %w", id, c.Name, err)
	}
	return p.Close()
}
