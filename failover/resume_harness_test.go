package failover

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

// The test binary doubles as drctl running a saved plan (the kill-and-resume
// tests SIGKILL it). It is this package's only TestMain: other test files
// must not add one.
const (
	envPlan     = "DRCTL_FAILOVER_CHILD_PLAN"     // plan file: run it
	envTopology = "DRCTL_FAILOVER_CHILD_TOPOLOGY" // topology file
	envJournal  = "DRCTL_FAILOVER_CHILD_JOURNAL"  // journal directory
	envHold     = "DRCTL_FAILOVER_CHILD_HOLD"     // "<event type>/<step index>", or empty
)

func TestMain(m *testing.M) {
	if path := os.Getenv(envPlan); path != "" {
		os.Exit(runPlan(path))
	}
	os.Exit(m.Run())
}

// runPlan is the child: what `drctl apply plan.json --yes` does, with a
// journal directory of the parent's choosing. It says "held TYPE INDEX"
// on stdout when the hold event reached every hook, and then waits for a
// line on stdin (or for its SIGKILL).
func runPlan(path string) int {
	topo, err := topology.Load(os.Getenv(envTopology))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	p, err := plans.LoadPlan(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	hold, err := parseHold(os.Getenv(envHold))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	events := &holdingStream{hold: hold, stdin: bufio.NewReader(os.Stdin)}
	yes := func(string) error { return nil }
	clusters := kafkaconn.Open(context.Background(), topo)
	defer clusters.Close()
	if err := Execute(context.Background(), clusters, p, RunOptions{JournalDir: os.Getenv(envJournal), JSON: events, Confirm: yes}); err != nil {
		fmt.Fprintln(os.Stderr, "execute:", err)
		return 1
	}
	return 0
}

// journalPoint names one event of a run: a type and a step index.
type journalPoint struct {
	Type  plans.EventType
	Index int
}

func (p journalPoint) String() string { return fmt.Sprintf("%s/%d", p.Type, p.Index) }

func parseHold(s string) (*journalPoint, error) {
	if s == "" {
		return nil, nil
	}
	typ, idx, ok := strings.Cut(s, "/")
	n, err := strconv.Atoi(idx)
	if !ok || err != nil {
		return nil, fmt.Errorf("bad %s %q: want TYPE/INDEX", envHold, s)
	}
	return &journalPoint{Type: plans.EventType(typ), Index: n}, nil
}

// holdingStream is the child's JSON event stream. The executor calls it
// after the required hooks (the journal and the clusters' run record), so
// when it holds, the event is recorded everywhere and nothing else has
// happened yet: a kill then lands exactly on that event.
type holdingStream struct {
	hold  *journalPoint
	stdin *bufio.Reader
}

func (s *holdingStream) Write(line []byte) (int, error) {
	var ev plans.Event
	if s.hold == nil || json.Unmarshal(line, &ev) != nil || ev.Type != s.hold.Type || ev.Index != s.hold.Index {
		return len(line), nil //nolint:nilerr // not the event to hold at (or not an event): it passes through
	}
	s.hold = nil
	fmt.Printf("held %s\n", journalPoint{ev.Type, ev.Index})
	if _, err := s.stdin.ReadString('\n'); err != nil {
		os.Exit(3) // the parent is gone
	}
	return len(line), nil
}

// runChild is a drctl process running a plan.
type runChild struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stderr  bytes.Buffer // read only after done
	held    chan string
	done    chan struct{}
	started time.Time
}

// startChild runs plan file planPath in a child process journaling into
// journalDir; hold (nil: none) is where it pauses.
func startChild(t *testing.T, topoPath, planPath, journalDir string, hold *journalPoint) *runChild {
	t.Helper()
	c := &runChild{held: make(chan string, 1), done: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	env := []string{envPlan + "=" + planPath, envTopology + "=" + topoPath, envJournal + "=" + journalDir}
	if hold != nil {
		env = append(env, envHold+"="+hold.String())
	}
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stderr = &c.stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	c.started = time.Now()
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if h, ok := strings.CutPrefix(sc.Text(), "held "); ok {
				c.held <- h
			}
		}
	}()
	go func() {
		_ = c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(c.kill)
	return c
}

// release lets a held child go on.
func (c *runChild) release(t *testing.T) {
	t.Helper()
	if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
		t.Fatalf("release the drctl child: %v", err)
	}
}

// kill SIGKILLs the child and waits until it is gone.
func (c *runChild) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// exited describes how the child ended; call it after done.
func (c *runChild) exited() string {
	return fmt.Sprintf("%v; stderr:\n%s", c.cmd.ProcessState, c.stderr.String())
}

// waitHeld waits until the child holds at its hold event.
func (c *runChild) waitHeld(t *testing.T, timeout time.Duration) string {
	t.Helper()
	select {
	case h := <-c.held:
		return h
	case <-c.done:
		t.Fatalf("the drctl child ended before its hold point: %s", c.exited())
	case <-time.After(timeout):
		t.Fatalf("the drctl child did not reach its hold point within %v", timeout)
	}
	return ""
}

// waitExit waits for the child to end and fails unless it succeeded.
func (c *runChild) waitExit(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case <-c.done:
		if !c.cmd.ProcessState.Success() {
			t.Fatalf("the drctl child failed: %s", c.exited())
		}
	case <-time.After(timeout):
		t.Fatalf("the drctl child did not finish within %v", timeout)
	}
}

// journalEvents reads the complete lines of a journal file (a line being
// written is left for the next read).
func journalEvents(path string) ([]plans.Event, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var evs []plans.Event
	for {
		line, rest, ok := bytes.Cut(data, []byte("\n"))
		if !ok {
			return evs, nil
		}
		var ev plans.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("journal %s: %w", path, err)
		}
		evs = append(evs, ev)
		data = rest
	}
}

// journalHas reports whether evs holds an event at p.
func journalHas(evs []plans.Event, p journalPoint) bool {
	for _, ev := range evs {
		if ev.Type == p.Type && ev.Index == p.Index {
			return true
		}
	}
	return false
}

// waitJournal polls the journal at path until it holds an event at p,
// and returns its events.
func waitJournal(t *testing.T, path string, p journalPoint, c *runChild, timeout time.Duration) []plans.Event {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		evs, err := journalEvents(path)
		if err == nil && journalHas(evs, p) {
			return evs
		}
		select {
		case <-c.done:
			t.Fatalf("the drctl child ended before its journal showed %s (%v): %s", p, err, c.exited())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the journal %s did not show %s within %v (%v)", path, p, timeout, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// heldRequest is a request to a kfake cluster that is held until release.
type heldRequest struct {
	caught  chan struct{}
	release func()
}

// holdFirst holds the first request with key to cluster c that match
// accepts, until release; then the cluster handles it as usual (even when
// its sender is dead by then), or, with drop, closes its connection
// without handling it. Other requests pass.
func holdFirst(t *testing.T, c *kfake.Cluster, key kmsg.Key, drop bool, match func(kmsg.Request) bool) *heldRequest {
	h := &heldRequest{caught: make(chan struct{})}
	released := make(chan struct{})
	h.release = sync.OnceFunc(func() { close(released) })
	t.Cleanup(h.release)
	var taken atomic.Bool // the control may run again while it sleeps
	c.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if !match(req) || !taken.CompareAndSwap(false, true) {
			return nil, nil, false
		}
		c.DropControl()
		close(h.caught)
		c.SleepControl(func() { <-released })
		if drop {
			return nil, errors.New("dropped by the test"), true
		}
		return nil, nil, false
	})
	return h
}

// wait waits until the request is held.
func (h *heldRequest) wait(t *testing.T, c *runChild, what string, timeout time.Duration) {
	t.Helper()
	select {
	case <-h.caught:
	case <-c.done:
		t.Fatalf("the drctl child ended before it sent %s: %s", what, c.exited())
	case <-time.After(timeout):
		t.Fatalf("the drctl child sent no %s within %v", what, timeout)
	}
}
