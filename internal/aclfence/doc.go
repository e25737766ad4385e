// Package aclfence fences a cluster against writes with Kafka ACLs: DENY
// WRITE on the selected topics for the configured producer principals,
// verified by reading them back and recorded on the cluster itself so that
// unfence removes exactly what was added, from any machine. Kafka ACLs have
// no "except": a DENY beats every ALLOW, and only super users (drctl) pass.
//
// # Contracts
//
//   - Fence reads its ACLs back before it reports success, and records on the
//     fenced cluster exactly which ACLs it added (and which were there
//     already); Unfence removes only those. Both are idempotent.
//   - A principal that is a super user passes any DENY: drctl's own principal
//     must be one, or the fence would lock drctl out too.
package aclfence
