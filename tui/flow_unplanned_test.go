package tui

import (
	"context"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/plans"
)

// TestUnplannedFailoverThroughKeys: F is refused while the active answers;
// once east dies the verdict says UNPLANNED ONLY and F, with the target's
// name typed, fails over to west: the roles flip on west alone and the run
// stops at the reseed of east; once east is back, R in a new console (the
// run id typed) finishes the run.
func TestUnplannedFailoverThroughKeys(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{
		Persist: true,
		Mirror:  "  topics: {include: [\"orders\"]}\n  groups: {include: [\"billing\"]}\n  group_sync_interval: 300ms",
		Extra:   "failover: {fence: none, drain_timeout: 30s, quiet_period: 300ms}\n",
	})
	topo := p.Topology
	kfaketest.Seed(t, topo, "east", "orders", 2, 5, "billing", 0)
	runMirror(t, topo)

	m := New(Options{Topology: topo, Interval: 300 * time.Millisecond, Timeout: 3 * time.Second, JournalDir: t.TempDir()})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 40))
	waitScreen(t, tm, "mirror caught up, groups in sync", 60*time.Second)
	tm.Send(key("F"))
	waitScreen(t, tm, "F (unplanned failover) is offered only while the active east is unreachable", 10*time.Second)

	p.Stop("east")
	waitScreen(t, tm, "UNPLANNED ONLY", 30*time.Second)
	tm.Send(key("F"))
	waitScreen(t, tm, `Type the name of the cluster "west"`, 60*time.Second)
	tm.Send(key("west"))
	tm.Send(key("enter"))
	// The roles flip on west alone; the reseed of east waits for it.
	waitScreen(t, tm, "(salvage) failed", 120*time.Second)
	waitScreen(t, tm, "active west  standby east", 30*time.Second)
	if m.run == nil || m.run.outcome != plans.OutcomeFailed {
		t.Errorf("the unplanned run did not stop at the reseed of the dead east: %+v", m.run)
	}
	tm.Send(key("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	runID := m.run.id

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	st, _ := inspect.CollectStatus(ctx, kfaketest.Session(t, topo))
	if st.Roles.Active != "west" || st.Roles.Standby != "east" || st.Roles.Run == nil || st.Roles.Run.ID != runID {
		t.Fatalf("roles after the unplanned failover: %+v, want west active with run %s to resume", st.Roles, runID)
	}

	// east comes back: a new console shows the run in progress, and R,
	// with the run id typed, finishes it (salvage, wipe, reseed of east).
	p.Restart(t, "east")
	m = New(Options{Topology: topo, Interval: 300 * time.Millisecond, Timeout: 3 * time.Second, JournalDir: t.TempDir()})
	tm = teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 40))
	waitScreen(t, tm, "run "+runID, 60*time.Second)
	tm.Send(key("R"))
	waitScreen(t, tm, `Type the run id "`+runID+`"`, 60*time.Second)
	tm.Send(key(runID))
	tm.Send(key("enter"))
	waitScreen(t, tm, "run "+runID+" succeeded", 180*time.Second)
	tm.Send(key("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	ctx2, cancel2 := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel2()
	st, _ = inspect.CollectStatus(ctx2, kfaketest.Session(t, topo))
	if st.Roles.Active != "west" || st.Roles.Standby != "east" || st.Roles.Run != nil || st.Roles.Phase != "steady" {
		t.Fatalf("roles after R finished the run: %+v, want west active, east standby, steady, no run", st.Roles)
	}
}
