// Package kvstore keeps small keyed records in a compacted internal topic of
// a cluster: the latest record of a key is its value. drctl uses it for
// what must survive on the clusters themselves (fence records, run
// progress), so that any machine can read it back. Writes are idempotent
// producer writes; reads are read_committed up to the last stable offset.
//
// # Contracts
//
//   - Get and All see committed records only and never create the topic; Put
//     creates it (one partition, compacted) when it is missing.
//   - A value is one record: small state, never data.
package kvstore
