package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/drctl/drctl/plans"
)

// fixtureFailoverPlan is a failover plan of 13 steps like the one
// failover.PlanFailover builds, with its destructive steps, each step
// carrying what it expects and intends (the full plan is long).
func fixtureFailoverPlan(t *testing.T) *plans.Plan {
	t.Helper()
	p := plans.New("failover-20261201T100000-41154c", "failover")
	p.CreatedAt, p.CreatedBy = t0, "oncall@host"
	if err := p.SetInputs(map[string]any{"topology": "payments", "from": "east", "to": "west", "epoch": 3}); err != nil {
		t.Fatal(err)
	}
	for i, title := range []string{"Check east and west are ready", "Record the failover run in both clusters", "Fence east against writes (acl)",
		"Drain the mirror east->west", "Make west the active cluster", "Fence the mirror link east->west", "Move consumer-group positions to west",
		"Remove drctl's fence from west, if any", "Salvage records on east that never reached west", "Wipe the mirrored topics and groups on east",
		"Start re-seeding east from west", "Wait until east has caught up with west", "Mark the roles steady"} {
		destructive := i == 2 || i == 4 || i == 9
		if err := p.Add(plans.StepSpec{Name: fmt.Sprint("step-", i), Title: title, Destructive: destructive, PointOfNoReturn: i == 4,
			Expect: map[string]any{"epoch": 3, "phase": "steady"}, Intend: map[string]any{"epoch": 4, "phase": "failing-over"}}); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// TestPlanScreenShowsDestructiveStepsFirst: on the f plan screen at 80x24
// every destructive step is on screen without scrolling (a compact
// summary first), and the full plan is below it.
func TestPlanScreenShowsDestructiveStepsFirst(t *testing.T) {
	m := fixtureModel(80, 24, false)
	m.Update(snapshotMsg{scenarioSteady()})
	p := fixtureFailoverPlan(t)
	m.Update(planMsg{what: "failover", plan: p})
	out := screen(t, m, 80, 24)
	golden.RequireEqual(t, []byte(out))
	if !strings.Contains(out, "Make west the active cluster  (point of no return)") {
		t.Errorf("the first screen does not mark the point of no return:\n%s", out)
	}
	for _, s := range p.Steps {
		if s.Destructive && !strings.Contains(out, "! "+fmt.Sprintf("%2d ", s.Index+1)+s.Title) {
			t.Errorf("destructive step %d %q is not on the first screen:\n%s", s.Index+1, s.Title, out)
		}
	}
	if !strings.Contains(out, `Type the name of the cluster "west"`) {
		t.Fatalf("no prompt:\n%s", out)
	}
	for range 3 {
		m.Update(tea.KeyMsg{Type: tea.KeyPgDown})
	}
	if out := m.View(); !strings.Contains(out, "[step-4, destructive, point of no return]") {
		t.Fatalf("the full plan is not below the summary:\n%s", out)
	}
}
