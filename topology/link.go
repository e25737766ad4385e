package topology

import "fmt"

// Link is one direction of mirroring: Source to Target, for a topology. Its
// methods name the internal topics, consumer groups and transactional ids
// that the mirror and its group sync keep on the target; every process and
// every drctl version derives the same names from the same link.
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

// OffsetsTopic is the internal topic on the target holding the offset map
// (the same name as offsettranslate.TopicName).
func (l Link) OffsetsTopic() string { return l.prefix() + ".offsets" }

// GroupsTopic is the compacted internal topic on the target that holds the
// link's snapshot of the source groups' committed offsets (see package
// mirror/groupsync).
//
//	Link{"payments", "east", "west"}.GroupsTopic() == "_drctl.payments.east-west.groups"
func (l Link) GroupsTopic() string { return l.prefix() + ".groups" }

// EndsTopic is the compacted internal topic on the target in which each
// shard records, about once a second, the source end offsets it last saw
// and how far it had mirrored: after an unplanned failover it is what the
// recovery point (RPO) is computed from, the source being gone.
func (l Link) EndsTopic() string { return l.prefix() + ".ends" }

// TopicsTopic is the compacted internal topic on the target in which the
// link records, per mirrored topic, which source incarnation (topic id) its
// copy holds and whether drctl created the target topic. It is what lets
// the mirror tell a topic deleted or recreated on the source from one it
// never saw, across restarts and processes.
func (l Link) TopicsTopic() string { return l.prefix() + ".topics" }

// TransactionalID names shard's transactional id. Initialising it fences
// every earlier holder.
func (l Link) TransactionalID(shard int32) string {
	return fmt.Sprintf("drctl.%s.%s-%s.%d", l.Topology, l.Source, l.Target, shard)
}

// GroupsTransactionalID names the transactional id through which the
// link's continuous group sync commits group offsets on the target.
// Fencing a link initialises it with the shards' ids, so a group sync that
// hung across a failover can never commit an older translation afterwards.
func (l Link) GroupsTransactionalID() string {
	return fmt.Sprintf("drctl.%s.%s-%s.groups", l.Topology, l.Source, l.Target)
}

// InternalTopics lists the link's internal topics on its target.
func (l Link) InternalTopics() []string {
	return []string{l.ShardsTopic(), l.OffsetsTopic(), l.GroupsTopic(), l.EndsTopic(), l.TopicsTopic()}
}

// InternalGroups lists the link's internal consumer groups on its target.
func (l Link) InternalGroups() []string {
	return []string{l.WorkersGroup(), l.ProgressGroup()}
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string `json:"topic" yaml:"topic"`
	Partition int32  `json:"partition" yaml:"partition"`
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s/%d", tp.Topic, tp.Partition) }
