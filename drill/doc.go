// Package drill runs DR drills against a topology and keeps their evidence.
//
// A drill is a plan (package plans): an ordered list of steps run by the one
// executor, journaled locally, its result recorded in both clusters. Three
// kinds exist:
//
//   - canary (safe in production): sequence-numbered canary records are
//     written to the canary topic on the active cluster and read back on the
//     standby (latency, gaps, duplicates, order); the canary group is
//     committed on the active and its exact translated position awaited on
//     the standby; the planned failover is built and its preflight run
//     without executing; the current RPO and an RTO estimate are measured.
//   - failover (disruptive): a real planned failover with a canary producer
//     and group following the roles, a hold, then a failback; RTO and RPO
//     per direction, canary records lost, duplicated and re-read.
//   - unplanned (disruptive): see unplanned.go.
//
// The package owns the drill plans and their steps, the judging of a result
// against the topology's objectives, the drills topic in each cluster and
// the reading of history, and the scheduler with its cluster-held lock. It
// renders nothing for people except progress lines; package drill/report
// renders evidence.
//
// # Contracts
//
//   - A canary drill touches nothing but the canary topic and the canary
//     group, and leaves nothing but records that expire with the topic's
//     short retention.
//   - A disruptive drill never runs unless the topology sets
//     drills.allow_disruptive; its role changes are failover runs, so a drill
//     killed at any step leaves a run that drctl resume finishes, and the
//     drill's last step restores the roles it found.
//   - The verdict is a pure function of the measurements and the
//     objectives (Judge); every failed check adds a reason in plain words.
//   - A result is recorded when at least one cluster or the local journal
//     holds it; secrets never reach a record.
package drill
