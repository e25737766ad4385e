// Package drilllease owns the leases of the locks topic: the drills' lease
// on the topology's home active cluster (package drill takes it; package
// failover reads it, to refuse a failover, failback or reseed while a drill
// runs) and a run's lease on the cluster that is or becomes active
// (package failover takes it, so that one drctl at a time runs a run). It
// sits below both so that neither imports the other for it, and holds the
// whole protocol: the claim and its fold (Take, Give, Owner), a held lease
// (Acquire, Renew, Release) and its renewals (Keep).
//
// # Contracts
//
//   - A Lease is taken through the caller's session (kafkaconn.Clusters),
//     which must outlive it; it never dials.
//   - Take and Give are the only writes: a claim appended to the one
//     partition of the locks topic; the owner is decided by folding the log
//     up to the claim. No clock decides between live contenders: clocks
//     only end the leases of holders that stopped renewing them.
//   - A lease past its expiry, or held by a process that is gone on this
//     machine (DeadHere), does not block anything.
package drilllease
