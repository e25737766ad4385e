// Package aclsync keeps the standby's ACLs in step with the active's, and
// keeps the standby fenced against the applications' writes, while the
// roles are steady.
//
// It owns the ACL bindings of the application principals (mirror.acls.
// principals; drctl's own principal never) on the mirrored topics and
// groups, and, where selected, on transactional ids and the cluster. Each
// round it lists the bindings on both clusters, adds on the standby what
// the active has and removes from the standby what the active no longer
// has (Diff), within the scope (Scope.Owns): a binding outside the scope
// is never touched, on either side.
//
// The standby's write fence is drctl's ACL fence (internal/aclfence): DENY
// WRITE on every mirrored topic for the fence principals, recorded on the
// cluster so that the failover's unfence-new-active step removes exactly
// it. The sync adds it for topics that lack it (a new mirrored topic) and
// never copies or removes a fence ACL: those are not in the scope.
//
// # Contracts
//
//   - The fence comes first: a round copies no grant until the standby
//     lists the fence of every topic the grants name, of the standby's
//     mirrored topics and of the active's (literal ACLs need no topic), so
//     an ALLOW never reaches the standby before the DENY that guards it.
//   - It changes only the target (the live standby); the source is read.
//   - It acts only while the live role state is steady with source active
//     and target standby, read in the same round: a failover moves the
//     phase on before it unfences the new active, so a round of the old
//     direction never fences a new active.
//   - Diff and Compare are pure; a round that fails changes nothing more
//     than the bindings it applied before the failure, and the next round
//     converges from whatever it finds.
//   - No secret is read or written: bindings carry principals and hosts
//     only.
package aclsync
