// Package runrecord owns the record of a failover, failback or reseed run
// as the clusters keep it (topology.RunsTopic, one record per run, keyed
// by the run's id): its format, the names of the steps its readers look
// for, how it is written and read back, and where a run's point of no
// return lies. Package failover writes it; inspect, tui, drill and
// cmd/drctl read it.
//
// # Contracts
//
//   - It never dials: every function takes the command's session
//     (kafkaconn.Clusters), and only Put writes to a cluster.
//   - A record read back is one Decode accepts: a valid plan, and progress
//     that fits it (one done flag per step, outputs and the started step
//     within it), so a resume may index the plan's steps with it.
//   - The runs topic is shared by every topology whose clusters these are:
//     Load and List return only the runs of the session's topology; for a
//     run several clusters hold, the most advanced record wins.
//   - The record's JSON form only ever gains fields: a record written by an
//     older drctl still decodes, and a plan saved before steps carried the
//     point-of-no-return mark finds it by its step's name.
package runrecord
