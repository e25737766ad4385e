package plans

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Executor runs plans. Set it up once; Run, RunFrom and Resume may be called
// for one plan after another, not concurrently.
type Executor struct {
	Registry *Registry
	// Hooks receive every event. Required hooks (IsRequired) are called
	// first and stop the run when they fail; the others only warn.
	Hooks []Hook
	// Guard, if set, is checked before every step.
	Guard Guard
	// Actor is who runs the plan, as user@host; it goes into every event.
	Actor string
	// Interrupts, if set, is how the operator stops the run (NotifySignals).
	Interrupts *Interrupts
	// HookTimeout bounds each hook call; default 30s.
	HookTimeout time.Duration
	// GuardTimeout bounds each guard call; default 1m.
	GuardTimeout time.Duration
	// Warn receives failures of hooks that are not required; nil drops them.
	Warn func(error)
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Start says where a run begins.
type Start struct {
	// From is the first step to run; steps before it count as done.
	From int
	// Outputs of steps before From, for RunContext.Output.
	Outputs map[int]json.RawMessage
	// Rerun says step From was started before and never recorded done.
	Rerun bool
}

// Run runs the whole plan.
func (e *Executor) Run(ctx context.Context, p *Plan) error {
	return e.RunFrom(ctx, p, Start{})
}

// Resume runs what is left of a journaled run: it re-runs the step that was
// started and not done, then the rest. A finished run is left alone.
func (e *Executor) Resume(ctx context.Context, st *JournalState) error {
	if st.Finished {
		return nil
	}
	return e.RunFrom(ctx, st.Plan, st.Start())
}

// RunFrom runs the plan from s.From. It returns nil when every step is done,
// and otherwise one of *StepError, *InterruptError, *GuardError, *HookError
// (all carry the step a resume starts at; see NextStep), or an error about
// the plan itself, in which case nothing ran and no hook was called.
func (e *Executor) RunFrom(ctx context.Context, p *Plan, s Start) error {
	if e.Registry == nil {
		return errors.New("plans: executor has no registry")
	}
	if err := p.Validate(); err != nil {
		return err
	}
	if err := e.Registry.Check(p); err != nil {
		return err
	}
	if s.From < 0 || s.From > len(p.Steps) {
		return fmt.Errorf("plan %s cannot start at step %d: it has %d steps", p.ID, s.From+1, len(p.Steps))
	}
	outputs := make(map[int]json.RawMessage, len(p.Steps))
	for i, raw := range s.Outputs {
		if i < 0 || i >= s.From {
			return fmt.Errorf("plan %s: outputs given for step %d, which is not before step %d", p.ID, i+1, s.From+1)
		}
		if !validRaw(raw) {
			return fmt.Errorf("plan %s: outputs given for step %d are not valid JSON", p.ID, i+1)
		}
		outputs[i] = raw
	}
	digest, err := p.Digest()
	if err != nil {
		return err
	}
	r := &run{e: e, plan: p, digest: digest, outputs: outputs}
	for _, h := range e.Hooks {
		if IsRequired(h) {
			r.hooks = append(r.hooks, h)
		}
	}
	r.required = len(r.hooks)
	for _, h := range e.Hooks {
		if !IsRequired(h) {
			r.hooks = append(r.hooks, h)
		}
	}
	return r.execute(ctx, s)
}

// run is one execution of a plan.
type run struct {
	e        *Executor
	plan     *Plan
	digest   string
	hooks    []Hook // required first
	required int
	outputs  map[int]json.RawMessage
	started  time.Time

	mu   sync.Mutex // serialises hook calls; guards halt
	halt *HookError // a required hook failed while a step was running
}

func (r *run) execute(ctx context.Context, s Start) error {
	n := len(r.plan.Steps)
	r.started = r.now()
	ev := r.event(EventRunStarted, s.From)
	ev.Digest, ev.Plan = r.digest, r.plan
	if len(s.Outputs) > 0 {
		ev.Prior = s.Outputs
	}
	if err := r.emit(ctx, ev, true); err != nil {
		return r.finish(ctx, s.From, OutcomeHalted, err)
	}
	for i := s.From; i < n; i++ {
		if err := r.stopRequested(ctx, i, nil); err != nil {
			return r.finish(ctx, i, outcomeOf(err), err)
		}
		if err := r.check(ctx, i); err != nil {
			if errors.Is(err, ErrCancelled) {
				return r.finish(ctx, i, OutcomeCancelled, err)
			}
			outcome := OutcomeHalted
			if errors.Is(err, ErrStalePlan) {
				outcome = OutcomeStale
			}
			return r.finish(ctx, i, outcome, &GuardError{Index: i, Total: n, Err: err})
		}
		step := r.plan.Steps[i]
		ev := r.event(EventStepStarted, i)
		ev.Rerun = s.Rerun && i == s.From
		if err := r.emit(ctx, ev, true); err != nil {
			return r.finish(ctx, i, OutcomeHalted, err)
		}
		begun := r.now()
		res, cancelled, err := r.runStep(ctx, step, ev.Rerun)
		elapsed := r.now().Sub(begun).Milliseconds()
		if err != nil {
			ev := r.event(EventStepFailed, i)
			ev.ElapsedMS, ev.Error = elapsed, err.Error()
			if herr := r.emit(ctx, ev, false); herr != nil {
				r.warn(herr)
			}
			if cancelled {
				ierr := &InterruptError{RunID: r.plan.ID, Next: i, Total: n, Reason: ErrCancelled, Err: err}
				return r.finish(ctx, i, OutcomeCancelled, ierr)
			}
			if errors.Is(err, ErrInterrupted) { // a wait gave up at the first interrupt (RunContext.Stopping)
				ierr := &InterruptError{RunID: r.plan.ID, Next: i, Total: n, Reason: ErrInterrupted, Err: err}
				return r.finish(ctx, i, OutcomeInterrupted, ierr)
			}
			return r.finish(ctx, i, OutcomeFailed, &StepError{RunID: r.plan.ID, Index: i, Total: n, Name: step.Name, Err: err})
		}
		r.outputs[i] = res.Outputs
		ev = r.event(EventStepDone, i)
		ev.ElapsedMS, ev.Summary, ev.Outputs = elapsed, res.Summary, res.Outputs
		if err := r.emit(ctx, ev, false); err != nil { // every hook hears that the step ran
			return r.finish(ctx, i, OutcomeHalted, err)
		}
		r.mu.Lock()
		halt := r.halt
		r.mu.Unlock()
		if halt != nil { // a required hook failed during the step, then recorded its end
			halt.Next = i + 1
			return r.finish(ctx, i+1, OutcomeHalted, halt)
		}
	}
	return r.finish(ctx, n, OutcomeSucceeded, nil)
}

// runStep runs one step's Action with a context that the second interrupt
// cancels. cancelled says the error came from such a cancellation (or the
// caller's context), not from the step itself.
func (r *run) runStep(ctx context.Context, step Step, rerun bool) (res Result, cancelled bool, err error) {
	action, _ := r.e.Registry.Lookup(step.Name) // Check ran before
	stepCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var byInterrupt atomic.Bool
	if in := r.e.Interrupts; in != nil {
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-in.Cancelling():
				byInterrupt.Store(true)
				cancel()
			case <-done:
			}
		}()
	}
	rc := &RunContext{Plan: r.plan, Actor: r.e.Actor, Rerun: rerun, index: step.Index, outputs: r.outputs}
	if in := r.e.Interrupts; in != nil {
		rc.stopping = in.Stopping()
	}
	rc.progress = func(msg string, fraction float64) {
		ev := r.event(EventStepProgress, step.Index)
		ev.Message, ev.Fraction = msg, knownFraction(fraction)
		var herr *HookError
		if err := r.emit(ctx, ev, false); errors.As(err, &herr) {
			r.mu.Lock()
			if r.halt == nil {
				r.halt = herr
			}
			r.mu.Unlock()
		}
	}
	res, err = callAction(stepCtx, action, step, rc)
	rc.close() // no progress after this point
	if err == nil && !validRaw(res.Outputs) {
		err = errors.New("the step returned outputs that are not valid JSON")
	}
	cancelled = err != nil && (byInterrupt.Load() || ctx.Err() != nil)
	return res, cancelled, err
}

func callAction(ctx context.Context, a Action, step Step, rc *RunContext) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	return a.Run(ctx, step, rc)
}

// stopRequested reports an interrupt or the end of the caller's context
// before step next.
func (r *run) stopRequested(ctx context.Context, next int, cause error) error {
	n := len(r.plan.Steps)
	if ctx.Err() != nil {
		return &InterruptError{RunID: r.plan.ID, Next: next, Total: n, Reason: ErrCancelled, Err: context.Cause(ctx)}
	}
	if in := r.e.Interrupts; in != nil {
		switch c := in.Count(); {
		case c >= 2:
			return &InterruptError{RunID: r.plan.ID, Next: next, Total: n, Reason: ErrCancelled, Err: cause}
		case c == 1:
			return &InterruptError{RunID: r.plan.ID, Next: next, Total: n, Reason: ErrInterrupted, Err: cause}
		}
	}
	return nil
}

func outcomeOf(err error) Outcome {
	if errors.Is(err, ErrCancelled) {
		return OutcomeCancelled
	}
	return OutcomeInterrupted
}

// check runs the guard before step next.
func (r *run) check(ctx context.Context, next int) error {
	if r.e.Guard == nil {
		return nil
	}
	d := r.e.GuardTimeout
	if d <= 0 {
		d = time.Minute
	}
	gctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	err := r.e.Guard(gctx, r.plan, next)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return r.stopRequested(ctx, next, err)
	}
	if errors.Is(gctx.Err(), context.DeadlineExceeded) && !errors.Is(err, ErrTimeout) {
		return fmt.Errorf("plan check: %w after %s: %w", ErrTimeout, d, err)
	}
	return fmt.Errorf("plan check: %w", err)
}

// finish tells every hook how the run ended and returns err, or the failure
// of a required hook to record a run that otherwise succeeded.
func (r *run) finish(ctx context.Context, next int, outcome Outcome, err error) error {
	ev := r.event(EventRunDone, next)
	ev.Outcome = outcome
	ev.ElapsedMS = r.now().Sub(r.started).Milliseconds()
	if err != nil {
		ev.Error = err.Error()
	}
	if herr := r.emit(ctx, ev, false); herr != nil {
		if err == nil {
			return herr
		}
		r.warn(herr)
	}
	return err
}

// emit sends ev to the hooks, required ones first. With stopAtRequired, the
// first failing required hook ends the delivery and is returned (a step whose
// start was not journaled is not shown as started either); otherwise every
// hook gets the event and the failures of required hooks are joined.
func (r *run) emit(ctx context.Context, ev Event, stopAtRequired bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for i, h := range r.hooks {
		err := r.call(ctx, h, ev)
		if err == nil {
			continue
		}
		herr := &HookError{Hook: hookName(h), Event: ev.Type, Index: ev.Index, Next: ev.Index, Total: ev.Total, Err: err}
		if i >= r.required {
			r.warn(herr)
			continue
		}
		if stopAtRequired {
			return herr
		}
		errs = append(errs, herr)
	}
	return errors.Join(errs...)
}

func (r *run) call(ctx context.Context, h Hook, ev Event) error {
	d := r.e.HookTimeout
	if d <= 0 {
		d = 30 * time.Second
	}
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	defer cancel()
	err := h.Handle(hctx, ev)
	if err != nil && errors.Is(hctx.Err(), context.DeadlineExceeded) && !errors.Is(err, ErrTimeout) {
		err = fmt.Errorf("%w after %s: %w", ErrTimeout, d, err)
	}
	return err
}

func (r *run) event(t EventType, index int) Event {
	ev := Event{
		Version: EventVersion,
		Type:    t,
		Time:    r.now().UTC(),
		RunID:   r.plan.ID,
		Kind:    r.plan.Kind,
		Actor:   r.e.Actor,
		Index:   index,
		Total:   len(r.plan.Steps),
	}
	if t != EventRunStarted && index >= 0 && index < len(r.plan.Steps) {
		s := r.plan.Steps[index]
		ev.Name, ev.Title, ev.Destructive = s.Name, s.Title, s.Destructive
	}
	return ev
}

func (r *run) now() time.Time {
	if r.e.Now != nil {
		return r.e.Now()
	}
	return time.Now()
}

func (r *run) warn(err error) {
	if r.e.Warn != nil && err != nil {
		r.e.Warn(err)
	}
}
