// Package tui is drctl's live DR console (`drctl tui`): both clusters, the
// mirror, topics, groups, runs, drills and events in one terminal, with
// failover, failback, resume and offset sync at a keystroke.
//
// It is a front-end only. Everything it shows comes from the functions the
// CLI calls (inspect.CollectStatus for `drctl status`, linkstate.MeasureLag for
// `drctl mirror lag`, groupsync.Translate for `drctl offsets translate`,
// failover.PlanFailover for `drctl plan failover`), and every run goes
// through failover.Execute: the console is one more plans.Hook on the same
// executor, next to the journal and the cluster-side run store.
//
// # Contracts
//
//   - No Kafka call in Update or View. All I/O runs in tea.Cmds with a
//     bounded timeout (Options.Timeout, the same as `drctl status`) and comes
//     back as a message; keys are answered while a refresh is in flight.
//   - At most one refresh is in flight. A refresh that fails shows its error
//     in place and the previous snapshot stays on screen, marked with its age.
//   - With Options.ReadOnly no action can start: the keys say so and the
//     header shows READ-ONLY.
//   - A run changes the clusters only after the operator typed the target
//     cluster's name (or the run id, for a resume) under the plan exactly as
//     `drctl plan failover` prints it.
//   - A running plan keeps the CLI's two-stage interrupt: the first ctrl-c
//     stops it after the current step, the second cancels the step. Quitting
//     while a run is unfinished leaves the resume command in Model.Resume.
//   - Nothing renders a secret: the views show what `drctl status` prints,
//     which never holds one.
//   - View() is a pure function of the model and its clock (Options.Now), so
//     screens are golden-tested at fixed sizes.
package tui
