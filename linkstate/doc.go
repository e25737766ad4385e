// Package linkstate owns what a mirror link keeps on its target besides
// the copied data, and the operations on a link that do not copy. Package
// mirror, the engine, writes most of this state; everything else that
// reads or changes a link does it here.
//
// The state, all under the link's names in package topology:
//
//   - progress: the checkpoints in the progress group and the offset map's
//     batches after them, read as each source partition's next offset to
//     copy (ReadProgress; Progress and its metadata for the engine);
//   - observed ends: what each shard last saw of the source's ends, the
//     errors of partitions the target refuses and the last reset note
//     (ShardView, LastObserved): after an unplanned failover, the RPO;
//   - the topic ledger: which source incarnation (topic id) each target
//     topic holds (TopicLedger), and the topics deleted or recreated on the
//     source (TopicChanges);
//   - lost ranges: source records retention removed before the mirror
//     copied them, kept until an operator acknowledges them (LostRange,
//     RecordLost, ReadLost, AckLost);
//   - pauses: a drill's request that the link stop copying (Pause).
//
// The operations: the lag of a link and its state for status (MeasureLag,
// Describe), Fence, Reshard and ReseedTopic.
//
// It never imports package mirror: the engine imports it, and every other
// package (inspect, failover, drill, tui, verify) reads and changes a link
// through it, never through the engine. The functions named ...In work
// through a command's session (kafkaconn.Clusters); the others open the
// clients they need and close them.
//
// # Contracts
//
//   - Nothing here writes to a link's source cluster, except a pause's
//     courtesy copy (PutPause): a link's state lives on its target.
//   - A lag is never under-counted: the progress is read before the
//     source's ends, and a report reads the progress committed so far
//     (CommittedSoFar) rather than wait for a transaction in doubt. A read
//     that resumes or judges a copy (ReadProgress, Settled) waits for it.
//   - A checkpoint of another incarnation of a topic than the one the link
//     mirrors is no progress of it: a late checkpoint of a topic reseeded
//     since never makes the new incarnation start past records not copied.
//   - Fence initialises every transactional id any shard count of the link
//     used and the group sync's; its caller records the new role state on
//     the target first, so a fenced process that initialises its id again
//     sees the new epoch and stops.
//   - Reshard and ReseedTopic change nothing while they refuse
//     (ErrLinkRunning, ErrNeverRan, ErrNotRecreated), and an interrupted
//     run completes when run again.
//   - A loss is on record before the mirror passes over it (RecordLost),
//     and stays until AckLost removes exactly the ranges it is given.
//   - A pause holds only its own link at its own epoch, until it expires
//     or is released (Pause.Holds).
package linkstate
