package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/internal/kvstore"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
	"github.com/drctl/drctl/topology"
)

// TestResumeWithoutTerminalNeedsYes: resume changes clusters (and, with
// fence none, would answer "producers stopped" for the operator); without
// a terminal it refuses unless --yes, before contacting anything.
func TestResumeWithoutTerminalNeedsYes(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Extra: "failover: {fence: none}\n"})
	_, stderr, code := drctl(t, "-c", p.Path, "resume", "failover-20260101T000000-abcdef")
	if code != exitBadInput || !strings.Contains(stderr, "--yes") {
		t.Errorf("resume without a terminal: exit %d, stderr %q; want exit %d naming --yes", code, stderr, exitBadInput)
	}
}

// TestResumeOfAFinishedRunSaysSo: resuming a run that finished every step
// changes nothing and says so, with when it ended, exit 1: from this
// machine's journal, or from the clusters when the journal is elsewhere.
func TestResumeOfAFinishedRunSaysSo(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Extra: "failover: {fence: none}\n"})
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	finished := func(id string) *plans.Plan {
		pl := plans.New(id, "failover")
		if err := pl.SetInputs(map[string]any{"topology": p.Topology.Name}); err != nil {
			t.Fatal(err)
		}
		if err := pl.Add(plans.StepSpec{Name: "noop", Title: "Nothing"}); err != nil {
			t.Fatal(err)
		}
		return pl
	}

	local := finished("failover-20261207T000000-aaaaaa")
	dir := failover.JournalDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	journal, err := plans.CreateJournal(filepath.Join(dir, local.ID+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	reg := plans.NewRegistry()
	_ = reg.Register("noop", plans.ActionFunc(func(context.Context, plans.Step, *plans.RunContext) (plans.Result, error) {
		return plans.NewResult("nothing done", nil)
	}))
	if err := (&plans.Executor{Registry: reg, Hooks: []plans.Hook{journal}, Actor: "ops@host-1"}).Run(context.Background(), local); err != nil {
		t.Fatal(err)
	}
	journal.Close()
	_, stderr, code := drctl(t, "-c", p.Path, "resume", local.ID, "--yes")
	if code != exitFailure || !strings.Contains(stderr, "run "+local.ID+" (failover) has already finished: every step succeeded, the last run of it ended at 20") ||
		!strings.Contains(stderr, "by ops@host-1, from this machine's journal") {
		t.Errorf("resume of a finished run (journal): exit %d, stderr %q", code, stderr)
	}

	remote := finished("failover-20261207T000000-bbbbbb")
	raw, err := json.Marshal(runrecord.Record{Plan: remote, Done: []bool{true}, Started: 0, Finished: true, Outcome: plans.OutcomeSucceeded})
	if err != nil {
		t.Fatal(err)
	}
	ctx := kfaketest.Ctx(t, 30*time.Second)
	for _, name := range []string{"east", "west"} {
		if err := kvstore.Put(ctx, kfaketest.Dial(t, p.Topology, name), topology.RunsTopic, remote.ID, raw); err != nil {
			t.Fatal(err)
		}
	}
	_, stderr, code = drctl(t, "-c", p.Path, "resume", remote.ID, "--yes")
	if code != exitFailure || !strings.Contains(stderr, "run "+remote.ID+" (failover) has already finished: every step succeeded, recorded in the clusters at 20") {
		t.Errorf("resume of a finished run (clusters): exit %d, stderr %q", code, stderr)
	}
}
