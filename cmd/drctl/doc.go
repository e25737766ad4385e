// Command drctl keeps a standby Kafka cluster in sync with an active one and
// moves the active role between them. This package is a front-end only: each
// command parses flags, calls a package function and renders the result.
// Only main exits the process.
//
// # Contracts
//
//   - Commands parse their flags, call one package function and render its
//     result (render: table, -o json or -o yaml); the logic lives in the
//     packages, never here.
//   - Every command reads and writes through one Streams (In, Out, Err,
//     IsTerminal): main takes the process's, tests pass buffers. Only
//     streams.go looks at the process's standard streams.
//   - Every destructive command gets consent through Confirm: --yes, or an
//     answer typed on a terminal; without a terminal and --yes it refuses
//     before it contacts anything, with exit 2 and the fix named.
//   - Exit codes are the constants in main.go (docs/commands.md, EXIT
//     CODES): 0 done, 1 failed, 2 bad input or not confirmed, 3 a cluster
//     unreachable. Only main calls os.Exit.
//   - docs/commands.md and docs/drctl.1 are generated from the command
//     definitions (make docs); TestDocsCurrent fails when they drift.
package main
