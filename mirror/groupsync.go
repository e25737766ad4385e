package mirror

import (
	"context"
	"slices"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/mirror/groupsync"
)

// groupSyncShard is the shard whose owner runs the link's group sync: one
// process of the link syncs groups, and the worker group moves the duty
// with the shard when that process dies.
const groupSyncShard int32 = 0

// syncGroups runs the link's continuous group sync (package groupsync)
// until ctx ends, on the engine's clients, which it does not close.
func (e *Engine) syncGroups(ctx context.Context, src, dst sarama.Client) {
	groupsync.Run(ctx, e.groupSyncConfig(src, dst))
}

// groupSyncConfig is what the group sync takes from the engine: its
// clients, shard 0 as the duty, the role check of a link that runs under
// an epoch, the transactional producer settings and the metrics.
func (e *Engine) groupSyncConfig(src, dst sarama.Client) groupsync.Config {
	cfg := groupsync.Config{
		Topology: e.topo, Link: e.link, Source: src, Target: dst,
		Leading:        func() bool { return slices.Contains(e.OwnedShards(), groupSyncShard) },
		ProducerConfig: kafkaconn.CopyProducer,
		Metrics:        e.metrics.GroupSync, Errors: e.metrics.Errors, Log: e.log,
	}
	if e.opts.Epoch >= 0 {
		cfg.Allowed = e.opts.Allowed
	}
	return cfg
}
