// Package inspect owns the read-only views of a topology that the
// front-ends render: the status snapshot (`drctl status`, the TUI's
// overview), validation (`drctl validate [--online]`), what each cluster
// says about itself (id, brokers, controller, release), the run records of
// failovers, failbacks and reseeds as the clusters keep them, the last
// drill, and the recovery point (RPO) of a link.
//
// It sits between the data plane and the plans that change the clusters:
// it imports mirror (lag, link state, group-sync status) and the internal
// plumbing, and is imported by failover (which writes the run records and
// reuses the preflight reads here), drill, tui and cmd/drctl. It must not
// import failover, drill or tui.
//
// # Contracts
//
//   - It changes nothing on any cluster: every function here only reads
//     (metadata, configs, group descriptions, ACL authorisations, committed
//     records of drctl's internal topics). It never creates a topic, not
//     even the internal ones a read finds missing.
//   - One command, one session: the collectors take a kafkaconn.Clusters
//     (the ...In variants) or open one themselves, and every read of a
//     snapshot goes through its one client per cluster. `drctl status`
//     dials each cluster once (TestStatusOneSessionPerCluster in cmd/drctl).
//   - An unreachable cluster is part of a view, not an error: the snapshot
//     says which cluster did not answer and why (kafkaconn.Explain: the
//     cluster, the cause, the fix), and with no cluster reachable the roles
//     are "unknown" (RoleUnknown), never the topology file's home roles.
//     Collectors return within their context's deadline.
//   - The JSON/YAML form of Status and Validation is a stable, documented
//     schema (docs/status.md): fields are only ever added.
//   - Secrets never appear in a view: sensitive topic configs are skipped
//     and connection errors are scrubbed of the cluster's password.
package inspect
