package tui

import (
	"context"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestCanaryDrillThroughKeys: d asks first; y runs the default canary drill
// (as drctl drill run does) against
// the live pair; the Events view logs its verdict, the Drills view (5)
// lists the record, and the clusters hold the same record with a pass.
func TestCanaryDrillThroughKeys(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{
		Mirror: "  topics: {include: [\"orders\"]}\n  groups: {include: [\"billing\"]}\n  group_sync_interval: 300ms",
		Extra:  "failover: {fence: none, drain_timeout: 30s, quiet_period: 300ms}\n",
	})
	topo := p.Topology
	kfaketest.Seed(t, topo, "east", "orders", 2, 5, "billing", 0)
	runMirror(t, topo)

	dir := t.TempDir()
	m := New(Options{Topology: topo, Interval: 300 * time.Millisecond, Timeout: 5 * time.Second, JournalDir: dir})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 40))
	waitScreen(t, tm, "mirror caught up, groups in sync", 60*time.Second)
	tm.Send(key("d"))
	waitScreen(t, tm, "Run the canary drill now? [y/N]", 10*time.Second)
	tm.Send(key("y"))
	tm.Send(key("6"))
	waitScreen(t, tm, ") pass", 120*time.Second) // "drill canary (ID) pass"
	tm.Send(key("5"))
	waitScreen(t, tm, "last: canary PASS", 30*time.Second)
	tm.Send(key("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hist, err := drill.History(ctx, kfaketest.Session(t, topo), drill.HistoryOptions{JournalDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 1 || hist[0].Drill != "canary" || !hist[0].Passed() {
		t.Fatalf("drill history after d: %d record(s) %+v; want one passed run of the default canary drill", len(hist), hist)
	}
}
