package topology

// This file is drctl's name registry: every topic, consumer group,
// transactional id and record header drctl creates on a cluster is named
// here, and every rule
// that decides whether a topic or a group is drctl's own (never mirrored,
// synced, fenced, translated or listed as a user's) is decided here. A
// package that needs such a name or such a rule asks this file; it never
// spells a prefix or a suffix itself.

import (
	"cmp"
	"fmt"
	"strings"
)

// Topics drctl keeps on both clusters, one per purpose, shared by every
// topology (records are keyed by topology name). The "__" prefix makes them
// internal for Kafka tools as well as for drctl.
const (
	// StateTopic holds each topology's live roles (internal/rolestate).
	StateTopic = "__drctl_state"
	// FenceTopic holds the ACLs drctl added to fence a cluster
	// (internal/aclfence), so that unfence removes exactly those.
	FenceTopic = "__drctl_fence"
	// RunsTopic holds the record of every failover, failback and reseed run.
	RunsTopic = "__drctl_runs"
	// DrillsTopic holds every drill's record, keyed by drill id.
	DrillsTopic = "__drctl_drills"
	// DrillLocksTopic holds the drill leases (internal/drilllease).
	DrillLocksTopic = "__drctl_drill_locks"
	// MirrorPausesTopic holds the pauses of a mirror link's copying that
	// unplanned drills ask for, keyed by topology and link (see
	// linkstate.Pause).
	MirrorPausesTopic = "__drctl_mirror_pauses"
)

// Record headers drctl adds to records of the users' topics, each spelt
// once, here: the writers add them and the readers (verify, salvage,
// translation checks, drills) compare keys with these.
const (
	// HeaderOrigin holds the id of the cluster the record was first
	// produced on: the mirror's provenance, carried by every copy.
	HeaderOrigin = "drctl.o"
	// HeaderSourceOffset holds the record's offset in the source
	// partition of the mirror hop that wrote it, 8 bytes big-endian.
	HeaderSourceOffset = "drctl.s"

	// The salvage's headers, added to every record it copies into
	// quarantine. The record's own headers, the provenance included, are
	// kept as they were: salvage records where it took the record from,
	// it never rewrites where the record came from.

	// HeaderSalvagedFrom is the cluster id of the stale cluster.
	HeaderSalvagedFrom = "drctl.salvaged-from"
	// HeaderSalvagedOffset is the record's offset on the stale cluster
	// (8 bytes, big endian); it makes a salvage resumable.
	HeaderSalvagedOffset = "drctl.salvaged-offset"
	// HeaderSalvagedTopicID is the id (hex) of the stale cluster's topic
	// the record was read from. Offsets are only comparable within one
	// topic id: a topic wiped and re-seeded (or deleted and created again)
	// numbers its records from 0 again.
	HeaderSalvagedTopicID = "drctl.salvaged-topic-id"

	// The canary drill's headers. A canary record's key is "<drill
	// id>/<seq>" as well, so a person reading the topic with any tool
	// sees what a record is.

	// HeaderDrill is the id of the drill that wrote the record.
	HeaderDrill = "drctl.drill"
	// HeaderSeq is the record's sequence number within its drill.
	HeaderSeq = "drctl.seq"
	// HeaderSent is when the record was sent, RFC 3339 with nanoseconds.
	HeaderSent = "drctl.sent"
)

// InternalPrefix starts the name of every per-link topic and consumer group
// drctl keeps on a link's target (see Link), and of nothing else.
const InternalPrefix = "_drctl"

// DefaultSalvageTopicSuffix is failover.salvage_topic_suffix when the
// topology does not set it.
const DefaultSalvageTopicSuffix = ".drctl-salvage"

// SandboxClusterIDPrefix starts the cluster id of every cluster `drctl
// sandbox` runs, so that reports can recognise an embedded cluster.
const SandboxClusterIDPrefix = "drctl-sandbox-"

// canaryPrefix starts the canary topic's and group's names. They are
// drctl's own, but unlike the internal names they stand for a user's
// application: the canary topic is mirrored and fenced, the canary group
// synced, because that is what a drill tests. So they avoid InternalPrefix
// and Owns/OwnsGroup do not count them.
const canaryPrefix = "drctl-canary."

// CanaryTopic is the topic canary drills write on the active cluster.
func (t *Topology) CanaryTopic() string { return canaryPrefix + t.Name }

// CanaryGroup is the consumer group canary drills commit on the active
// cluster; group sync translates it to the standby.
func (t *Topology) CanaryGroup() string { return canaryPrefix + t.Name }

// SalvageTopic names the quarantine topic on the new active cluster into
// which a reseed copies what topic held on the stale cluster and was never
// mirrored.
func (t *Topology) SalvageTopic(topic string) string {
	return topic + t.Failover.SalvageTopicSuffix
}

// IsSalvageTopic reports whether topic is a quarantine topic of this
// topology: its name ends with the configured failover.salvage_topic_suffix.
func (t *Topology) IsSalvageTopic(topic string) bool {
	s := t.Failover.SalvageTopicSuffix
	return s != "" && strings.HasSuffix(topic, s)
}

// Owns reports whether topic is one drctl keeps for itself: a store shared
// by all topologies (StateTopic, FenceTopic, ...), a link's internal topic
// (InternalPrefix), or a salvage topic of this topology (the configured
// suffix). drctl never mirrors, fences or lists these as a user's topic.
func (t *Topology) Owns(topic string) bool {
	return strings.HasPrefix(topic, "__drctl") || strings.HasPrefix(topic, InternalPrefix) || t.IsSalvageTopic(topic)
}

// OwnsGroup reports whether a consumer group is drctl's own (a link's
// workers or progress group, see Link). drctl never translates, syncs or
// lists these as a user's group, whatever mirror.groups selects.
func OwnsGroup(group string) bool { return strings.HasPrefix(group, InternalPrefix) }

// Mirrors reports whether the mirror copies topic: mirror.topics selects
// it and it is neither Kafka's own ("__" prefix) nor drctl's (Owns). A
// salvage topic is evidence on the active cluster, never mirrored back.
// This is the one topic selection of drctl: fencing, status, translation,
// reseed and the mirror all use it.
func (t *Topology) Mirrors(topic string) bool {
	return !strings.HasPrefix(topic, "__") && !t.Owns(topic) && t.Mirror.Topics.Match(topic)
}

// SyncsGroup reports whether group sync translates and commits group:
// mirror.groups selects it and it is not drctl's own.
func (t *Topology) SyncsGroup(group string) bool {
	return !OwnsGroup(group) && t.Mirror.Groups.Match(group)
}

// StateTransactionalID is the transactional id every writer of the
// topology's role state uses, on each cluster.
func StateTransactionalID(topology string) string { return "drctl." + topology + ".state" }

// Link is one direction of mirroring: Source to Target, for a topology.
// Everything drctl keeps for a link lives on its target, under names that
// start with InternalPrefix + "." + topology + "." + source + "-" + target.
type Link struct {
	Topology string
	Source   string
	Target   string
}

// Link returns the link that copies from source to target.
func (t *Topology) Link(source, target string) Link {
	return Link{Topology: t.Name, Source: source, Target: target}
}

func (l Link) String() string { return l.Source + "->" + l.Target }

func (l Link) prefix() string {
	return InternalPrefix + "." + l.Topology + "." + l.Source + "-" + l.Target
}

// ShardsTopic is the internal topic on the target whose partitions stand
// for the link's shards: mirror workers share shards by consuming it in
// one consumer group (no data is ever written to it). Its partition count
// is the link's shard count.
func (l Link) ShardsTopic() string { return l.prefix() + ".shards" }

// OffsetsTopic is the internal topic on the target holding the link's
// offset map; package offsettranslate says what its records are and why
// its retention matters:
//
//	Link{"payments", "east", "west"}.OffsetsTopic() == "_drctl.payments.east-west.offsets"
func (l Link) OffsetsTopic() string { return l.prefix() + ".offsets" }

// GroupsTopic is the compacted internal topic on the target that holds the
// link's snapshot of the source groups' committed offsets: one record per
// group (key = the group name, value = a JSON snapshot), rewritten by every
// round of the mirror's group sync, and a tombstone when a group disappears
// from the source. It lets a failover translate the last known positions
// when the source is gone.
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

// LostTopic is the compacted internal topic on the target in which the
// link records each run of source records removed (retention,
// DeleteRecords) before it copied them: one record per run, keyed by
// "topic/partition@from", kept until an operator acknowledges it (a
// tombstone). Unlike a counter it survives restarts, so a loss stays on
// record after it is no longer pending.
func (l Link) LostTopic() string { return l.prefix() + ".lost" }

// ProofTopic is the compacted internal topic on the target in which the
// mirror's verifier keeps, per source partition (key "topic/partition"),
// how far the link's copies were found identical to their source records
// and the differences found: the watermark a restarted verifier resumes
// from, and what status and readiness read.
//
//	Link{"payments", "east", "west"}.ProofTopic() == "_drctl.payments.east-west.proof"
func (l Link) ProofTopic() string { return l.prefix() + ".proof" }

// WorkersGroup is the consumer group on the target in which the mirror
// processes of the link share its shards.
func (l Link) WorkersGroup() string { return l.prefix() + ".workers" }

// ProgressGroup is the consumer group on the target whose committed
// offsets are the link's progress: for each source partition (named by
// its topic and partition) the next source offset to copy. They are
// committed in the same transaction as the data.
func (l Link) ProgressGroup() string { return l.prefix() + ".progress" }

// InternalTopics lists the link's internal topics on its target.
func (l Link) InternalTopics() []string {
	return []string{l.ShardsTopic(), l.OffsetsTopic(), l.GroupsTopic(), l.EndsTopic(), l.TopicsTopic(), l.LostTopic(), l.ProofTopic()}
}

// InternalGroups lists the link's internal consumer groups on its target.
func (l Link) InternalGroups() []string {
	return []string{l.WorkersGroup(), l.ProgressGroup()}
}

// TransactionalID names shard's transactional id. Initialising it fences
// every earlier holder.
func (l Link) TransactionalID(shard int32) string {
	return fmt.Sprintf("drctl.%s.%s-%s.%d", l.Topology, l.Source, l.Target, shard)
}

// GroupsTransactionalID names the transactional id through which the
// link's continuous group sync commits group offsets on the target. Fencing
// a link initialises it with the shards' ids, so a group sync that hung
// across a failover can never commit an older translation afterwards.
func (l Link) GroupsTransactionalID() string {
	return fmt.Sprintf("drctl.%s.%s-%s.groups", l.Topology, l.Source, l.Target)
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string `json:"topic" yaml:"topic"`
	Partition int32  `json:"partition" yaml:"partition"`
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s/%d", tp.Topic, tp.Partition) }

// Compare orders partitions by topic, then partition number; it suits
// slices.SortFunc.
func (tp TopicPartition) Compare(o TopicPartition) int {
	return cmp.Or(strings.Compare(tp.Topic, o.Topic), cmp.Compare(tp.Partition, o.Partition))
}
