package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStalePlanRefusedBeforePrinting: a saved plan made from another
// version of the topology is refused (exit 2) before a line of it is
// printed, with the advice to make a new plan, not to resume.
func TestStalePlanRefusedBeforePrinting(t *testing.T) {
	env := newOffsetsEnv(t)
	path := env.pair.Path
	plan := filepath.Join(t.TempDir(), "plan.json")
	if _, stderr, code := drctl(t, "plan", "failover", "--to", "west", "--out", plan, "-c", path); code != 0 {
		t.Fatalf("plan: exit %d: %s", code, stderr)
	}
	yaml, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(yaml), "group_sync_interval: 1h", "group_sync_interval: 2h", 1)
	if changed == string(yaml) {
		t.Fatalf("the test topology has no group_sync_interval: 1h:\n%s", yaml)
	}
	if err := os.WriteFile(path, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := drctl(t, "apply", plan, "--yes", "-c", path)
	if code != exitBadInput || !strings.Contains(stderr, "make a new plan") || strings.Contains(stderr, "resume") {
		t.Errorf("apply of a stale plan: exit %d, stderr %q", code, stderr)
	}
	if strings.Contains(out, "preflight") || strings.Contains(out, "Run ") {
		t.Errorf("the stale plan was printed or run:\n%s", out)
	}
}

// TestEditedPlanRefusedBeforePrinting: a saved plan whose wipe was edited
// to name the other cluster is refused (exit 2) before a line of it is
// printed: the titles it would show are not what would run.
func TestEditedPlanRefusedBeforePrinting(t *testing.T) {
	env := newOffsetsEnv(t)
	path := env.pair.Path
	plan := filepath.Join(t.TempDir(), "plan.json")
	if _, stderr, code := drctl(t, "plan", "failover", "--to", "west", "--out", plan, "-c", path); code != 0 {
		t.Fatalf("plan: exit %d: %s", code, stderr)
	}
	raw, err := os.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	steps, _ := doc["steps"].([]any)
	for _, s := range steps {
		if step, _ := s.(map[string]any); step["name"] == "wipe" {
			step["params"] = map[string]any{"stale": "west", "active": "east"}
		}
	}
	out0, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	edited := string(out0)
	if edited == string(raw) {
		t.Fatalf("the plan has no wipe of east to edit:\n%s", raw)
	}
	if err := os.WriteFile(plan, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := drctl(t, "apply", plan, "--yes", "-c", path)
	if code != exitBadInput || !strings.Contains(stderr, "the plan was changed after it was made") {
		t.Errorf("apply of an edited plan: exit %d, stderr %q", code, stderr)
	}
	if strings.Contains(out, "preflight") || strings.Contains(out, "Wipe") || strings.Contains(out, "Run ") {
		t.Errorf("the edited plan was printed or run:\n%s", out)
	}
}
