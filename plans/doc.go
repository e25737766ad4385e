// Package plans owns drctl's plan/apply model.
//
// A plan is data: a versioned, JSON-serialisable, ordered list of typed
// steps, each carrying its parameters and the values it expects before and
// intends after, plus the inputs it was built against (for drctl, the
// topology digest and the epoch). A plan can be printed, saved, diffed and
// digested without any network. One Executor runs a plan, from its first
// step or from any later one (resume), and reports through hooks: the
// Journal (append-only, fsync'd JSON lines), the Printer (human progress
// lines), the JSONStream (`-o json`), and anything else that implements Hook
// (a TUI, a cluster-side run-progress store).
//
// This package owns the plan format and its digest, the human rendering of a
// plan, the step registry (StepType binds a step name to the Go type of its
// parameters, for the builder and the Action alike), the executor with its two-stage interrupt, the
// staleness guard, and the journal format together with reading it back to
// resume a run.
//
// It must not know anything about Kafka, topologies or any other drctl
// package: it imports none of them, and what a step does is decided by the
// Action the plan's builder registers under the step's name. It must not exit
// the process, read configuration, or write anywhere but the writers and
// files it is given.
//
// # Contracts
//
//   - Steps are idempotent. The executor runs a step again when a run was
//     killed, failed or cancelled while the step was running (its start is in
//     the journal, its completion is not). An Action must therefore reach the
//     same end state whether it runs once or again after a partial run; the
//     RunContext tells it when it is such a re-run.
//   - A step that cannot be journaled does not run: hooks that report
//     Required (the Journal always does) are called first, and if one of them
//     cannot record a step's start the executor stops before running it. If a
//     required hook fails at any other point, the run halts before the next
//     step.
//   - The first interrupt lets the running step finish and stops the run
//     before the next one (ErrInterrupted); the second cancels the running
//     step's context (ErrCancelled). Both report the step a resume starts at.
//   - Hooks and the journal write what they are given. Plan builders and
//     Actions must never put secrets (passwords, tokens, keys) into plan
//     inputs, step parameters, expected or intended values, outputs, progress
//     messages or errors: all of them are printed, streamed and journaled.
package plans
