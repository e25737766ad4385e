package plans

import (
	"context"
	"fmt"
)

// StepType binds a step name to the Go type of its parameters, P, so that
// the plan builder and the step's Action cannot disagree about them: Spec
// takes a P, and the Action that Register installs receives a P, decoded
// strictly (an unknown parameter is a plan this build must not run) before
// the Action runs. The plan format does not change: Params is the JSON of
// P, as StepSpec encodes any value.
//
// Several names may share one parameter type (each gets its own StepType).
type StepType[P any] struct {
	// Name is the step name in plans (Step.Name).
	Name string
}

// NewStepType returns the step type named name whose parameters are a P.
func NewStepType[P any](name string) StepType[P] { return StepType[P]{Name: name} }

// Spec returns the StepSpec of one step of this type, with params p and
// title for people. Set Expect, Intend and Destructive on the result as
// needed.
func (t StepType[P]) Spec(title string, p P) StepSpec {
	return StepSpec{Name: t.Name, Title: title, Params: p}
}

// Register installs run as the Action of this type's steps in r.
func (t StepType[P]) Register(r *Registry, run func(ctx context.Context, p P, rc *RunContext) (Result, error)) error {
	return r.Register(t.Name, ActionFunc(func(ctx context.Context, s Step, rc *RunContext) (Result, error) {
		var p P
		if err := s.DecodeParams(&p); err != nil {
			return Result{}, err
		}
		return run(ctx, p, rc)
	}))
}

// Params decodes the parameters of s, a step of this type, strictly; for a
// reader of a plan (a report, an abort) rather than its Action. A step of
// another name is an error.
func (t StepType[P]) Params(s Step) (P, error) {
	var p P
	if s.Name != t.Name {
		return p, fmt.Errorf("step %d is %s, not %s", s.Index+1, s.Name, t.Name)
	}
	err := s.DecodeParams(&p)
	return p, err
}
