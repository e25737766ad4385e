package main

import (
	"strings"
	"testing"

	"github.com/drctl/drctl/internal/kfaketest"
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
