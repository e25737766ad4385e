// Package drilllease reads the drills' leases: the claims in the locks topic
// on the topology's home active cluster. Package drill writes them; package
// failover only reads them, to refuse a failover, failback or reseed while a
// drill runs. It sits below both so that neither imports the other for it.
//
// # Contracts
//
//   - It reads leases and never writes one.
//   - A lease past its expiry, or held by a process that is gone on this
//     machine (DeadHere), does not block anything.
package drilllease
