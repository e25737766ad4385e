package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/linkstate"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "roles, epoch, reachability, topics and groups of both clusters",
		Description: "status connects to both clusters and prints the live roles (the highest epoch stored in the\n" +
			"clusters wins), each cluster's reachability, id, brokers, controller and Kafka version, the selected\n" +
			"topics with their partition parity and config drift, the selected groups on both sides, and the\n" +
			"standby's ACL parity with the active per principal (with gaps in its write fence).\n" +
			"It exits 3 when a cluster is unreachable, and always answers within --timeout.",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "timeout", Value: 14 * time.Second, Usage: "give up on an unresponsive cluster after this long"},
		},
		Action: func(c *cli.Context) error {
			topo, err := loadTopology(c)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
			defer cancel()
			clusters := kafkaconn.Open(ctx, topo)
			defer clusters.Close()
			st, _ := inspect.CollectStatus(ctx, clusters)
			if err := render(c, statusDocument{StatusSchemaVersion, st}, func(w io.Writer) error { return statusTables(w, st) }); err != nil {
				return err
			}
			if down := st.Unreachable(); len(down) > 0 {
				return withCode(exitUnreachable, fmt.Errorf("unreachable: %s", strings.Join(down, ", ")))
			}
			return nil
		},
	}
}

// StatusSchemaVersion is the version of the status JSON/YAML schema
// (docs/status.md). Fields are only ever added; a rename or removal would
// bump it.
const StatusSchemaVersion = 1

// statusDocument is what status -o json|yaml prints: the snapshot with its
// schema version first.
type statusDocument struct {
	SchemaVersion int `json:"schema_version"`
	*inspect.Status
}

func statusTables(w io.Writer, st *inspect.Status) error {
	r := st.Roles
	epoch := fmt.Sprint(r.Epoch)
	if r.Epoch < 0 {
		epoch = inspect.RoleUnknown // no cluster answered; the JSON says -1
	}
	_ = writeWrapped(w, "  ", fmt.Sprintf("topology %s: active %s, standby %s, epoch %s, phase %s (from %s)", st.Topology, r.Active, r.Standby, epoch, r.Phase, r.Source))
	fmt.Fprintf(w, "ready to fail over? %s\n", st.Readiness.Level)
	for _, reason := range st.Readiness.Reasons {
		_ = writeWrapped(w, "    ", "  - "+reason)
	}
	if r.Run != nil {
		_ = writeWrapped(w, "  ", fmt.Sprintf("run in progress: %s %s (at step %d, by %s since %s)", r.Run.Kind, r.Run.ID, r.Run.Step+1, r.Run.By, r.Run.StartedAt.Format(time.RFC3339)))
	}
	if d := st.LastDrill; d != nil && d.ID != "" {
		_ = writeWrapped(w, "  ", fmt.Sprintf("last drill: %s (%s, kind %s) %s at %s", d.ID, d.Drill, d.Kind, strings.ToUpper(d.Verdict), d.FinishedAt.UTC().Format(time.RFC3339)))
	}
	section(w, "CLUSTERS")
	t := newTable(w, col("cluster"), col("role"), col("reachable"), col("cluster id"), column{Name: "brokers", Drop: 2},
		column{Name: "controller", Drop: 1}, column{Name: "kafka", Drop: 3, Fit: fitShorten}, column{Name: "state epoch", Drop: 4}, column{Name: "fence", Drop: 5, Fit: fitWrap})
	for _, c := range st.Clusters {
		reach, epoch := yesNo(c.Reachable), "-"
		if !c.Reachable {
			reach = "NO"
		}
		if c.StateEpoch >= 0 {
			epoch = fmt.Sprint(c.StateEpoch)
		}
		if c.Stale {
			epoch += " (stale)"
		}
		ctrl := "-"
		if c.Reachable {
			ctrl = fmt.Sprint(c.Controller)
		}
		t.Append(c.Name, c.Role, reach, orDash(c.ClusterID), fmt.Sprint(len(c.Brokers)), ctrl, orDash(c.KafkaVersion), epoch, fenceCell(c.Fenced, c.FencePermitted))
	}
	if err := t.Render(); err != nil {
		return err
	}
	if m := st.Mirror; m != nil {
		state := "not running"
		if m.Running {
			state = fmt.Sprintf("running (%d process(es))", m.Workers)
		}
		fmt.Fprintln(w)
		_ = writeWrapped(w, "  ", fmt.Sprintf("MIRROR %s: %s, lag %d records, oldest pending %.1fs", m.Link, state, m.LagRecords, m.LagSeconds))
		if line := proofText(m.Proof); line != "" {
			_ = writeWrapped(w, "  ", line)
		}
	} else if st.MirrorNotRead != "" {
		fmt.Fprintln(w)
		_ = writeWrapped(w, "  ", "MIRROR "+st.MirrorNotRead)
	}
	section(w, "TOPICS")
	t = newTable(w, col("topic"), col("active partitions"), col("standby partitions"), column{Name: "parity", Drop: 1}, column{Name: "config drift", Drop: 2, Fit: fitWrap})
	for _, tp := range st.Topics {
		var drift []string
		for _, d := range tp.ConfigDrift {
			drift = append(drift, fmt.Sprintf("%s: %s / %s", d.Key, orDash(d.Active), orDash(d.Standby)))
		}
		t.Append(tp.Name, partitions(tp.Active), partitions(tp.Standby), yesNo(tp.InParity), orDash(strings.Join(drift, "; ")))
	}
	if err := t.Render(); err != nil {
		return err
	}
	section(w, "GROUPS")
	t = newTable(w, col("group"), col("on the active"), col("on the standby"), column{Name: "sync", Fit: fitShorten})
	for _, g := range st.Groups {
		sync := "-"
		switch {
		case g.Sync == nil:
		case g.Sync.InSync:
			sync = fmt.Sprintf("in sync, %.1fs old", g.Sync.BehindSeconds)
		default:
			sync = "NOT in sync"
		}
		t.Append(g.Name, groupCell(g.Active), groupCell(g.Standby), sync)
	}
	if err := t.Render(); err != nil {
		return err
	}
	if a := st.ACLs; a != nil && a.Error == "" && len(a.Principals) > 0 {
		sync := "kept in step by the mirror"
		if !a.Enabled {
			sync = "not synced: mirror.acls.enabled is false"
		}
		section(w, fmt.Sprintf("ACLS (standby %s against active %s, %s)", a.Standby, a.Active, sync))
		t = newTable(w, col("principal"), col("as on the active"), col("missing on the standby"), column{Name: "extra on the standby", Drop: 1})
		for _, pp := range a.Principals {
			t.Append(pp.Principal, fmt.Sprint(pp.InSync), fmt.Sprint(len(pp.Missing)), fmt.Sprint(len(pp.Extra)))
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	if len(st.Problems) > 0 {
		section(w, "PROBLEMS")
		for _, p := range st.Problems {
			_ = writeWrapped(w, "  ", "- "+p)
		}
	}
	return nil
}

func partitions(s inspect.TopicSide) string {
	if s.Unknown {
		return inspect.RoleUnknown
	}
	if !s.Exists {
		return "missing"
	}
	return fmt.Sprint(s.Partitions)
}

// groupCell is a group's state on one side with its members ("Stable, 2
// members").
func groupCell(s inspect.GroupSide) string {
	state := groupState(s)
	if !s.Exists {
		return state
	}
	if s.Members == 1 {
		return state + ", 1 member"
	}
	return fmt.Sprintf("%s, %d members", state, s.Members)
}

func groupState(s inspect.GroupSide) string {
	if s.Unknown {
		return inspect.RoleUnknown
	}
	if !s.Exists {
		return "absent"
	}
	return s.State
}

// fenceCell says whether drctl's ACL fence is in place on a cluster, and
// warns when drctl may not put it there ("-": not read, e.g. fence: none
// or the cluster is down).
func fenceCell(fenced, permitted *bool) string {
	cell := "-"
	if fenced != nil {
		cell = "none"
		if *fenced {
			cell = "IN PLACE"
		}
	}
	if permitted != nil && !*permitted {
		cell += " (drctl may not Alter ACLs: a failover cannot fence)"
	}
	return cell
}

// proofText is the status line of the mirror verifier's record ("" when
// it recorded nothing).
func proofText(p *linkstate.ProofSummary) string {
	switch {
	case p == nil:
		return ""
	case p.Error != "":
		return "PROOF: " + p.Error
	case p.Differences > 0:
		d := p.Differing[0]
		return fmt.Sprintf("PROOF: THE STANDBY DIFFERS: %d difference(s) on %d partition(s), first %s (%s); drctl verify --topic %s --partition %d shows them",
			p.Differences, len(p.Differing), d.TopicPartition(), d.FirstDifference, d.Topic, d.Partition)
	}
	return fmt.Sprintf("PROOF: no difference in %d records the mirror's verifier compared on %d partition(s)", p.Records, p.Partitions)
}
