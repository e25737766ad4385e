package mirror

import (
	"hash/fnv"
)

// DefaultShards is the most shards a new link gets when it is not given a
// count (NewLinkShards). A link keeps its count once it has run: every
// source partition must always be written under the same transactional id,
// and only linkstate.Reshard changes it.
const DefaultShards = 8

// Shard counts of a new link not given one: one shard per
// PartitionsPerShard selected source partitions, at least MinShards and at
// most DefaultShards. Each shard commits transactions of its own, so a
// small link copies with lower latency in a few larger transactions (on
// the 2-core bench machine 12 partitions at 5,000 records/s had a median of
// 16-19 ms with 2 shards and 35-43 ms with 8), while thousands of
// partitions start and restart faster over more shards (10,000 partitions
// were all copying again 11-16 s after a restart with 8 shards, 31 s with
// 2): bench/results/diary.md.
const (
	MinShards          = 2
	PartitionsPerShard = 100
)

// NewLinkShards is the shard count a new link starts with when it is not
// given one: see MinShards.
func NewLinkShards(partitions int) int32 {
	return int32(min(DefaultShards, max(MinShards, (partitions+PartitionsPerShard-1)/PartitionsPerShard)))
}

// ShardOf maps a source partition to a shard. The mapping depends only on
// the topic name, the partition and the shard count, so it is the same in
// every process and every restart; consecutive partitions of a topic land
// on different shards.
func ShardOf(topic string, partition int32, shards int32) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(topic))
	return int32((uint64(h.Sum32()) + uint64(partition)) % uint64(shards))
}
