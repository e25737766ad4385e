//go:build e2e && tmux

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestTUIInTmux runs `drctl tui` in a real terminal (tmux, 80x24) against
// the real-Kafka pair, as an on-call engineer would: it reads the screens
// (roles, lag, groups), fails over to west by typing its name, then fails
// back to east. It needs tmux and runs on its own (.ci/run):
//
//	go test -tags e2e,tmux -count=1 -run TestTUIInTmux ./e2e/
func TestTUIInTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed (apt-get install tmux)")
	}
	ft := newFoTopo(t, "tui", "1s", "{fence: none, drain_timeout: 2m, quiet_period: 1s}")
	orders, billing := ft.topic("orders"), ft.topic("billing")
	createTopic(t, "east", orders, 3, nil)
	east := ft.dial(t, "east")
	prod, err := newSyncProducer(ft.Topo.Clusters["east"], "")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []*sarama.ProducerMessage
	for p := range int32(3) {
		for i := range 10 {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: orders, Partition: p, Value: sarama.StringEncoder(fmt.Sprintf("%d/%d", p, i))})
		}
	}
	if err := prod.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
	_ = prod.Close()
	kfaketest.CommitOn(t, east, billing, orders, map[int32]int64{0: 4, 1: 4, 2: 4})
	startMirror(t, ft.mirrorTopo(), "mirror")
	ft.waitLinkCaught(t, "east", "west", 2*time.Minute)

	tm := startTmux(t, ft, 80, 24)
	tm.wait("active east  standby west", time.Minute)
	tm.wait("READY TO FAIL OVER? READY\n", time.Minute)
	tm.wait("MIRROR east->west  running, 1 process(es)  lag 0 records", 30*time.Second)
	tm.wait("GROUPS (1)  1 in sync", 30*time.Second)
	tm.keys("3")
	tm.wait(billing, 10*time.Second)
	tm.wait("in sync", 10*time.Second)
	tm.keys("2")
	tm.wait(orders, 10*time.Second)
	tm.wait("3/3 yes", 10*time.Second)
	tm.keys("1")

	for _, leg := range []struct{ key, to, from string }{{"f", "west", "east"}, {"b", "east", "west"}} {
		start := time.Now()
		tm.keys(leg.key)
		tm.wait(fmt.Sprintf("Type the name of the cluster %q", leg.to), time.Minute)
		// The compact plan first: its destructive steps, and what the wipe
		// deletes on the old active, before anyone types a name.
		tm.wait("destructive (marked !)", 5*time.Second)
		tm.wait("(wipe) deletes on "+leg.from, 5*time.Second)
		tm.keys(leg.to, "Enter")
		tm.wait("Have they stopped?", 2*time.Minute)
		tm.keys("y") // one key answers a y/N question
		tm.wait("succeeded", 3*time.Minute)
		tm.wait(fmt.Sprintf("active %s  standby %s", leg.to, leg.from), time.Minute)
		tm.wait(" steady ", time.Minute)
		t.Logf("%s to %s through the console: %s", leg.key, leg.to, time.Since(start).Round(time.Millisecond))
		tm.keys("1")
	}
	tm.wait("READY TO FAIL OVER?", time.Minute)
	tm.keys("q")
	tm.waitExit(10 * time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, _ := inspect.CollectStatus(ctx, session(t, ft.Topo))
	if st.Roles.Active != "east" || st.Roles.Phase != "steady" || st.Roles.Epoch < 4 {
		t.Fatalf("roles after the round trip through the console: %+v", st.Roles)
	}
}

// tmuxSession is drctl tui in a detached tmux session.
type tmuxSession struct {
	t    *testing.T
	name string
}

func startTmux(t *testing.T, ft *foTopo, w, h int) *tmuxSession {
	t.Helper()
	s := &tmuxSession{t: t, name: "drctl-" + ft.Name}
	args := []string{"new-session", "-d", "-s", s.name, "-x", fmt.Sprint(w), "-y", fmt.Sprint(h)}
	for _, e := range ft.env() {
		args = append(args, "-e", e)
	}
	args = append(args, drctlBinary(t), "-c", ft.Path, "tui", "--interval", "1s")
	if out, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last screen:\n%s", s.screen())
		}
		_ = exec.Command("tmux", "kill-session", "-t", s.name).Run()
	})
	return s
}

// screen is what the terminal shows now.
func (s *tmuxSession) screen() string {
	out, err := exec.Command("tmux", "capture-pane", "-p", "-t", s.name).CombinedOutput()
	if err != nil {
		return "(capture-pane: " + err.Error() + ": " + string(out) + ")"
	}
	return string(out)
}

// wait waits until the screen shows text (a trailing "\n" means the text
// ends a line).
func (s *tmuxSession) wait(text string, timeout time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		scr := s.screen()
		if strings.Contains(trimLines(scr), text) {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("waited %s for the screen to show %q; it shows:\n%s", timeout, text, scr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// keys types each argument as tmux send-keys does ("Enter", "Escape" are
// keys; anything else is typed), with a pause between, as a person would.
func (s *tmuxSession) keys(keys ...string) {
	s.t.Helper()
	for _, k := range keys {
		if out, err := exec.Command("tmux", "send-keys", "-t", s.name, k).CombinedOutput(); err != nil {
			s.t.Fatalf("tmux send-keys %s: %v\n%s", k, err, out)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// waitExit waits until drctl tui has quit and the session is gone.
func (s *tmuxSession) waitExit(timeout time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for exec.Command("tmux", "has-session", "-t", s.name).Run() == nil {
		if time.Now().After(deadline) {
			s.t.Fatalf("drctl tui did not quit within %s:\n%s", timeout, s.screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
