//go:build e2e && tmux

package sandboxtui

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drctl/drctl/plans"
)

var (
	buildOnce sync.Once
	drctlBin  string
	errBuild  error
)

// drctlBinary builds drctl once per test run.
func drctlBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "drctl-sandboxtui-bin") //nolint:usetesting // shared by every test of the run
		if err != nil {
			errBuild = err
			return
		}
		drctlBin = filepath.Join(dir, "drctl")
		if out, err := exec.Command("go", "build", "-o", drctlBin, "../../cmd/drctl").CombinedOutput(); err != nil {
			errBuild = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if errBuild != nil {
		t.Fatal(errBuild)
	}
	return drctlBin
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// sandbox is `drctl sandbox` in a process of its own, keeping its data in
// dir/data so that a restart brings the same clusters back.
type sandbox struct {
	t                     *testing.T
	dir, state            string
	east, west, mirrorPrt int
	cmd                   *exec.Cmd
	done                  chan struct{}
}

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed (apt-get install tmux)")
	}
	s := &sandbox{t: t, dir: t.TempDir(), state: t.TempDir(), east: freePort(t), west: freePort(t), mirrorPrt: freePort(t)}
	s.start()
	t.Cleanup(s.kill)
	return s
}

func (s *sandbox) env() []string {
	return []string{"XDG_STATE_HOME=" + s.state, "NO_COLOR=1"}
}

func (s *sandbox) start() {
	s.t.Helper()
	_ = os.Remove(filepath.Join(s.dir, "drctl.yaml"))
	s.cmd = exec.Command(drctlBinary(s.t), "sandbox", "--dir", s.dir, "--data-dir", filepath.Join(s.dir, "data"),
		"--east-port", fmt.Sprint(s.east), "--west-port", fmt.Sprint(s.west), "--mirror-listen", fmt.Sprintf("127.0.0.1:%d", s.mirrorPrt))
	s.cmd.Env = append(os.Environ(), s.env()...)
	log, err := os.Create(filepath.Join(s.dir, fmt.Sprintf("sandbox-%d.log", time.Now().UnixNano())))
	if err != nil {
		s.t.Fatal(err)
	}
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.done = make(chan struct{})
	go func() { _ = s.cmd.Wait(); log.Close(); close(s.done) }()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(s.dir, "drctl.yaml")); err == nil {
			return
		}
		select {
		case <-s.done:
			s.t.Fatalf("drctl sandbox exited before it wrote drctl.yaml (log in %s)", s.dir)
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatal("drctl sandbox wrote no drctl.yaml within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kill kills the sandbox, both clusters at once, as a power cut would.
func (s *sandbox) kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
	s.cmd = nil
}

// console is `drctl tui` on the sandbox in a detached tmux session of
// w x h cells.
type console struct {
	t    *testing.T
	name string
}

func (s *sandbox) console(w, h int) *console {
	s.t.Helper()
	c := &console{t: s.t, name: fmt.Sprintf("drctl-sbtui-%d-%d", os.Getpid(), time.Now().UnixNano())}
	args := []string{"new-session", "-d", "-s", c.name, "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), "-c", s.dir}
	for _, e := range s.env() {
		args = append(args, "-e", e)
	}
	args = append(args, drctlBinary(s.t), "-c", filepath.Join(s.dir, "drctl.yaml"), "tui", "--interval", "1s", "--timeout", "3s")
	if out, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
		s.t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	s.t.Cleanup(func() {
		if s.t.Failed() {
			s.t.Logf("last screen of %s (%dx%d):\n%s", c.name, w, h, c.screen())
		}
		_ = exec.Command("tmux", "kill-session", "-t", c.name).Run()
	})
	return c
}

func (c *console) screen() string {
	out, err := exec.Command("tmux", "capture-pane", "-p", "-t", c.name).CombinedOutput()
	if err != nil {
		return "(capture-pane: " + err.Error() + ": " + string(out) + ")"
	}
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// waitFor waits until cond holds for the screen.
func (c *console) waitFor(what string, timeout time.Duration, cond func(string) bool) string {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		scr := c.screen()
		if cond(scr) {
			return scr
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("waited %s for %s; the screen shows:\n%s", timeout, what, scr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (c *console) wait(text string, timeout time.Duration) string {
	c.t.Helper()
	return c.waitFor(fmt.Sprintf("the screen to show %q", text), timeout, func(s string) bool { return strings.Contains(s, text) })
}

func (c *console) waitGone(text string, timeout time.Duration) string {
	c.t.Helper()
	return c.waitFor(fmt.Sprintf("%q to leave the screen", text), timeout, func(s string) bool { return !strings.Contains(s, text) })
}

// keys types each argument as tmux send-keys does ("Enter", "Escape" are
// keys; anything else is typed), with a pause between, as a person would.
func (c *console) keys(keys ...string) {
	c.t.Helper()
	for _, k := range keys {
		if out, err := exec.Command("tmux", "send-keys", "-t", c.name, k).CombinedOutput(); err != nil {
			c.t.Fatalf("tmux send-keys %s: %v\n%s", k, err, out)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// TestTUIBothClustersKilled: both clusters die under a running console
// (80x24). It never says READY: the verdict is UNKNOWN with its reason,
// the roles are UNKNOWN, F is refused without naming a cluster "unknown";
// when the clusters come back the refusal leaves the status line.
func TestTUIBothClustersKilled(t *testing.T) {
	sb := newSandbox(t)
	c := sb.console(80, 24)
	c.wait("active east  standby west", time.Minute)
	c.wait("READY TO FAIL OVER? READY", time.Minute)
	start := time.Now()
	sb.kill()
	scr := c.wait("READY TO FAIL OVER? UNKNOWN", time.Minute)
	t.Logf("UNKNOWN %s after both clusters were killed", time.Since(start).Round(100*time.Millisecond))
	for _, want := range []string{"roles UNKNOWN", "the live roles are unknown", "DOWN"} {
		if !strings.Contains(scr, want) {
			t.Errorf("with both clusters down the screen does not say %q:\n%s", want, scr)
		}
	}
	if strings.Contains(scr, "TO FAIL OVER? READY") {
		t.Fatalf("READY with both clusters down:\n%s", scr)
	}
	c.keys("F")
	scr = c.wait("the live roles are unknown (no cluster answers)", 10*time.Second)
	if strings.Contains(scr, `"unknown"`) {
		t.Fatalf("F treated unknown as a cluster name:\n%s", scr)
	}
	sb.start()
	c.wait("active east  standby west", 2*time.Minute)
	c.waitGone("the live roles are unknown", 30*time.Second)
}

// TestTUISandboxScreens: a second topology's unfinished run in the same
// state directory is not listed; a y/N question answers on the single y;
// at 80x24 and 200x50 run ids are whole, and at 200x50 so is the kind;
// at 80x24 the f plan screen shows every destructive step unscrolled.
func TestTUISandboxScreens(t *testing.T) {
	sb := newSandbox(t)
	other := "failover-20261201T090000-0th3r1"
	writeOtherTopologysRun(t, filepath.Join(sb.state, "drctl", "runs"), other)

	small := sb.console(80, 24)
	small.wait("READY TO FAIL OVER?", time.Minute)
	small.keys("4")
	scr := small.wait("PAST RUNS", 10*time.Second)
	// At 80 columns a cut id would hide "0th3r": the other run would also
	// be the only unfinished one.
	if strings.Contains(scr, "0th3r") || strings.Contains(scr, "unfinished") {
		t.Fatalf("the Runs view lists another topology's run:\n%s", scr)
	}

	small.keys("d")
	small.wait("Run the canary drill now? [y/N]", 10*time.Second)
	small.keys("y") // one key, no enter
	scr = small.wait("succeeded", 2*time.Minute)
	id := regexp.MustCompile(`drill-canary-\d{8}T\d{6}-[0-9a-f]{6}`).FindString(scr)
	if id == "" {
		t.Fatalf("no whole canary run id at 80x24:\n%s", scr)
	}
	// The past runs list it, whole (a scheduled canary drill of the
	// sandbox may come after it).
	small.waitFor("the past runs to list "+id+" whole", 30*time.Second, func(s string) bool {
		return regexp.MustCompile(`[› ] ` + regexp.QuoteMeta(id) + ` +drill-c`).MatchString(s)
	})

	big := sb.console(200, 50)
	big.wait("READY TO FAIL OVER?", time.Minute)
	big.keys("4")
	scr = big.wait(id, 30*time.Second)
	if !regexp.MustCompile(regexp.QuoteMeta(id) + ` +drill-canary +succeeded`).MatchString(scr) {
		t.Fatalf("at 200x50 the past run's id or kind is cut:\n%s", scr)
	}
	if strings.Contains(scr, "0th3r") {
		t.Fatalf("the Runs view at 200x50 lists another topology's run:\n%s", scr)
	}

	small.keys("1", "f")
	scr = small.wait(`Type the name of the cluster "west"`, time.Minute)
	// Every destructive step, and what the wipe deletes on east, before
	// anyone types a name (whatever the steps' numbers).
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^! +[0-9]+ Make west the active cluster  \(point of no return\)$`),
		regexp.MustCompile(`(?m)^! +[0-9]+ Wipe the mirrored topics and groups on east$`),
		regexp.MustCompile(`(?m)^Step [0-9]+ \(wipe\) deletes on east`),
	} {
		if !want.MatchString(scr) {
			t.Errorf("the f screen at 80x24 does not show %q unscrolled:\n%s", want, scr)
		}
	}
	small.keys("Escape")
	small.wait("not confirmed; nothing was changed", 10*time.Second)
}

// writeOtherTopologysRun writes the journal of an unfinished failover of
// topology other-topology into dir, as a drctl of that topology run on
// this machine would have left it.
func writeOtherTopologysRun(t *testing.T, dir, id string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := plans.New(id, "failover")
	if err := p.SetInputs(map[string]any{"topology": "other-topology", "to": "west"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []plans.StepSpec{{Name: "preflight", Title: "Check east and west are ready"}, {Name: "flip-roles", Title: "Make west the active cluster", Destructive: true}} {
		if err := p.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	digest, err := p.Digest()
	if err != nil {
		t.Fatal(err)
	}
	j, err := plans.CreateJournal(filepath.Join(dir, id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	for _, e := range []plans.Event{
		{Type: plans.EventRunStarted, Plan: p, Digest: digest},
		{Type: plans.EventStepStarted, Index: 0},
		{Type: plans.EventStepDone, Index: 0, Summary: "ready"},
	} {
		e.RunID, e.Kind, e.Total, e.Time = id, "failover", len(p.Steps), time.Now()
		if err := j.Handle(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
}
