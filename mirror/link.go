package mirror

import (
	"hash/fnv"
)

// DefaultShards is the number of shards of a link when the topology does
// not say. The shard count of a link is fixed once it has run: every source
// partition must always be written under the same transactional id.
const DefaultShards = 8

// Provenance headers carried by every mirrored record.
const (
	// HeaderOrigin holds the id of the cluster the record was first
	// produced on.
	HeaderOrigin = "drctl.o"
	// HeaderSourceOffset holds the record's offset in the source
	// partition of the hop that wrote it, 8 bytes big-endian.
	HeaderSourceOffset = "drctl.s"
)

// ShardOf maps a source partition to a shard. The mapping depends only on
// the topic name, the partition and the shard count, so it is the same in
// every process and every restart; consecutive partitions of a topic land
// on different shards.
func ShardOf(topic string, partition int32, shards int32) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(topic))
	return int32((uint64(h.Sum32()) + uint64(partition)) % uint64(shards))
}
