// Package failover builds and runs the plans that move the active role
// between the two clusters of a topology (failover, failback), rebuild a
// stale cluster as the new standby (reseed), and fence or unfence a
// cluster. Every step it runs is idempotent, so a run killed at any point
// can be resumed, from this or another machine, with the same end state.
// The read-only views the front-ends render (status, validation, run
// records, RPO) live in package inspect; failover writes the run records
// that inspect reads.
//
// # Contracts
//
//   - A plan is built from the topology, its Inputs (the live roles it starts
//     from) and the plan's id alone (buildSteps), so a saved or resumed plan
//     is re-derived and compared before it runs (verifyPlan): a plan runs only
//     as drctl made it, and a difference is refused with nothing changed.
//   - The guard re-reads the live roles before every step: a plan whose world
//     moved on (another run, a higher epoch, an edited topology file) stops as
//     stale before the step.
//   - Nothing changes before the preflight has passed; the before hooks
//     (failover.hooks.before) run next, still ahead of every change. The point
//     of no return is the role flip (a reseed: the wipe): before it, Abort
//     puts the clusters back as the run found them.
//   - The role state is written compare-and-set on the epoch, in both
//     clusters; the higher epoch wins, and two concurrent runs cannot both
//     pass begin.
//   - No cluster is wiped before its records that lack the new active's
//     provenance are salvaged and counted; salvage never rewrites provenance.
//   - Progress is journaled locally and recorded in both clusters
//     (__drctl_runs) before each step runs, so drctl resume finishes a run
//     from this machine or another with the same end state.
package failover
