// Package topology owns drctl's YAML topology file: its schema, strict loading
// (unknown keys and wrong types are errors with file:line), ${ENV} expansion,
// validation, and the sarama client configuration of each cluster.
//
// It must stay pure: nothing here opens a network connection, except the
// explicit connectivity check in check.go.
//
// # Contracts
//
//   - Load either returns a valid topology or an *Error that names file:line
//     and the fix; unknown keys, wrong types, unset ${ENV} variables and
//     inconsistent roles are all errors, never defaults.
//   - A topology's Digest changes with any change of the file's meaning, so
//     that a plan made from another version of the file is refused as stale.
//   - Secrets (SASL passwords) are held for the sarama config only; no String,
//     error or warning of this package contains one.
package topology
