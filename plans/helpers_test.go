package plans

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a manual clock: time moves only when a test moves it.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// recorder is a hook that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) Handle(_ context.Context, e Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	return nil
}

// trace is the events as "type:index" strings.
func (r *recorder) trace() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return traceOf(r.events)
}

func traceOf(events []Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, fmt.Sprintf("%s:%d", e.Type, e.Index))
	}
	return out
}

func (r *recorder) last() Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[len(r.events)-1]
}

// testPlan is a failover-shaped plan of four steps:
// 0 check, 1 drain (progress, outputs), 2 fence (destructive, outputs),
// 3 flip (reads the outputs of 1 and 2).
func testPlan(t testing.TB) *Plan {
	t.Helper()
	p := &Plan{
		FormatVersion: FormatVersion,
		ID:            "r1",
		Kind:          "failover",
		CreatedAt:     time.Date(2026, 11, 30, 8, 59, 0, 0, time.UTC),
		CreatedBy:     "alice@ops-1",
	}
	must(t, p.SetInputs(map[string]any{"topology": "sha256:feed", "epoch": 7}))
	must(t, p.Add(StepSpec{Name: "check", Title: "Check both clusters"}))
	must(t, p.Add(StepSpec{Name: "drain", Title: "Drain the mirror",
		Expect: map[string]any{"lag": 1200}, Intend: map[string]any{"lag": 0}}))
	must(t, p.Add(StepSpec{Name: "fence", Title: "Fence east against writes",
		Params: map[string]any{"cluster": "east"},
		Expect: map[string]any{"east": "writable"}, Intend: map[string]any{"east": "denied"}, Destructive: true}))
	must(t, p.Add(StepSpec{Name: "flip", Title: "Flip roles",
		Expect: map[string]any{"active": "east", "epoch": 7}, Intend: map[string]any{"active": "west", "epoch": 8}}))
	return p
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// world is the registry of testPlan's actions and a log of their calls.
type world struct {
	mu    sync.Mutex
	calls []string
	// before, if set, runs at the start of every action (tests inject
	// interrupts, failures and blocking there).
	before func(ctx context.Context, step Step, rc *RunContext) error
	// flipSaw is what step 3 read from the outputs of steps 1 and 2.
	flipSaw string
}

func (w *world) registry(t testing.TB) *Registry {
	reg := NewRegistry()
	add := func(name string, f ActionFunc) { must(t, reg.Register(name, f)) }
	wrap := func(f ActionFunc) ActionFunc {
		return func(ctx context.Context, step Step, rc *RunContext) (Result, error) {
			w.mu.Lock()
			call := step.Name
			if rc.Rerun {
				call += "(again)"
			}
			w.calls = append(w.calls, call)
			before := w.before
			w.mu.Unlock()
			if before != nil {
				if err := before(ctx, step, rc); err != nil {
					return Result{}, err
				}
			}
			return f(ctx, step, rc)
		}
	}
	add("check", wrap(func(ctx context.Context, step Step, rc *RunContext) (Result, error) {
		return Result{Summary: "both reachable"}, nil
	}))
	add("drain", wrap(func(ctx context.Context, step Step, rc *RunContext) (Result, error) {
		return NewResult("0 records left", map[string]any{"drained": 1200})
	}))
	add("fence", wrap(func(ctx context.Context, step Step, rc *RunContext) (Result, error) {
		var p struct{ Cluster string }
		if err := step.DecodeParams(&p); err != nil {
			return Result{}, err
		}
		return NewResult("fenced "+p.Cluster, map[string]any{"acls": []string{"deny-write-orders"}})
	}))
	add("flip", wrap(func(ctx context.Context, step Step, rc *RunContext) (Result, error) {
		var drain struct{ Drained int }
		var fence struct{ ACLs []string }
		if err := rc.Output(1, &drain); err != nil {
			return Result{}, err
		}
		if err := rc.OutputOf("fence", &fence); err != nil {
			return Result{}, err
		}
		w.mu.Lock()
		w.flipSaw = fmt.Sprintf("drained=%d acls=%s", drain.Drained, strings.Join(fence.ACLs, ","))
		w.mu.Unlock()
		return Result{Summary: "west is active at epoch 8"}, nil
	}))
	return reg
}

func (w *world) callLog() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.calls, " ")
}

// failingWriter is a journal file whose writes (or syncs) fail from the
// record that fail matches on.
type failingWriter struct {
	mu       sync.Mutex
	lines    []string
	fail     func(line string) bool
	syncFail bool
	failed   bool
	pending  bool
}

var errDiskFull = errors.New("no space left on device")

func (w *failingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed || w.fail(string(p)) {
		w.failed = true
		if !w.syncFail {
			return len(p) / 2, errDiskFull
		}
		w.pending = true
	}
	w.lines = append(w.lines, string(p))
	return len(p), nil
}

func (w *failingWriter) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending {
		return errDiskFull
	}
	return nil
}

func decodeEvents(t testing.TB, s string) []Event {
	t.Helper()
	var out []Event
	for line := range strings.SplitSeq(strings.TrimSpace(s), "\n") {
		var e Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("JSON stream line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

// waitFor fails the test if ch is not closed within a generous deadline; it
// never sleeps when things work.
func waitFor(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	must(t, err)
	return string(data)
}

func outputs(kv ...any) map[int]json.RawMessage {
	m := map[int]json.RawMessage{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(int)] = json.RawMessage(kv[i+1].(string))
	}
	return m
}
