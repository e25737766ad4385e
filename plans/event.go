package plans

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// EventVersion is the version of the Event schema: the JSON stream and the
// journal lines. Fields are only ever added within a version.
const EventVersion = 1

// EventType says what happened.
type EventType string

// The events of a run, in the order they happen. A run-started is followed
// by step-started, step-progress (any number), then step-done or
// step-failed, per step, and one run-done at the end.
const (
	EventRunStarted   EventType = "run-started"
	EventStepStarted  EventType = "step-started"
	EventStepProgress EventType = "step-progress"
	EventStepDone     EventType = "step-done"
	EventStepFailed   EventType = "step-failed"
	EventRunDone      EventType = "run-done"
)

// Outcome is how a run ended.
type Outcome string

// Outcomes of a run.
const (
	OutcomeSucceeded   Outcome = "succeeded"   // every step is done
	OutcomeFailed      Outcome = "failed"      // a step returned an error
	OutcomeInterrupted Outcome = "interrupted" // first interrupt: stopped between steps
	OutcomeCancelled   Outcome = "cancelled"   // second interrupt or the caller's context
	OutcomeStale       Outcome = "stale"       // the guard found the plan stale
	OutcomeHalted      Outcome = "halted"      // a required hook or the guard failed
	OutcomeAborted     Outcome = "aborted"     // the operator undid the run (drctl abort); it is never resumed
)

// Event is one thing that happened in a run. It is what every hook receives,
// one line of the JSON stream, and one line of the journal; fields that do
// not apply to a type are empty and left out of the JSON.
type Event struct {
	Version int       `json:"v"`
	Type    EventType `json:"type"`
	Time    time.Time `json:"time"`
	RunID   string    `json:"run_id"`
	Kind    string    `json:"kind,omitempty"`
	Actor   string    `json:"actor,omitempty"`
	// Index is the step the event is about, from 0. For run-started it is the
	// first step the run executes; for run-done, the step a resume starts at
	// (Total when nothing is left).
	Index       int    `json:"index"`
	Total       int    `json:"total"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Destructive bool   `json:"destructive,omitempty"`
	// Rerun marks a step-started of a step that an earlier run started and
	// never finished.
	Rerun bool `json:"rerun,omitempty"`
	// Message and Fraction (0..1, absent when unknown) are a step's progress.
	Message   string          `json:"message,omitempty"`
	Fraction  *float64        `json:"fraction,omitempty"`
	ElapsedMS int64           `json:"elapsed_ms,omitempty"` // step-done, step-failed, run-done
	Summary   string          `json:"summary,omitempty"`    // step-done
	Outputs   json.RawMessage `json:"outputs,omitempty"`    // step-done
	Error     string          `json:"error,omitempty"`      // step-failed, run-done
	Outcome   Outcome         `json:"outcome,omitempty"`    // run-done
	Digest    string          `json:"digest,omitempty"`     // run-started
	// Plan (run-started) is the whole plan; hooks must not modify it.
	Plan *Plan `json:"plan,omitempty"`
	// Prior (run-started) holds outputs of steps before Index that a resumed
	// run was given, so that a new journal is complete on its own.
	Prior map[int]json.RawMessage `json:"prior_outputs,omitempty"`
}

// Hook receives the events of a run. The executor calls hooks one at a time,
// in the order given, with required hooks first; ctx carries a deadline
// (Executor.HookTimeout) that Handle must honour, and it stays valid after the
// run's own context ends so that hooks can record why a run stopped.
type Hook interface {
	Handle(ctx context.Context, e Event) error
}

// RequiredHook is a Hook that can report itself required. If a required hook
// fails, the run halts before the next step, and a step whose start a
// required hook could not record does not run.
type RequiredHook interface {
	Hook
	Required() bool
}

// HookFunc adapts a function to Hook.
type HookFunc func(ctx context.Context, e Event) error

// Handle calls f.
func (f HookFunc) Handle(ctx context.Context, e Event) error { return f(ctx, e) }

// Required marks h as required (see RequiredHook).
func Required(h Hook) Hook { return requiredHook{h} }

type requiredHook struct{ Hook }

func (requiredHook) Required() bool   { return true }
func (r requiredHook) String() string { return hookName(r.Hook) }

// IsRequired reports whether h is required.
func IsRequired(h Hook) bool {
	r, ok := h.(RequiredHook)
	return ok && r.Required()
}

// Callbacks is a Hook built from one optional function per event type.
type Callbacks struct {
	RunStarted func(Event) error
	BeforeStep func(Event) error // step-started
	Progress   func(Event) error // step-progress
	AfterStep  func(Event) error // step-done
	StepFailed func(Event) error
	RunDone    func(Event) error
}

// Handle dispatches e to the matching callback.
func (c Callbacks) Handle(_ context.Context, e Event) error {
	var f func(Event) error
	switch e.Type {
	case EventRunStarted:
		f = c.RunStarted
	case EventStepStarted:
		f = c.BeforeStep
	case EventStepProgress:
		f = c.Progress
	case EventStepDone:
		f = c.AfterStep
	case EventStepFailed:
		f = c.StepFailed
	case EventRunDone:
		f = c.RunDone
	}
	if f == nil {
		return nil
	}
	return f(e)
}

func hookName(h Hook) string {
	if s, ok := h.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("hook %T", h)
}
