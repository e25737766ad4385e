package mirror

import (
	"context"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// ensureInternalTopics creates, on the target, the shards topic and the
// offset-map topic of the link, and checks that the link's shard count did
// not change: a source partition must always be written under the same
// transactional id, so a new shard count needs every old id fenced first
// (linkstate.Reshard). An engine asked for no count (Options.Shards 0) takes the
// link's at its first start, and NewLinkShards of the selected source
// partitions for a new link; it runs runOnce one at a time, and nothing
// reads the count before this.
func (e *Engine) ensureInternalTopics(ctx context.Context, src, dst sarama.Client) error {
	shards := e.opts.Shards
	if shards == 0 {
		var err error
		if shards, err = e.newLinkShards(ctx, src, dst); err != nil {
			return err
		}
	}
	// The ends topic takes a whole view from every shard about once a
	// second, and the topic ledger a record per topic: keyed topics, whose
	// small segments let the cleaner keep them near one record per key
	// (readers start from the ends topic's end anyway, see latestEnds).
	specs := []topology.TopicSpec{
		topology.ExpiringTopic(e.link.ShardsTopic(), shards, time.Hour),
		topology.ExpiringTopic(e.link.OffsetsTopic(), shards, e.opts.OffsetsRetention),
		topology.KeyedTopic(e.link.EndsTopic(), 0),
		topology.KeyedTopic(e.link.TopicsTopic(), 0),
	}
	// One request and one wait for all four: a reseed's link starts on a
	// wiped cluster and creates them all while the failover waits.
	// CreateTopics answers before every broker's metadata has the new
	// topics; EnsureTopics waits until they show, or targetChange would
	// take a topic just created for one the target lost.
	if err := kafkaread.EnsureTopics(ctx, dst, specs...); err != nil {
		return fmt.Errorf("target %s: %w", e.link.Target, err)
	}
	ran, err := e.linkShards(dst)
	if err != nil {
		return err
	}
	if e.opts.Shards == 0 {
		e.opts.Shards, e.adopted = ran, true
		e.opts.shardSizes()
		e.log.Info("link runs with its shard count", "shards", ran)
	}
	if ran != e.opts.Shards {
		return &ShardCountError{Link: e.link, Ran: ran, Asked: e.opts.Shards, Adopted: e.adopted}
	}
	return nil
}

// ShardCountError is a link asked to run with another shard count than
// the one it ran with. It is a configuration mistake, not trouble with a
// cluster: Engine.Run and Daemon.Run return it instead of retrying.
// Adopted says the process was not asked for a count: it took Asked from
// the link at its start, and the link's count changed since (linkstate.Reshard).
type ShardCountError struct {
	Link       topology.Link
	Ran, Asked int32
	Adopted    bool
}

func (e *ShardCountError) Error() string {
	if e.Adopted {
		return fmt.Sprintf("link %s now has %d shards, this process started with %d: the shard count was changed (drctl mirror reshard); start drctl mirror run again",
			e.Link, e.Ran, e.Asked)
	}
	return fmt.Sprintf("link %s ran with %d shards, now asked for %d: run drctl mirror run without --shards (or with --shards %d) to keep its count, or change it with drctl mirror reshard --shards %d while no mirror process of the link runs",
		e.Link, e.Ran, e.Asked, e.Ran, e.Asked)
}

// newLinkShards is the count a link not asked for one starts with: the
// link's own when its shards topic exists (a process of the link created
// it meanwhile), else NewLinkShards of the source partitions the topology
// selects now.
func (e *Engine) newLinkShards(ctx context.Context, src, dst sarama.Client) (int32, error) {
	info, err := kafkaread.Topic(ctx, dst, e.link.ShardsTopic())
	if err != nil {
		return 0, fmt.Errorf("target %s: %w", e.link.Target, err)
	}
	if info.Exists && info.Partitions > 0 {
		return int32(info.Partitions), nil
	}
	admin, err := sarama.NewClusterAdminFromClient(src)
	if err != nil {
		return 0, fmt.Errorf("source %s: admin: %w", e.link.Source, err)
	}
	// Not closed: closing it would close src, which the caller owns.
	topics, err := kafkaread.ListTopics(admin)
	if err != nil {
		return 0, fmt.Errorf("source %s: list topics: %w", e.link.Source, err)
	}
	partitions := 0
	for name, t := range topics {
		if e.topo.Mirrors(name) {
			partitions += int(t.Partitions)
		}
	}
	n := NewLinkShards(partitions)
	e.log.Info("a new link: shard count from its source partitions", "partitions", partitions, "shards", n)
	return n, nil
}

// checkShardCount reads the link's shard count on the target again and
// returns a *ShardCountError when it is no longer the one the engine runs
// with.
func (e *Engine) checkShardCount(dst sarama.Client) error {
	ran, err := e.linkShards(dst)
	if err != nil {
		return err
	}
	if ran != e.opts.Shards {
		return &ShardCountError{Link: e.link, Ran: ran, Asked: e.opts.Shards, Adopted: e.adopted}
	}
	return nil
}

// linkShards returns the link's shard count as the target's fresh metadata
// has it: the partitions of its shards topic.
func (e *Engine) linkShards(dst sarama.Client) (int32, error) {
	if err := dst.RefreshMetadata(e.link.ShardsTopic()); err != nil {
		return 0, fmt.Errorf("target %s: metadata of %s: %w", e.link.Target, e.link.ShardsTopic(), err)
	}
	parts, err := dst.Partitions(e.link.ShardsTopic())
	if err != nil {
		return 0, fmt.Errorf("target %s: %s: %w", e.link.Target, e.link.ShardsTopic(), err)
	}
	return int32(len(parts)), nil
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
