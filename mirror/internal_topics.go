package mirror

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// ensureInternalTopics creates, on the target, the shards topic and the
// offset-map topic of the link, and checks that the link's shard count did
// not change: a source partition must always be written under the same
// transactional id, so a new shard count needs every old id fenced first.
func (e *Engine) ensureInternalTopics(ctx context.Context, dst sarama.Client) error {
	rf := max(int16(min(3, len(dst.Brokers()))), 1)
	retention := strconv.FormatInt(e.opts.OffsetsRetention.Milliseconds(), 10)
	// The ends topic takes a whole view from every shard about once a
	// second: small segments let the cleaner keep it near one record per
	// shard (readers start from its end anyway, see latestEnds).
	compacted := map[string]*string{"cleanup.policy": new("compact"), "segment.bytes": new("8388608"),
		"segment.ms": new("600000"), "min.cleanable.dirty.ratio": new("0.1")}
	topics := map[string]*sarama.TopicDetail{
		e.link.ShardsTopic(): {NumPartitions: e.opts.Shards, ReplicationFactor: rf,
			ConfigEntries: map[string]*string{"retention.ms": new("3600000")}},
		e.link.OffsetsTopic(): {NumPartitions: e.opts.Shards, ReplicationFactor: rf,
			ConfigEntries: map[string]*string{"cleanup.policy": new("delete"), "retention.ms": &retention}},
		e.link.EndsTopic():   {NumPartitions: 1, ReplicationFactor: rf, ConfigEntries: compacted},
		e.link.TopicsTopic(): {NumPartitions: 1, ReplicationFactor: rf, ConfigEntries: compacted},
	}
	// One request and one wait for all four: a reseed's link starts on a
	// wiped cluster and creates them all while the failover waits.
	if err := kafkaread.CreateTopics(ctx, dst, topics); err != nil {
		return fmt.Errorf("target %s: %w", e.link.Target, err)
	}
	// CreateTopics answers before every broker's metadata has the new
	// topics; until they show, targetChange would take a topic just
	// created for one the target lost.
	if err := kafkaread.AwaitLeaders(ctx, dst, 30*time.Second, slices.Collect(maps.Keys(topics))...); err != nil {
		return fmt.Errorf("target %s: %w", e.link.Target, err)
	}
	if err := dst.RefreshMetadata(e.link.ShardsTopic()); err != nil {
		return fmt.Errorf("target %s: metadata of %s: %w", e.link.Target, e.link.ShardsTopic(), err)
	}
	parts, err := dst.Partitions(e.link.ShardsTopic())
	if err != nil {
		return fmt.Errorf("target %s: %s: %w", e.link.Target, e.link.ShardsTopic(), err)
	}
	if int32(len(parts)) != e.opts.Shards {
		return &ShardCountError{Link: e.link, Ran: int32(len(parts)), Asked: e.opts.Shards}
	}
	return nil
}

// ShardCountError is a link asked to run with another shard count than
// the one it ran with. It is a configuration mistake, not trouble with a
// cluster: Engine.Run and Daemon.Run return it instead of retrying.
type ShardCountError struct {
	Link       topology.Link
	Ran, Asked int32
}

func (e *ShardCountError) Error() string {
	return fmt.Sprintf("link %s ran with %d shards, now asked for %d: run drctl mirror run with --shards %d (a link keeps its shard count), or fence the link (drctl fence) and delete %s on %s first",
		e.Link, e.Ran, e.Asked, e.Ran, e.Link.ShardsTopic(), e.Link.Target)
}

// offsetsPartitions returns the partition count of the offset-map topic.
func (e *Engine) offsetsPartitions(ctx context.Context, dst sarama.Client) (int32, error) {
	if err := dst.RefreshMetadata(e.link.OffsetsTopic()); err != nil {
		return 0, fmt.Errorf("target %s: metadata of %s: %w", e.link.Target, e.link.OffsetsTopic(), err)
	}
	parts, err := dst.Partitions(e.link.OffsetsTopic())
	if err != nil || len(parts) == 0 {
		return 0, fmt.Errorf("target %s: %s has no partitions: %v", e.link.Target, e.link.OffsetsTopic(), err)
	}
	return int32(len(parts)), ctx.Err()
}

//go:fix inline
