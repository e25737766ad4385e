package tui

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/mirror/groupsync"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

func TestMain(m *testing.M) {
	// Goldens are plain text: every state is said in words on screen. The
	// colour child of TestNoColor keeps the profile the environment gives.
	if os.Getenv(colorChildEnv) == "" {
		lipgloss.SetColorProfile(termenv.Ascii)
	}
	os.Exit(m.Run())
}

// t0 is the fixtures' clock.
var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func fixtureTopology() *topology.Topology {
	return &topology.Topology{Name: "payments", Path: "drctl.yaml", Active: "east", Standby: "west",
		Clusters: map[string]*topology.Cluster{"east": {Bootstrap: []string{"east-1:9092"}}, "west": {Bootstrap: []string{"west-1:9092"}}}}
}

// fixtureModel is a console on the fixture topology with the fixed clock
// and no I/O of its own: tests feed it snapshots and keys.
func fixtureModel(w, h int, readOnly bool) *Model {
	m := New(Options{Topology: fixtureTopology(), ReadOnly: readOnly, NoRefresh: true, Now: func() time.Time { return t0.Add(time.Second) }})
	m.Update(tea_WindowSize(w, h))
	return m
}

func cluster(name, role string, epoch int64) inspect.ClusterStatus {
	return inspect.ClusterStatus{Name: name, Role: role, Bootstrap: []string{name + "-1:9092"}, Reachable: true, StateEpoch: epoch,
		ClusterInfo: inspect.ClusterInfo{ClusterID: "id-" + name, Brokers: []inspect.Broker{{ID: 1}, {ID: 2}, {ID: 3}}, Controller: 1, KafkaVersion: "4.1"}}
}

func synced(g string, age float64) *groupsync.Status {
	return &groupsync.Status{Group: g, InSync: true, BehindSeconds: age, LastAction: "commit"}
}

// steadyStatus: east active, west standby, mirror caught up, groups in sync.
func steadyStatus() *inspect.Status {
	return &inspect.Status{
		Topology: "payments", CheckedAt: t0,
		Roles:    inspect.Roles{Epoch: 3, Active: "east", Standby: "west", Phase: rolestate.PhaseSteady, Source: "cluster east"},
		Clusters: []inspect.ClusterStatus{cluster("east", "active", 3), cluster("west", "standby", 3)},
		Topics: []inspect.TopicStatus{
			{Name: "customers", Active: side(3), Standby: side(3), InParity: true},
			{Name: "orders", Active: side(6), Standby: side(6), InParity: true},
			{Name: "payments.eu", Active: side(3), Standby: side(3), InParity: true},
		},
		Groups: []inspect.GroupStatus{
			{Name: "analytics", Active: inspect.GroupSide{Exists: true, State: "Stable", Members: 2}, Standby: inspect.GroupSide{Exists: true, State: "Empty"}, Sync: synced("analytics", 1.2)},
			{Name: "billing", Active: inspect.GroupSide{Exists: true, State: "Stable", Members: 1}, Standby: inspect.GroupSide{Exists: true, State: "Empty"}, Sync: synced("billing", 0.9)},
		},
		Mirror:   &linkstate.State{Link: "east->west", Running: true, Workers: 2, GroupState: "Stable"},
		Problems: []string{},
	}
}

func side(n int32) inspect.TopicSide {
	return inspect.TopicSide{Exists: true, Partitions: n, ReplicationFactor: 3}
}

// lagReport spreads lag records over the topics' partitions.
func lagReport(st *inspect.Status, lag map[string]int64, at time.Time) *linkstate.LagReport {
	rep := &linkstate.LagReport{Link: "east->west", MeasuredAt: at}
	for _, t := range st.Topics {
		for p := int32(0); p < t.Active.Partitions; p++ {
			recs := lag[t.Name] / int64(t.Active.Partitions)
			if p == 0 {
				recs += lag[t.Name] % int64(t.Active.Partitions)
			}
			pl := linkstate.PartitionLag{Topic: t.Name, Partition: p, SourceEnd: 1000 + int64(p)*10, Records: recs}
			pl.Mirrored = pl.SourceEnd - recs
			if recs > 0 {
				pl.Seconds = float64(recs) / 300
			}
			rep.Partitions = append(rep.Partitions, pl)
			rep.TotalRecords += recs
			rep.MaxSeconds = max(rep.MaxSeconds, pl.Seconds)
		}
	}
	return rep
}

func snapshotOf(st *inspect.Status, lag *linkstate.LagReport) *Snapshot {
	return &Snapshot{Status: st, Lag: lag, At: t0, Took: 300 * time.Millisecond}
}

// The scenarios of the golden tests.
func scenarioSteady() *Snapshot {
	st := steadyStatus()
	return snapshotOf(st, lagReport(st, nil, t0))
}

func scenarioLagging() *Snapshot {
	st := steadyStatus()
	st.Mirror.LagRecords, st.Mirror.LagSeconds = 12345, 41.2
	st.Groups[1].Sync = &groupsync.Status{Group: "billing", BehindSeconds: 65, Reason: "the standby moved since the last round"}
	st.Problems = append(st.Problems, "group billing is not in sync on west: the standby moved since the last round")
	return snapshotOf(st, lagReport(st, map[string]int64{"orders": 12000, "payments.eu": 345}, t0))
}

// scenarioDiffers: the mirror's verifier found a record on the standby
// that no source record maps to.
func scenarioDiffers() *Snapshot {
	st := steadyStatus()
	st.Mirror.Proof = &linkstate.ProofSummary{Partitions: 4, Records: 52110, Differences: 1, Differing: []linkstate.Proof{
		{Topic: "orders", Partition: 1, Mode: "full", Sample: 1, Proven: 8120, Checked: 13020, Records: 13020, Differences: 1,
			FirstDifference: "unexpected: source offset -1, standby offset 8131: no source record maps to this committed standby record"}}}
	st.Problems = append(st.Problems, st.Mirror.Problems()...)
	st.Readiness = inspect.Assess(st)
	return snapshotOf(st, lagReport(st, nil, t0))
}

func scenarioClusterDown() *Snapshot {
	st := steadyStatus()
	east := &st.Clusters[0]
	east.Reachable, east.ClusterInfo, east.StateEpoch = false, inspect.ClusterInfo{Brokers: []inspect.Broker{}}, -1
	east.Error = "cluster east (east-1:9092): cannot connect: dial tcp 10.0.0.1:9092: connect: connection refused; check that the brokers run and the bootstrap addresses are right"
	st.Roles.Source = "cluster west"
	st.Mirror = nil
	st.MirrorNotRead = "not read: the link's state needs both clusters, and east (active) did not answer"
	for i := range st.Topics {
		st.Topics[i].Active = inspect.TopicSide{Unknown: true}
		st.Topics[i].InParity = false
	}
	for i := range st.Groups {
		st.Groups[i].Active, st.Groups[i].Sync = inspect.GroupSide{Unknown: true}, nil
	}
	st.Problems = []string{"cluster east (active) is unreachable: " + east.Error}
	return snapshotOf(st, nil)
}

// scenarioBothDown: no cluster answers; the roles are unknown.
func scenarioBothDown() *Snapshot {
	st := steadyStatus()
	st.Roles = inspect.Roles{Epoch: -1, Active: inspect.RoleUnknown, Standby: inspect.RoleUnknown, Phase: inspect.RoleUnknown, Source: inspect.RoleUnknown}
	for i := range st.Clusters {
		c := &st.Clusters[i]
		c.Role, c.Reachable, c.ClusterInfo, c.StateEpoch = inspect.RoleUnknown, false, inspect.ClusterInfo{Brokers: []inspect.Broker{}}, -1
		c.Error = "cluster " + c.Name + " (" + c.Name + "-1:9092): cannot connect: connection refused"
	}
	st.Mirror, st.Topics, st.Groups = nil, []inspect.TopicStatus{}, []inspect.GroupStatus{}
	st.MirrorNotRead = "not read: the link's state needs both clusters, and east (unknown) and west (unknown) did not answer"
	st.Problems = []string{"no cluster answers: the live roles are unknown"}
	return snapshotOf(st, nil)
}

func scenarioFailingOver() *Snapshot {
	st := steadyStatus()
	st.Roles.Epoch, st.Roles.Phase = 4, rolestate.PhaseFailingOver
	st.Roles.Run = &rolestate.Run{ID: "failover-20261201T095930-1234", Kind: rolestate.RunFailover, Step: 3, StartedAt: t0.Add(-30 * time.Second), By: "oncall@host"}
	st.Clusters[0].StateEpoch, st.Clusters[1].StateEpoch = 4, 4
	fenced, open := true, false // fence: acl, past the fence step
	st.Clusters[0].Fenced, st.Clusters[1].Fenced = &fenced, &open
	st.Mirror.LagRecords, st.Mirror.LagSeconds = 120, 0.8
	return snapshotOf(st, lagReport(st, map[string]int64{"orders": 120}, t0))
}

func scenarioStale() *Snapshot {
	st := steadyStatus()
	st.Roles = inspect.Roles{Epoch: 6, Active: "west", Standby: "east", Phase: rolestate.PhaseWiping, Source: "cluster west",
		Run: &rolestate.Run{ID: "failover-20261201T090000-77", Kind: rolestate.RunFailover, Step: 8, StartedAt: t0.Add(-time.Hour), By: "oncall@host"}}
	st.Clusters = []inspect.ClusterStatus{cluster("west", "active", 6), cluster("east", "standby", 5)}
	st.Clusters[1].Stale = true
	st.Mirror = &linkstate.State{Link: "west->east", Error: "no progress: the link never ran"}
	st.Problems = []string{
		"cluster east holds an older role state (stale); a failover happened without it: reseed it with drctl reseed east",
		"mirror west->east: no progress: the link never ran",
	}
	return snapshotOf(st, nil)
}

// runEvents are the events of a failover run the console started, up to
// its fourth step with progress.
func runEvents() []plans.Event {
	p := &plans.Plan{ID: "failover-20261201T095930-1234", Kind: "failover"}
	titles := []string{"Check east and west are ready", "Record the failover run in both clusters", "Fence east against writes", "Drain the mirror east->west", "Make west the active cluster", "Move consumer-group positions to west", "Mark the roles steady"}
	for i, t := range titles {
		p.Steps = append(p.Steps, plans.Step{Index: i, Name: fmt.Sprint("s", i), Title: t})
	}
	ev := func(typ plans.EventType, i int, d time.Duration) plans.Event {
		return plans.Event{Type: typ, RunID: p.ID, Kind: p.Kind, Index: i, Total: len(titles), Title: titles[min(i, len(titles)-1)], Time: t0.Add(-30*time.Second + d)}
	}
	start := ev(plans.EventRunStarted, 0, 0)
	start.Plan = p
	out := []plans.Event{start}
	for i := range 3 {
		out = append(out, ev(plans.EventStepStarted, i, time.Duration(i)*time.Second))
		done := ev(plans.EventStepDone, i, time.Duration(i)*time.Second+500*time.Millisecond)
		done.ElapsedMS, done.Summary = 500, "ok"
		out = append(out, done)
	}
	out = append(out, ev(plans.EventStepStarted, 3, 4*time.Second))
	f := 0.4
	prog := ev(plans.EventStepProgress, 3, 10*time.Second)
	prog.Message, prog.Fraction = "120 records to copy, about 1s left", &f
	return append(out, prog)
}

// fixtureDrills: a passing canary drill and an older failing failover
// drill, newest first.
func fixtureDrills() []drill.Record {
	canary := drill.Record{ID: "drill-20261201T093000-1", Drill: "canary", Kind: "canary", Topology: "payments", StartedAt: t0.Add(-30 * time.Minute),
		FinishedAt: t0.Add(-30*time.Minute + 42*time.Second), Verdict: drill.Pass, Reasons: []string{"every canary record arrived once, in order; p99 latency 180 ms within 1000 ms"},
		RPO: &drill.RPO{Seconds: 0.4}}
	fo := drill.Record{ID: "drill-20261130T220000-2", Drill: "weekly", Kind: "failover", Topology: "payments", StartedAt: t0.Add(-12 * time.Hour),
		FinishedAt: t0.Add(-12*time.Hour + 3*time.Minute), Verdict: drill.Fail, Reasons: []string{"RTO 95.0s is above the objective 60s"}}
	return []drill.Record{canary, fo}
}
