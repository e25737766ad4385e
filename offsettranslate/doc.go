// Package offsettranslate owns the mirror's exact source→target offset map:
// the record the mirror writes into an internal topic on the target in the
// same transaction as the data it describes (Batch, EncodeBatch,
// DecodeBatch; the topic is topology.Link.OffsetsTopic), the pure math that turns a consumer group's
// source position into the target position of the very record the group
// would read next (PartitionMap, Index, Translate), and the readers that
// rebuild that map from the target cluster with read_committed semantics
// (Load, Follower).
//
// Exactness rests on one property: a batch becomes visible to the readers
// if and only if the mirror's transaction that copied the data it describes
// committed. Aborted mirror transactions leave target offsets behind (their
// data records and markers are holes on the target), but their batches are
// never read, so no translation ever points into them.
//
// The package prints nothing, has no command line and never writes to a
// cluster; the mirror writes the batches and the failover code decides what
// to do with a translation.
package offsettranslate
