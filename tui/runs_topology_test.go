package tui

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/drctl/drctl/plans"
)

// writeJournal writes the journal of a run of topology topoName in dir:
// done steps of three done, then a run-done with outcome ("" for a run
// killed before it ended).
func writeJournal(t *testing.T, dir, id, kind, topoName string, done int, outcome plans.Outcome, at time.Time) *plans.Plan {
	t.Helper()
	p := plans.New(id, kind)
	p.CreatedAt = at
	if err := p.SetInputs(map[string]any{"topology": topoName, "to": "west"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []plans.StepSpec{{Name: "preflight", Title: "Check east and west are ready"}, {Name: "flip-roles", Title: "Make west the active cluster"}, {Name: "wipe", Title: "Wipe east", Destructive: true}} {
		if err := p.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	digest, err := p.Digest()
	if err != nil {
		t.Fatal(err)
	}
	j, err := plans.CreateJournal(filepath.Join(dir, id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	ev := func(e plans.Event) {
		e.RunID, e.Kind, e.Total, e.Time = id, kind, len(p.Steps), at
		if err := j.Handle(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	ev(plans.Event{Type: plans.EventRunStarted, Plan: p, Digest: digest, Actor: "oncall@host"})
	for i := range done {
		ev(plans.Event{Type: plans.EventStepStarted, Index: i, Title: p.Steps[i].Title})
		ev(plans.Event{Type: plans.EventStepDone, Index: i, Title: p.Steps[i].Title, Summary: "step " + p.Steps[i].Name + " done", ElapsedMS: 1500})
	}
	if outcome != "" {
		e := plans.Event{Type: plans.EventRunDone, Index: done, Outcome: outcome}
		if outcome != plans.OutcomeSucceeded {
			ev(plans.Event{Type: plans.EventStepStarted, Index: done, Title: p.Steps[done].Title})
			ev(plans.Event{Type: plans.EventStepFailed, Index: done, Title: p.Steps[done].Title, Error: "east: connection refused"})
			e.Error = "step 3 failed: east: connection refused"
		}
		ev(e)
	}
	return p
}

// TestJournalsOfOneTopology: the journal directory holds the runs of every
// topology run from this machine; the Runs view lists only the console's
// topology's (an unfinished failover of another is not this one's).
func TestJournalsOfOneTopology(t *testing.T) {
	dir := t.TempDir()
	writeJournal(t, dir, "failover-20261201T090000-aaaa", "failover", "payments", 3, plans.OutcomeSucceeded, t0.Add(-2*time.Hour))
	writeJournal(t, dir, "failover-20261201T093000-bbbb", "failover", "orders", 1, "", t0.Add(-time.Hour))
	runs, err := readJournals(dir, "payments", 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].ID != "failover-20261201T090000-aaaa" {
		t.Fatalf("runs of payments: %+v; want only failover-20261201T090000-aaaa", runs)
	}
}
