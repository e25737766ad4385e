// Package topicsync makes the standby (target) cluster's topics match the
// selected topics of the active (source) cluster, so that the mirror can copy
// every record into the same partition of a topic of the same name, with
// its key, value, headers and timestamp unchanged.
//
// It owns: creating missing target topics with the source's partition count,
// replication factor (capped to the target's brokers) and topic configs;
// growing partition counts; keeping topic configs in step; and reporting,
// per topic, what it did, what it deliberately held back, and the conflicts
// it will not resolve on its own.
//
// It must not: delete a topic, shrink or reassign anything, touch a target
// topic that the topology does not mirror (topology.Topology.Mirrors), or
// copy records (package mirror does that). It needs no write access to the
// source.
//
// # Topic configs
//
// Only configs set on the source topic itself are copied (DescribeConfigs
// source DYNAMIC_TOPIC_CONFIG), as MirrorMaker 2 does: broker defaults belong
// to each cluster. The rules, per key (configs.go has the reasons):
//
//   - Dropped, never read and never written on either side:
//     leader.replication.throttled.replicas and
//     follower.replication.throttled.replicas (they name source brokers),
//     message.format.version and message.downconversion.enable (broker
//     version specific, gone in Kafka 4), confluent.* (Confluent Server
//     only), remote.* (tiered storage depends on the target's brokers), and
//     Options.ExcludeConfigs.
//   - cleanup.policy: set at creation to the source's effective value. On an
//     existing topic a different effective value is a conflict, never
//     altered: switching compaction under live data is an operator's call.
//   - message.timestamp.type: the target is CreateTime while it is a standby,
//     so the broker keeps the timestamps the mirror copies; LogAppendTime
//     would overwrite them. A LogAppendTime source is reported in
//     TopicResult.Held for the failover to apply on promotion.
//   - message.timestamp.{difference,before,after}.max.ms: not copied (a
//     mirrored record is as old as the mirror's lag and would be rejected);
//     reported in Held. A limit on the target is lifted to Long.MAX.
//   - min.insync.replicas: copied, capped to the target's replication factor.
//   - Everything else: copied; a topic-level key the source does not set is
//     removed from the target (back to the target's default) and reported in
//     TopicResult.ConfigsRemoved.
package topicsync
