package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/mirror"
)

// TestNoOrCtrlCAtAQuestionChangesNothing runs `drctl failover` in a real
// terminal (tmux) on a fence: none pair and answers each of its questions
// with "no" or Ctrl-C: every answer ends drctl within a second with exit 2,
// and the clusters still hold the roles they had (epoch 0, no run).
func TestNoOrCtrlCAtAQuestionChangesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts tmux")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is not installed; .ci/run installs it")
		}
		t.Skip("tmux is not installed")
	}
	bin := drctlBinary(t)
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"orders\"]}", Extra: "failover: {fence: none, drain_timeout: 30s}\n"})
	kfaketest.CreateTopic(t, p.Topology, "east", "orders", 2, nil)
	// The preflight, which runs before the question, wants the mirror.
	ctx, cancel := context.WithCancel(context.Background())
	d := mirror.NewDaemon(p.Topology, mirror.DaemonOptions{StatePoll: 200 * time.Millisecond,
		Engine: mirror.Options{Shards: 1, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond}})
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	socket := fmt.Sprintf("drctl-question-%d", os.Getpid())
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-L", socket}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", socket, "kill-server").Run() })
	screen := func() string { return tmux("capture-pane", "-p", "-t", "q") }
	waitFor := func(what string, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for !strings.Contains(screen(), what) {
			if time.Now().After(deadline) {
				t.Fatalf("%q never showed within %s:\n%s", what, within, screen())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for i, answer := range []struct {
		name     string
		typeName bool // type the cluster's name first
		keys     []string
	}{
		{"Ctrl-C at the name", false, []string{"C-c"}},
		{"no at the producers' question", true, []string{"n", "Enter"}},
		{"Ctrl-C at the producers' question", true, []string{"C-c"}},
	} {
		// A fresh terminal each time: nothing on the screen is left from
		// the answer before, so every wait reads this run's output.
		_ = exec.Command("tmux", "-L", socket, "kill-session", "-t", "q").Run()
		tmux("new-session", "-d", "-s", "q", "-x", "120", "-y", "40", "env", "-i", "PATH=/usr/bin:/bin", "TERM=xterm", "HOME="+t.TempDir(), "sh")
		tmux("send-keys", "-t", "q", "-l", fmt.Sprintf("%s -c %s failover --to west; echo EXIT$?=%d\n", bin, p.Path, i))
		waitFor("Type the name of the cluster", time.Minute)
		if answer.typeName {
			tmux("send-keys", "-t", "q", "-l", "west\n")
			waitFor("Have they stopped? [y/N]", time.Minute)
		}
		start := time.Now()
		tmux(append([]string{"send-keys", "-t", "q"}, answer.keys...)...)
		waitFor(fmt.Sprintf("EXIT2=%d", i), 5*time.Second)
		if took := time.Since(start); took > time.Second {
			t.Errorf("%s: drctl took %s to end", answer.name, took)
		}
		s := screen()
		if !strings.Contains(s, "not confirmed; nothing was changed") {
			t.Errorf("%s: the screen does not say nothing was changed:\n%s", answer.name, s)
		}
		if strings.Contains(s, "drctl resume") || strings.Contains(s, "Interrupt:") {
			t.Errorf("%s: the screen treats the answer as an interrupted run:\n%s", answer.name, s)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		st, _ := inspect.CollectStatus(ctx, kfaketest.Session(t, p.Topology))
		cancel()
		if st.Roles.Epoch != 0 || st.Roles.Active != "east" || st.Roles.Run != nil || st.Roles.Phase != "steady" {
			t.Errorf("%s: the roles are %+v; want east active at epoch 0, steady, no run", answer.name, st.Roles)
		}
	}
}
