// Package poll owns drctl's waiting: Until, the one wait-until loop (a
// condition checked at a steady cadence within a deadline), and Backoff,
// the one back-off between attempts of a supervisor that restarts work
// after a failure.
//
// # Contracts
//
//   - Until returns as soon as the condition holds, ctx ends or the
//     deadline passes, whichever comes first; the condition is checked at
//     once, then every interval, and is never called after Until returned.
//     A timeout error names what was awaited and the condition's last
//     word, so the operator learns what did not happen.
//   - Backoff waits start at Initial, double up to Max, each with up to a
//     fifth of jitter, and start again from Initial after Reset (work that
//     ran long enough to count as healthy).
//   - Nothing here sleeps without ctx: every wait ends with it.
package poll
