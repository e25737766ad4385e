package topology

import (
	"strconv"
	"time"
)

// TopicSpec is how drctl creates a topic of its own: its partitions and
// configs. Its replicas are InternalReplicas of the cluster's brokers.
type TopicSpec struct {
	Name       string
	Partitions int32
	Configs    map[string]string
}

// InternalReplicas is the replication factor of every topic drctl creates
// for itself on a cluster of brokers brokers: three where the cluster
// allows it, never more than it has, at least one.
func InternalReplicas(brokers int) int16 {
	return int16(max(1, min(3, brokers)))
}

// KeyedTopic is the spec of an internal topic that keeps the latest record
// per key (role state, fence and run records, a link's ends and topic
// ledger, group snapshots): one partition, compacted, with small segments
// so the cleaner keeps it near one record per key (readers start from its
// beginning or end). maxBytes, when above zero, raises the topic's
// max.message.bytes for records larger than the broker's default.
func KeyedTopic(name string, maxBytes int) TopicSpec {
	s := TopicSpec{Name: name, Partitions: 1, Configs: map[string]string{
		"cleanup.policy": "compact", "segment.bytes": "8388608", "segment.ms": "600000", "min.cleanable.dirty.ratio": "0.1"}}
	if maxBytes > 0 {
		s.Configs["max.message.bytes"] = strconv.Itoa(maxBytes)
	}
	return s
}

// ExpiringTopic is the spec of an internal topic whose records matter for
// a while only (leases, canaries, a link's shard claims and offset map):
// partitions partitions, deleted after retention.
func ExpiringTopic(name string, partitions int32, retention time.Duration) TopicSpec {
	return TopicSpec{Name: name, Partitions: partitions, Configs: map[string]string{
		"cleanup.policy": "delete", "retention.ms": strconv.FormatInt(retention.Milliseconds(), 10)}}
}

// DrillLocksRetention bounds the claims the drill locks topic keeps: a
// lease lives far shorter.
const DrillLocksRetention = 24 * time.Hour
