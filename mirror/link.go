package mirror

import (
	"fmt"
	"hash/fnv"

	"github.com/drctl/drctl/offsettranslate"
	"github.com/drctl/drctl/topology"
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

// Link is one direction of mirroring: Source to Target, for a topology.
type Link struct {
	Topology string
	Source   string
	Target   string
}

func (l Link) String() string { return l.Source + "->" + l.Target }

func (l Link) prefix() string { return fmt.Sprintf("_drctl.%s.%s-%s", l.Topology, l.Source, l.Target) }

// ShardsTopic is the internal topic on the target whose partitions stand
// for the link's shards: mirror workers share shards by consuming it in
// one consumer group (no data is ever written to it). Its partition count
// is the link's shard count.
func (l Link) ShardsTopic() string { return l.prefix() + ".shards" }

// WorkersGroup is the consumer group on the target in which the mirror
// processes of the link share its shards.
func (l Link) WorkersGroup() string { return l.prefix() + ".workers" }

// ProgressGroup is the consumer group on the target whose committed
// offsets are the link's progress: for each source partition (named by
// its topic and partition) the next source offset to copy. They are
// committed in the same transaction as the data.
func (l Link) ProgressGroup() string { return l.prefix() + ".progress" }

// OffsetsTopic is the internal topic on the target holding the offset map.
func (l Link) OffsetsTopic() string {
	return offsettranslate.TopicName(l.Topology, l.Source, l.Target)
}

// TransactionalID names shard's transactional id. Initialising it fences
// every earlier holder.
func (l Link) TransactionalID(shard int32) string {
	return fmt.Sprintf("drctl.%s.%s-%s.%d", l.Topology, l.Source, l.Target, shard)
}

// LinkFor returns the link that copies from source to target.
func LinkFor(topo *topology.Topology, source, target string) Link {
	return Link{Topology: topo.Name, Source: source, Target: target}
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

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string `json:"topic" yaml:"topic"`
	Partition int32  `json:"partition" yaml:"partition"`
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s/%d", tp.Topic, tp.Partition) }

// InternalTopics lists the link's internal topics on its target.
func (l Link) InternalTopics() []string {
	return []string{l.ShardsTopic(), l.OffsetsTopic(), l.GroupsTopic(), l.EndsTopic(), l.TopicsTopic()}
}

// InternalGroups lists the link's internal consumer groups on its target.
func (l Link) InternalGroups() []string {
	return []string{l.WorkersGroup(), l.ProgressGroup()}
}
