// Package topology owns drctl's YAML topology file: its schema, strict loading
// (unknown keys and wrong types are errors with file:line), ${ENV} expansion,
// validation, and the sarama client configuration of each cluster. Its
// names.go is drctl's name registry: every topic, consumer group and
// transactional id drctl keeps on a cluster (Link, StateTopic, ...), and the
// rules that say which topics and groups are drctl's own and which topics the
// mirror copies (Owns, OwnsGroup, Mirrors, SyncsGroup).
//
// It must stay pure: nothing here opens a network connection; the
// connectivity check (validate --online) is inspect's.
//
// # Contracts
//
//   - Load either returns a valid topology or an *Error that names file:line
//     and the fix; unknown keys, wrong types, unset ${ENV} variables and
//     inconsistent roles are all errors, never defaults.
//   - A topology's Digest changes with any change of the file's meaning, so
//     that a plan made from another version of the file is refused as stale.
//   - Whether a topic or a group is drctl's own is decided only in names.go,
//     with the topology's configured salvage suffix; no other package spells
//     an internal prefix or suffix.
//   - Secrets (SASL passwords) are held for the sarama config only; no String,
//     error or warning of this package contains one.
package topology
