package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/mirror"
)

// TestDrillCommands: drill run's exit code is the verdict; history lists
// the drill; report renders it in every format; bad input exits 2 and an
// unreachable pair 3.
func TestDrillCommands(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	p := kfaketest.NewPair(t, kfaketest.Options{
		Mirror: "  topics: {include: [\"orders\"]}\n  group_sync_interval: 500ms",
		Extra: "failover: {fence: none}\ndrills:\n  named:\n    quick:\n      kind: canary\n      schedule: \"* * * * *\"\n" +
			"      params: {records: 10, rate: 100}\n      objectives: {max_canary_latency: 20s}\n"})
	ctx, cancel := context.WithCancel(context.Background())
	d := mirror.NewDaemon(p.Topology, mirror.DaemonOptions{StatePoll: 200 * time.Millisecond,
		Engine: mirror.Options{Shards: 1, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond}})
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	out, errb, code := drctl(t, "-c", p.Path, "drill", "run", "quick")
	if code != exitOK || !strings.Contains(out, "PASS") {
		t.Fatalf("drill run quick: exit %d\n%s\n%s", code, out, errb)
	}
	out, _, code = drctl(t, "-c", p.Path, "drill", "history", "-o", "json")
	var hist []struct {
		ID, Drill, Verdict string
	}
	if code != 0 || json.Unmarshal([]byte(out), &hist) != nil || len(hist) != 1 || hist[0].Drill != "quick" || hist[0].Verdict != "pass" {
		t.Fatalf("history: exit %d %s", code, out)
	}
	id := hist[0].ID
	out, errb, code = drctl(t, "-c", p.Path, "drill", "report", id, "--format", "junit")
	if code != 0 || xml.Unmarshal([]byte(out), new(struct{})) != nil || !strings.Contains(out, `failures="0"`) {
		t.Fatalf("junit report: exit %d\n%s\n%s", code, out, errb)
	}
	html := filepath.Join(t.TempDir(), "r.html")
	if _, errb, code = drctl(t, "-c", p.Path, "drill", "report", id[:20], "--format", "html", "--out", html); code != 0 {
		t.Fatalf("html report by id prefix: exit %d %s", code, errb)
	}
	if b, _ := os.ReadFile(html); !strings.Contains(string(b), "<svg") {
		t.Errorf("html report has no chart")
	}
	out, _, _ = drctl(t, "-c", p.Path, "drill", "history")
	if !strings.Contains(out, id) || !strings.Contains(out, "pass") {
		t.Errorf("history table:\n%s", out)
	}

	for name, args := range map[string][]string{
		"unknown drill":      {"drill", "run", "nightly"},
		"unknown kind":       {"drill", "run", "--kind", "chaos"},
		"name and kind":      {"drill", "run", "quick", "--kind", "canary"},
		"disruptive refused": {"drill", "run", "--kind", "failover", "--yes"},
		"bad report format":  {"drill", "report", id, "--format", "pdf"},
		"unknown report id":  {"drill", "report", "drill-nope"},
	} {
		if _, errb, code := drctl(t, append([]string{"-c", p.Path}, args...)...); code != exitBadInput {
			t.Errorf("%s: exit %d, want 2: %s", name, code, errb)
		}
	}
	p.Stop("west")
	if _, errb, code := drctl(t, "-c", p.Path, "drill", "run", "--kind", "canary"); code != exitUnreachable || !strings.Contains(errb, "west") {
		t.Errorf("west down: exit %d, want 3: %s", code, errb)
	}
}
