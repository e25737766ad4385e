package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReseedTopicBadInput: reseed-topic refuses, with exit 2 and the fix
// named, a missing or ambiguous choice, a topic that is not mirrored, and
// a run without a terminal and without --yes, before contacting anything
// (the clusters of this topology do not exist).
func TestReseedTopicBadInput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "drctl.yaml")
	yaml := "name: t\nclusters:\n  east:\n    bootstrap: [127.0.0.1:1]\n  west:\n    bootstrap: [127.0.0.1:2]\n" +
		"active: east\nstandby: west\nmirror:\n  topics: {include: [orders]}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"orders"}, "choose one of --salvage"},
		{[]string{"--salvage", "--drop", "orders"}, "choose one of --salvage"},
		{[]string{"--drop"}, "name one topic"},
		{[]string{"--drop", "--yes", "payments"}, "payments is not mirrored"},
		{[]string{"--drop", "orders"}, "pass --yes"},
	} {
		_, stderr, code := drctl(t, append([]string{"-c", path, "mirror", "reseed-topic"}, tt.args...)...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tt.args, code, stderr, tt.want)
		}
	}
}
