package plans

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

type moveParams struct {
	From string `json:"from"`
	To   string `json:"to"`
}

func TestStepTypeRoundTrip(t *testing.T) {
	move := NewStepType[moveParams]("move")
	p := New("run-1", "test")
	s := move.Spec("Move east to west", moveParams{From: "east", To: "west"})
	s.Destructive = true
	if err := p.Add(s); err != nil {
		t.Fatal(err)
	}
	// The plan format is the one StepSpec always wrote: params are the
	// JSON of the typed value.
	if got := string(p.Steps[0].Params); got != `{"from":"east","to":"west"}` {
		t.Errorf("params %s", got)
	}
	if !p.Steps[0].Destructive || p.Steps[0].Name != "move" {
		t.Errorf("step %+v", p.Steps[0])
	}

	r := NewRegistry()
	var got moveParams
	if err := move.Register(r, func(_ context.Context, mp moveParams, _ *RunContext) (Result, error) {
		got = mp
		return NewResult("moved", nil)
	}); err != nil {
		t.Fatal(err)
	}
	a, ok := r.Lookup("move")
	if !ok {
		t.Fatal("move is not registered")
	}
	if _, err := a.Run(context.Background(), p.Steps[0], &RunContext{Plan: p}); err != nil {
		t.Fatal(err)
	}
	if got != (moveParams{From: "east", To: "west"}) {
		t.Errorf("the action got %+v", got)
	}

	// An unknown parameter is a plan this build must not run: the action
	// is never called.
	got = moveParams{}
	bad := p.Steps[0]
	bad.Params = json.RawMessage(`{"from":"east","to":"west","force":true}`)
	if _, err := a.Run(context.Background(), bad, &RunContext{Plan: p}); err == nil || !strings.Contains(err.Error(), "force") {
		t.Errorf("unknown parameter: err %v", err)
	}
	if got != (moveParams{}) {
		t.Errorf("the action ran on a step with an unknown parameter: %+v", got)
	}

	if mp, err := move.Params(p.Steps[0]); err != nil || mp.To != "west" {
		t.Errorf("Params = %+v, %v", mp, err)
	}
	other := NewStepType[moveParams]("other")
	if _, err := other.Params(p.Steps[0]); err == nil {
		t.Error("Params decoded a step of another name")
	}
}
