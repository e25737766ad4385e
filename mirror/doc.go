// Package mirror owns drctl's replication engine: it copies the selected
// topics of one cluster (the source, the live active) to another (the
// target, the live standby), partition for partition, exactly once, and
// writes in the same Kafka transactions the offset map that exact group
// translation reads. It also owns the daemon that follows the live roles.
//
// What a link keeps on its target besides the data (progress, the source
// ends each shard observed, the topic ledger, the losses to retention,
// the pauses) and the operations on it (lag, fence, pause, reshard,
// reseed-topic) belong to package linkstate: the engine writes that state
// through linkstate, and every other package reads and changes it there,
// so only the front-ends that run a mirror (cmd/drctl, the sandbox) import
// this package.
//
// The mirror never writes to the source cluster: its progress, its offset
// map and its coordination all live on the target.
//
// Each shard reads its source partitions with a fetcher of its own
// (fetcher.go), not sarama's consumer: one read_committed fetch per leader
// broker for all the shard's partitions, each response decoded into records
// that own their bytes and dropped at once, so that the memory a shard holds
// is bounded by its share of the engine's byte budget, not by the number of
// its partitions.
//
// # Contracts
//
//   - Partition-faithful copy: a record lands in the same partition of the
//     topic of the same name, in source order, with key, value, headers and
//     timestamp unchanged. Target topics get the source's partition count,
//     replication factor (capped by the broker count) and configs; changes
//     keep flowing.
//   - Exactly once across crashes (delivery: exactly-once): each shard
//     commits its records and its progress in one Kafka transaction on the
//     target; a restarted shard fences its transactional id first, then reads
//     its progress. A source partition is always written under the same
//     transactional id. Aborted source records are never copied
//     (read_committed). A source topic deleted and created again under its
//     name is never copied into the old incarnation's copy: a shard checks
//     the topic id when it starts a partition and after every fetch error
//     that may mean a new log (unknown topic, offset out of range).
//   - One writer: after linkstate.Fence initialises a link's transactional
//     ids, no mirror of that direction can write again, even one that wakes
//     up later.
//   - The offset map written with the data is what makes group translation
//     exact: a committed source position maps to the target offset of the
//     very record the group would read next; a position past the mirrored end
//     maps to the mirrored end. Translation and group sync themselves belong
//     to package mirror/groupsync; the engine hosts its continuous sync on
//     the process that owns shard 0.
package mirror
