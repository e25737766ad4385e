package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drctl/drctl/inspect"
)

// TestMain lets the test binary act as drctl in a child process, so tests
// can run the sandbox in another process than the one that inspects it.
func TestMain(m *testing.M) {
	if os.Getenv("DRCTL_TEST_AS_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestStatusAgainstSandboxProcess starts `drctl sandbox` in a child process
// and runs `drctl status -o json` against the two kfake clusters it serves.
func TestStatusAgainstSandboxProcess(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "sandbox", "--dir", dir, "--east-port", "-1", "--west-port", "-1", "--mirror-listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "DRCTL_TEST_AS_MAIN=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = 20 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Signal(syscall.SIGINT)
			if err := cmd.Wait(); err != nil {
				t.Errorf("sandbox did not stop cleanly on Ctrl-C: %v\n%s", err, out.String())
			}
		}
	}
	defer stop()

	path := filepath.Join(dir, "drctl.yaml")
	var st inspect.Status
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			stdout, stderr, code := drctl(t, "-c", path, "status", "-o", "json")
			st = inspect.Status{}
			if code == 0 && json.Unmarshal([]byte(stdout), &st) == nil && len(st.Topics) >= 4 && len(st.Groups) >= 2 && mirrored(st) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("status never showed the sandbox's topics and groups: exit %d\n%s\n%s\nsandbox:\n%s", code, stdout, stderr, out.String())
			}
		} else if time.Now().After(deadline) {
			t.Fatalf("sandbox wrote no topology:\n%s", out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st.Mirror == nil || !st.Mirror.Running || st.Mirror.Link != "east->west" {
		t.Errorf("status shows no running mirror east->west: %+v", st.Mirror)
	}
	for _, c := range st.Clusters {
		if !c.Reachable {
			t.Errorf("cluster %s unreachable: %s", c.Name, c.Error)
		}
		if c.KafkaVersion != inspect.KfakeRelease {
			t.Errorf("cluster %s: kafka %q, want %q", c.Name, c.KafkaVersion, inspect.KfakeRelease)
		}
	}
	names := map[string]inspect.TopicStatus{}
	for _, tp := range st.Topics {
		names[tp.Name] = tp
	}
	for _, want := range []string{"orders", "payments.eu", "payments.us", "customers"} {
		if tp, ok := names[want]; !ok || !tp.Active.Exists {
			t.Errorf("topic %s missing from status on the active: %+v", want, st.Topics)
		}
	}
	if _, ok := names["scratch"]; ok {
		t.Error("scratch is not selected but status lists it")
	}
	stop()
	if !strings.Contains(out.String(), "validate --online") {
		t.Errorf("the sandbox did not print the commands to try:\n%s", out.String())
	}
}

// mirrored reports whether the sandbox's mirror runs, has brought every
// selected topic into parity on the standby, and keeps every group's
// position in sync there.
func mirrored(st inspect.Status) bool {
	for _, tp := range st.Topics {
		if !tp.InParity {
			return false
		}
	}
	for _, g := range st.Groups {
		if g.Sync == nil || !g.Sync.InSync {
			return false
		}
	}
	return st.Mirror != nil && st.Mirror.Running
}
