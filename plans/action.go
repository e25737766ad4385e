package plans

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/user"
	"slices"
	"strings"
	"sync"
)

// Action carries out steps of one Name. Run must be idempotent: the executor
// runs a step again after a run was killed, failed or cancelled during it,
// and the step must then reach the same end state (rc.Rerun says so). Run
// must honour ctx: the second interrupt cancels it, and so does the caller.
// Every wait inside Run needs its own deadline and a distinct timeout error.
type Action interface {
	Run(ctx context.Context, step Step, rc *RunContext) (Result, error)
}

// ActionFunc adapts a function to Action.
type ActionFunc func(ctx context.Context, step Step, rc *RunContext) (Result, error)

// Run calls f.
func (f ActionFunc) Run(ctx context.Context, step Step, rc *RunContext) (Result, error) {
	return f(ctx, step, rc)
}

// Result is what a finished step reports. Outputs are journaled with the
// step's completion, so that later steps can read them, also in a run
// resumed by another process (RunContext.Output).
type Result struct {
	Summary string          // one line for people, e.g. "fenced 12 topics"
	Outputs json.RawMessage // JSON, or empty
}

// NewResult encodes outputs (nil for none) into a Result.
func NewResult(summary string, outputs any) (Result, error) {
	raw, err := encodeValue(outputs)
	if err != nil {
		return Result{}, fmt.Errorf("step outputs: %w", err)
	}
	return Result{Summary: summary, Outputs: raw}, nil
}

// Registry maps step names to Actions. Register everything before running;
// a Registry is not safe for concurrent Register calls.
type Registry struct {
	actions map[string]Action
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// Register adds the Action for steps named name.
func (r *Registry) Register(name string, a Action) error {
	if name == "" || a == nil {
		return errors.New("register step action: empty name or nil action")
	}
	if _, dup := r.actions[name]; dup {
		return fmt.Errorf("register step action: %q is already registered", name)
	}
	if r.actions == nil {
		r.actions = map[string]Action{}
	}
	r.actions[name] = a
	return nil
}

// Lookup returns the Action for steps named name.
func (r *Registry) Lookup(name string) (Action, bool) {
	a, ok := r.actions[name]
	return a, ok
}

// Names lists the registered step names, sorted.
func (r *Registry) Names() []string {
	return slices.Sorted(maps.Keys(r.actions))
}

// Check reports every step of p that has no Action. The executor calls it
// before running anything, so a plan this build cannot finish never starts.
func (r *Registry) Check(p *Plan) error {
	var missing []string
	for _, s := range p.Steps {
		if _, ok := r.actions[s.Name]; !ok {
			missing = append(missing, fmt.Sprintf("step %d (%s)", s.Index+1, s.Name))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("plan %s cannot run: no action for %s (a plan made by another drctl version?)", p.ID, strings.Join(missing, ", "))
}

// ErrNoOutput is returned by RunContext.Output for a step that has not
// completed or reported no outputs.
var ErrNoOutput = errors.New("no output")

// RunContext is what the executor gives a running step besides its context.
type RunContext struct {
	Plan  *Plan  // the plan being run; read only
	Actor string // who runs it, user@host
	// Rerun is true when the step was started before, by a run that was
	// killed, failed or was cancelled, and never recorded as done.
	Rerun bool

	index    int
	stopping <-chan struct{}         // closed at the first interrupt; nil: never
	outputs  map[int]json.RawMessage // read only while a step runs
	mu       sync.Mutex
	closed   bool
	progress func(msg string, fraction float64)
}

// Progress reports how a long step is doing, e.g. "12,345 records, 3.2 s
// left" and 0.4. A fraction outside [0, 1] means unknown. Safe to call from
// any goroutine; calls after the step returned are dropped.
func (rc *RunContext) Progress(msg string, fraction float64) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.closed || rc.progress == nil {
		return
	}
	rc.progress(msg, fraction)
}

// Stopping is closed at the operator's first interrupt (never, when the
// executor has no Interrupts). A step that only waits (for a drain, a
// re-seed) loses nothing by starting over: it selects on Stopping and
// returns an error wrapping ErrInterrupted, and the run stops there with
// the step left to run again on resume. Other steps ignore it and finish.
func (rc *RunContext) Stopping() <-chan struct{} { return rc.stopping }

// Output decodes the outputs of the earlier step index into v.
func (rc *RunContext) Output(index int, v any) error {
	if index >= rc.index {
		return fmt.Errorf("step %d: outputs of step %d: %w (it runs later)", rc.index+1, index+1, ErrNoOutput)
	}
	raw := nonNull(rc.outputs[index])
	if raw == nil {
		return fmt.Errorf("step %d: outputs of step %d: %w", rc.index+1, index+1, ErrNoOutput)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("step %d: outputs of step %d: %w", rc.index+1, index+1, err)
	}
	return nil
}

// OutputOf decodes the outputs of the latest earlier step named name.
func (rc *RunContext) OutputOf(name string, v any) error {
	for i := rc.index - 1; i >= 0; i-- {
		if rc.Plan.Steps[i].Name == name {
			return rc.Output(i, v)
		}
	}
	return fmt.Errorf("step %d: outputs of %s: %w (no earlier step of that name)", rc.index+1, name, ErrNoOutput)
}

func (rc *RunContext) close() {
	rc.mu.Lock()
	rc.closed = true
	rc.mu.Unlock()
}

func knownFraction(f float64) *float64 {
	if math.IsNaN(f) || f < 0 || f > 1 {
		return nil
	}
	return &f
}

// LocalActor names the person running this process as user@host, for
// CreatedBy and Executor.Actor.
func LocalActor() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return name + "@" + host
}
