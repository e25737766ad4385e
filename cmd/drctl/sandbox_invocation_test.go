package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestInvocation: the sandbox's hints say `go run ./cmd/drctl` when it runs
// from go run's build cache, and otherwise how this binary is reached.
func TestInvocation(t *testing.T) {
	cases := map[string]string{
		"/tmp/go-build3051961423/b001/exe/drctl":             "go run ./cmd/drctl",
		"/root/.cache/go-build/tmp/go-build1/b001/exe/drctl": "go run ./cmd/drctl",
		filepath.Join(t.TempDir(), "bin", "drctl"):           "",
		"./drctl":             "./drctl",
		"/opt/my tools/drctl": "'/opt/my tools/drctl'",
	}
	for arg0, want := range cases {
		if want == "" {
			want = arg0
		}
		if got := invocation(arg0); got != want {
			t.Errorf("invocation(%q) = %q, want %q", arg0, got, want)
		}
	}
	// drctl on $PATH that is this very binary: plain "drctl".
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(dir, "drctl")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	if got := invocation(filepath.Join(dir, "drctl")); got != "drctl" {
		t.Errorf("installed: %q, want drctl", got)
	}
}
