package tui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drctl/drctl/plans"
)

func TestReadOnlyRefusesEveryAction(t *testing.T) {
	m := fixtureModel(80, 24, true)
	m.Update(snapshotMsg{scenarioSteady()})
	if !strings.Contains(m.View(), "READ-ONLY") {
		t.Fatal("the header does not say READ-ONLY")
	}
	for _, k := range []string{"f", "F", "b", "R", "s", "d"} {
		_, cmd := m.Update(key(k))
		if cmd != nil || m.dialog != nil {
			t.Fatalf("%s started something in read-only mode", k)
		}
		if !strings.Contains(m.flash, "read-only") {
			t.Fatalf("%s: flash %q does not say read-only", k, m.flash)
		}
	}
}

func TestUnplannedOnlyWhileTheActiveIsDown(t *testing.T) {
	m := fixtureModel(80, 24, false)
	m.Update(snapshotMsg{scenarioSteady()})
	if _, cmd := m.Update(key("F")); cmd != nil || !strings.Contains(m.flash, "only while the active east is unreachable") {
		t.Fatalf("F with the active up: cmd %v, flash %q", cmd != nil, m.flash)
	}
	m.Update(snapshotMsg{scenarioClusterDown()})
	if _, cmd := m.Update(key("f")); cmd != nil || !strings.Contains(m.flash, "F plans an unplanned failover") {
		t.Fatalf("f with the active down: cmd %v, flash %q", cmd != nil, m.flash)
	}
	if _, cmd := m.Update(key("F")); cmd == nil {
		t.Fatal("F with the active down planned nothing")
	}
}

func TestFilterSortAndOpen(t *testing.T) {
	m := fixtureModel(80, 24, false)
	m.Update(snapshotMsg{scenarioLagging()})
	m.Update(key("2"))
	for _, k := range []string{"/", "o", "r", "d"} {
		m.Update(key(k))
	}
	m.Update(key("enter"))
	if got := m.topics.list.Len(); got != 1 || m.topics.list.SelectedKey() != "orders" {
		t.Fatalf("filter \"ord\": %d rows, selected %q", got, m.topics.list.SelectedKey())
	}
	m.Update(key("/"))
	m.Update(key("esc"))
	if m.topics.list.Len() != 3 {
		t.Fatalf("esc did not clear the filter: %d rows", m.topics.list.Len())
	}
	// o four times: sort by lag (the fourth column), ascending.
	for range 3 {
		m.Update(key("o"))
	}
	if m.topics.list.SortLabel() != "lag ↑" {
		t.Fatalf("sort: %s", m.topics.list.SortLabel())
	}
	m.Update(key("G"))
	if m.topics.list.SelectedKey() != "orders" {
		t.Fatalf("last row by lag is %q, want orders", m.topics.list.SelectedKey())
	}
	m.Update(key("enter"))
	v := m.View()
	if !strings.Contains(v, "TOPIC orders") || strings.Count(v, "\n") != 23 {
		t.Fatalf("enter did not open orders' partitions:\n%s", v)
	}
	m.Update(key("esc"))
	if m.topics.open != "" {
		t.Fatal("esc did not go back to the topic list")
	}
}

func TestRefreshTicks(t *testing.T) {
	m := New(Options{Topology: fixtureTopology(), Now: func() time.Time { return t0 }})
	if cmd := m.Init(); cmd == nil || !m.refreshing {
		t.Fatal("Init started no refresh")
	}
	// While a refresh is in flight, r starts no second one and keys answer.
	if _, cmd := m.Update(key("r")); cmd != nil {
		t.Fatal("r started a second refresh while one is in flight")
	}
	m.Update(key("3"))
	if m.active != viewGroups {
		t.Fatal("keys do not answer while a refresh is in flight")
	}
	if cmd := m.setSnapshot(scenarioSteady()); cmd == nil {
		t.Fatal("no tick scheduled after a refresh")
	}
	id := m.tickID
	m.Update(key("+"))
	if m.interval != 5*time.Second || m.tickID == id {
		t.Fatalf("+: interval %s, tick id %d (was %d)", m.interval, m.tickID, id)
	}
	if _, cmd := m.Update(tickMsg{id}); cmd != nil {
		t.Fatal("a tick of the old interval started a refresh")
	}
	m.Update(key("p"))
	if !strings.Contains(m.View(), "PAUSED") {
		t.Fatal("the header does not say PAUSED")
	}
	if _, cmd := m.Update(tickMsg{m.tickID}); cmd != nil {
		t.Fatal("a paused console refreshed")
	}
	if _, cmd := m.Update(key("p")); cmd == nil || !m.refreshing {
		t.Fatal("resuming did not refresh at once")
	}
}

func TestDialogRunsOnlyOnTheTypedName(t *testing.T) {
	m := fixtureModel(80, 24, false)
	m.Update(snapshotMsg{scenarioSteady()})
	ran := 0
	m.dialog = newDialog("Failover plan p1", "Plan p1: failover, 13 steps", `Type the name of the cluster "west": `, "west",
		func(*Model) tea.Cmd { ran++; return nil })
	for _, k := range []string{"e", "a", "s", "t"} {
		m.Update(key(k))
	}
	m.Update(key("enter"))
	if ran != 0 || m.dialog == nil || !strings.Contains(m.View(), "that is not west") {
		t.Fatalf("typing east ran the plan (%d) or closed the dialog", ran)
	}
	for _, k := range []string{"w", "e", "s", "t"} {
		m.Update(key(k))
	}
	m.Update(key("enter"))
	if ran != 1 || m.dialog != nil {
		t.Fatalf("typing west: ran %d times, dialog open %v", ran, m.dialog != nil)
	}
	m.dialog = newDialog("x", "y", "[y/N] ", "", func(*Model) tea.Cmd { ran++; return nil })
	m.Update(key("esc"))
	if ran != 1 || !strings.Contains(m.flash, "nothing was changed") {
		t.Fatalf("esc: ran %d, flash %q", ran, m.flash)
	}
}

func TestCtrlCDuringARunStopsItTwoStage(t *testing.T) {
	m := fixtureModel(80, 24, false)
	m.Update(snapshotMsg{scenarioFailingOver()})
	m.interrupts = &plans.Interrupts{}
	m.run = &liveRun{id: "r1", resume: "drctl -c drctl.yaml resume r1"}
	m.runs.run = m.run
	if _, cmd := m.Update(key("q")); cmd != nil || !strings.Contains(m.flash, "in progress") {
		t.Fatal("q quit while a run is in progress")
	}
	m.Update(key("ctrl+c"))
	if m.interrupts.Count() != 1 || !m.run.stopping {
		t.Fatalf("first ctrl-c: %d interrupts", m.interrupts.Count())
	}
	m.Update(key("ctrl+c"))
	if m.interrupts.Count() != 2 {
		t.Fatalf("second ctrl-c: %d interrupts", m.interrupts.Count())
	}
	m.Update(runEventMsgFor(plans.Event{Type: plans.EventRunDone, RunID: "r1", Outcome: plans.OutcomeCancelled, Time: t0}))
	m.Update(runEndedMsg{err: &plans.InterruptError{}})
	if _, cmd := m.Update(key("q")); cmd == nil {
		t.Fatal("q did not quit after the run stopped")
	}
	if m.Resume != "drctl -c drctl.yaml resume r1" {
		t.Fatalf("resume command %q", m.Resume)
	}
}

// runEventMsgFor feeds an event as the run hook would; the hook's next
// read is not needed here.
func runEventMsgFor(e plans.Event) tea.Msg {
	return runEventMsg{e}
}

func TestDrillKeyAsksFirst(t *testing.T) {
	m := fixtureModel(80, 24, false)
	m.Update(snapshotMsg{scenarioSteady()})
	m.Update(key("d"))
	if m.dialog == nil || !strings.Contains(m.dialog.title, "Canary drill") || m.dialog.expect != "" {
		t.Fatalf("d did not ask y/N before a canary drill: %+v", m.dialog)
	}
	if !strings.Contains(m.View(), "touches nothing but the canary topic and group") {
		t.Fatalf("the question does not say what the drill touches:\n%s", m.View())
	}
	m.Update(key("esc"))
	if m.run != nil || m.dialog != nil {
		t.Fatal("esc started the drill")
	}
}

// TestYesNoOnOneKey: a y/N question is answered by the single key, as k9s
// does: y runs, n and esc do not; enter and other keys answer nothing.
func TestYesNoOnOneKey(t *testing.T) {
	m := fixtureModel(80, 24, false)
	m.Update(snapshotMsg{scenarioSteady()})
	ran := 0
	ask := func() {
		m.dialog = newDialog("Offsets sync billing on west", "billing orders/0: 3 -> 7", "Commit 1 offset(s) on west? [y/N] ", "", func(*Model) tea.Cmd { ran++; return nil })
	}
	ask()
	for _, k := range []string{"enter", "x", "e"} {
		m.Update(key(k))
		if m.dialog == nil || ran != 0 {
			t.Fatalf("%q answered the question (ran %d)", k, ran)
		}
	}
	if !strings.Contains(m.View(), "press y for yes, n or esc for no") {
		t.Fatalf("a stray key does not say how to answer:\n%s", m.View())
	}
	m.Update(key("y"))
	if ran != 1 || m.dialog != nil {
		t.Fatalf("y alone: ran %d, dialog open %v", ran, m.dialog != nil)
	}
	for _, k := range []string{"n", "esc"} {
		ask()
		m.Update(key(k))
		if ran != 1 || m.dialog != nil || !strings.Contains(m.flash, "nothing was changed") {
			t.Fatalf("%s: ran %d, dialog open %v, flash %q", k, ran, m.dialog != nil, m.flash)
		}
	}

	// A run's question too: y alone answers it.
	m.run = &liveRun{id: "r1"}
	m.runs.run = m.run
	reply := make(chan error, 1)
	m.Update(stepQuestionMsg{question: "fence none: stop every producer writing to east now. Have they stopped?", reply: reply})
	m.Update(key("y"))
	select {
	case err := <-reply:
		if err != nil {
			t.Fatalf("y answered %v", err)
		}
	default:
		t.Fatal("y alone did not answer the run's question")
	}
}

// TestCtrlCAtARunsQuestionIsNo: ctrl-c while a run's step asks answers
// no (the step is not left waiting) and stops the run after the step.
func TestCtrlCAtARunsQuestionIsNo(t *testing.T) {
	m := fixtureModel(80, 24, false)
	m.Update(snapshotMsg{scenarioFailingOver()})
	m.interrupts = &plans.Interrupts{}
	m.run = &liveRun{id: "r1", resume: "drctl -c drctl.yaml resume r1"}
	m.runs.run = m.run
	reply := make(chan error, 1)
	m.Update(stepQuestionMsg{question: "Have they stopped?", reply: reply})
	m.Update(key("ctrl+c"))
	select {
	case err := <-reply:
		if err == nil {
			t.Fatal("ctrl-c answered yes")
		}
	default:
		t.Fatal("ctrl-c left the step's question unanswered")
	}
	if m.dialog != nil || m.interrupts.Count() != 1 {
		t.Fatalf("dialog open %v, %d interrupts", m.dialog != nil, m.interrupts.Count())
	}
}
