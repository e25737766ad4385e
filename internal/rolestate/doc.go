// Package rolestate owns a topology's live role state: which cluster is
// active, the epoch that orders role changes, the phase, and the run in
// progress. The state is kept in both clusters of the topology, in the
// compacted topic __drctl_state keyed by topology name, and the higher epoch
// wins.
//
// Writes are compare-and-set on the epoch, serialised across processes and
// machines by Kafka's transactional-id fencing; reads see committed state
// only. The package decides nothing about failovers: it stores, reads and
// reconciles the state that the failover package computes. It never creates
// the state topic on a read.
package rolestate
