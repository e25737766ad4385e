// Package sandbox owns `drctl sandbox`: two embedded Kafka clusters (kfake,
// in-process) named east and west, a topology file that points at them, demo
// topics on the home active cluster, and demo traffic (a producer, a
// transactional producer and two consumer groups) that follows whichever
// cluster is active.
//
// It must not mirror, fail over or touch the standby's topics: the mirror
// creates those, and failover moves the active role (the sandbox only follows
// it through Options.ActiveFn). It never exits the process; front-ends call
// Run or Start and decide what to print.
//
// # Contracts
//
//   - Its clusters listen on loopback only, and its demo traffic is modest (tens
//     of records per second) and bounded by the context, so it can run for
//     hours in memory.
package sandbox
