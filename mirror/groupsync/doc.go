// Package groupsync owns consumer-group translation and sync over one
// mirror link: a group's committed source positions are translated,
// partition by partition, through the link's offset map (offsettranslate)
// into the target offsets where a consumer reads next the very records the
// group would read next on the source, and committed on the standby for
// groups that have no members there.
//
// What it owns, file by file:
//
//   - translate.go: the report types, translateGroup and Decide — pure,
//     no network.
//   - kafka.go: the cluster side — committed offsets (FetchCommitted), group
//     states, admin-style commits (CommitOffsets).
//   - oneshot.go: the one-shot API the CLI, the TUI and a failover call:
//     Translate, then Decide, then Apply.
//   - loop.go and fence.go: the continuous sync that the mirror's engine
//     hosts (Run, Syncer) and its fenced committer.
//   - snapshot.go: the standby's copy of the source groups' positions (the
//     link's GroupsTopic), which lets an unplanned failover translate when
//     the source is gone.
//   - status.go: where each group's sync stands, read from the standby alone.
//
// # Contracts
//
//   - A group with members on the standby (StandbyGroup.Active) never has
//     its committed offsets changed: the plan skips it, Apply re-checks it
//     before each commit, and the coordinator's refusal is ErrGroupActive.
//   - drctl's own groups (topology.OwnsGroup) are never translated or
//     synced, whatever mirror.groups selects.
//   - A translated position is exact or says it is not (GroupPartition.Exact,
//     Status): an unmapped partition is never committed.
//   - Apply commits exactly a plan's changes, and only for groups whose
//     standby offsets have not moved since the plan (SyncStale otherwise).
//   - The continuous sync commits through the link's groups transactional
//     id, initialised before it checks the role state: after a failover
//     fences the link, a sync that hung can never commit an older
//     translation (ErrFenced).
//   - The package writes only to the target (the standby): its offsets and
//     its snapshot topic. It reads the source and never writes to it.
//
// The package does not import mirror: the engine passes what the loop
// needs in a Config (its clients, its shard duty, its role check, its
// producer settings and metrics).
package groupsync
