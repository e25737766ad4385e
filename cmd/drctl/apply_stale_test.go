package main

import (
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
