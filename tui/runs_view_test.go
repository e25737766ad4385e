package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
)

// fixturePastRuns: an unplanned drill's run, an aborted failover (aborted
// from another machine after its journal here said failed), a
// succeeded canary drill; newest first.
func fixturePastRuns(t *testing.T) []PastRun {
	t.Helper()
	dir := t.TempDir()
	unplanned := plans.New("drill-unplanned-20261201T095500-f0690a", "drill-failover")
	unplanned.CreatedAt = t0.Add(-5 * time.Minute)
	for _, s := range []plans.StepSpec{{Name: "drill-canary-topic", Title: "Ensure the canary topic"}, {Name: "drill-pause-mirror", Title: "Pause the mirror east->west", Destructive: true}, {Name: drill.StepUnplannedFailover, Title: "Fail over to west as if east were lost", Destructive: true}} {
		if err := unplanned.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	_ = unplanned.SetInputs(map[string]any{"topology": "payments"})
	writeJournal(t, dir, "failover-20261201T094000-41154c", "failover", "payments", 2, plans.OutcomeFailed, t0.Add(-20*time.Minute))
	writeJournal(t, dir, "drill-canary-20261201T093000-acb276", "drill-canary", "payments", 3, plans.OutcomeSucceeded, t0.Add(-30*time.Minute))
	journal, err := readJournals(dir, "payments", 50)
	if err != nil {
		t.Fatal(err)
	}
	// readJournals dates a run by its file; the fixture's clock is fixed.
	for i := range journal {
		journal[i].At = map[string]time.Time{"failover-20261201T094000-41154c": t0.Add(-20 * time.Minute), "drill-canary-20261201T093000-acb276": t0.Add(-30 * time.Minute)}[journal[i].ID]
	}
	var aborted *runrecord.Record
	for _, r := range journal {
		if r.ID == "failover-20261201T094000-41154c" {
			p := plans.New(r.ID, "failover")
			p.CreatedAt = t0.Add(-20 * time.Minute)
			for _, s := range r.Steps {
				_ = p.Add(plans.StepSpec{Name: "s", Title: s.Title})
			}
			aborted = &runrecord.Record{Plan: p, Done: []bool{true, true, false}, Started: 2, Outcome: plans.OutcomeFailed,
				Aborted: &runrecord.Aborted{By: "ops@far", At: t0.Add(-10 * time.Minute), Reason: "east lost for good", Step: 2, Undone: []string{"fence on east"}}}
		}
	}
	unplannedRec := &runrecord.Record{Plan: unplanned, Done: []bool{true, true, false}, Started: 2}
	return mergeRuns(journal, []*runrecord.Record{aborted, unplannedRec})
}

// TestGoldenPastRuns: the Runs view's past runs at 80x24 and 200x50. Run
// ids are whole at both sizes (an operator types them); at 200 columns the
// kind is whole too, not padded elsewhere; the unplanned drill says so and
// the aborted run says aborted.
func TestGoldenPastRuns(t *testing.T) {
	runs := fixturePastRuns(t)
	for _, size := range [][2]int{{80, 24}, {200, 50}} {
		w, h := size[0], size[1]
		t.Run(fmt.Sprintf("%dx%d", w, h), func(t *testing.T) {
			m := fixtureModel(w, h, false)
			snap := scenarioSteady()
			snap.Runs = runs
			m.Update(snapshotMsg{snap})
			m.Update(key("4"))
			out := screen(t, m, w, h)
			golden.RequireEqual(t, []byte(out))
			for _, id := range []string{"drill-unplanned-20261201T095500-f0690a", "failover-20261201T094000-41154c", "drill-canary-20261201T093000-acb276"} {
				if !strings.Contains(out, id) {
					t.Errorf("run id %s is not whole on screen", id)
				}
			}
			if !strings.Contains(out, "aborted") {
				t.Error("the aborted run does not say aborted")
			}
			if w >= 200 {
				for _, kind := range []string{"drill-unplanned", "drill-canary"} {
					if !strings.Contains(out, kind+" ") {
						t.Errorf("at %d columns the kind %s is cut", w, kind)
					}
				}
			}
		})
	}
}

// TestPastRunDetails: enter on a past run opens its steps (done, where it
// stopped), its error and who aborted it; esc goes back to the list.
func TestPastRunDetails(t *testing.T) {
	m := fixtureModel(80, 24, false)
	snap := scenarioSteady()
	snap.Runs = fixturePastRuns(t)
	m.Update(snapshotMsg{snap})
	m.Update(key("4"))
	m.Update(key("j"))
	if got := m.runs.past.SelectedKey(); got != "failover-20261201T094000-41154c" {
		t.Fatalf("selected %q", got)
	}
	m.Update(key("enter"))
	out := screen(t, m, 80, 24)
	for _, want := range []string{"RUN failover-20261201T094000-41154c", "aborted by ops@far", "east lost for good", "error: step 3 failed: east: connection refused",
		"✓  1 Check east and west are ready: step preflight done", "▶  3 Wipe east [destructive]"} {
		if !strings.Contains(out, want) {
			t.Errorf("the details do not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "to finish it") {
		t.Errorf("an aborted run is offered a resume:\n%s", out)
	}
	m.Update(key("esc"))
	if m.runs.detail != nil || !strings.Contains(m.View(), "PAST RUNS") {
		t.Fatal("esc did not go back to the list")
	}
}

// TestRunsFollowTheNewest: the cursor stays on the newest run as runs
// come, unless the operator moved it; g brings the following back.
func TestRunsFollowTheNewest(t *testing.T) {
	m := fixtureModel(80, 24, false)
	runs := fixturePastRuns(t)
	snap := scenarioSteady()
	snap.Runs = runs[1:]
	m.Update(snapshotMsg{snap})
	m.Update(key("4"))
	next := func(rs []PastRun) {
		s := scenarioSteady()
		s.Runs = rs
		m.Update(snapshotMsg{s})
	}
	next(runs)
	if got := m.runs.past.SelectedKey(); got != runs[0].ID {
		t.Fatalf("a new run came: the cursor is on %q, want the newest %q", got, runs[0].ID)
	}
	m.Update(key("j"))
	newer := append([]PastRun{{ID: "failover-20261201T095900-aaaaaa", Kind: "failover", At: t0, Total: 3}}, runs...)
	next(newer)
	if got := m.runs.past.SelectedKey(); got != runs[1].ID {
		t.Fatalf("the operator moved to %q; after a refresh the cursor is on %q", runs[1].ID, got)
	}
	m.Update(key("g"))
	next(append([]PastRun{{ID: "failover-20261201T100000-bbbbbb", Kind: "failover", At: t0, Total: 3}}, newer...))
	if got := m.runs.past.SelectedKey(); got != "failover-20261201T100000-bbbbbb" {
		t.Fatalf("after g the cursor does not follow the newest: %q", got)
	}
}

// TestDrillsNewestFirst: the Drills view keeps the history's order,
// newest first (not by name), has an RTO column, and enter opens the
// drill's report.
func TestDrillsNewestFirst(t *testing.T) {
	hist := fixtureDrills()
	hist[0].Drill, hist[1].Drill = "zz-canary", "aa-weekly" // by name, the older would come first
	rto := 42.5
	hist[1].Directions = []drill.Direction{{From: "east", To: "west", RTOWriteSeconds: rto}}
	m := fixtureModel(80, 24, false)
	m.Update(snapshotMsg{scenarioSteady()})
	m.Update(key("5"))
	m.Update(drillsMsg{hist: hist})
	out := m.View()
	if m.drills.list.SelectedKey() != "zz-canary" || strings.Index(out, "zz-canary") > strings.Index(out, "aa-weekly") {
		t.Fatalf("the drills are not newest first:\n%s", out)
	}
	if !strings.Contains(out, "rto s") || !strings.Contains(out, "42.5") {
		t.Fatalf("no RTO column or value:\n%s", out)
	}
	m.Update(key("enter"))
	out = m.View()
	if !strings.Contains(out, "DRILL "+hist[0].ID) || !strings.Contains(out, "Verdict") {
		t.Fatalf("enter did not open the drill's report:\n%s", out)
	}
	m.Update(key("esc"))
	if m.drills.detail != nil {
		t.Fatal("esc did not close the report")
	}
}
