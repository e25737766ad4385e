package tui

import (
	"context"
	"fmt"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drctl/drctl/plans"
)

// runEventMsg is one event of the console's own run.
type runEventMsg struct{ e plans.Event }

// runEndedMsg says the run's executor returned.
type runEndedMsg struct{ err error }

// stepQuestionMsg is a step asking the operator (fence mode none); the
// answer goes back on reply.
type stepQuestionMsg struct {
	question string
	reply    chan error
}

// runHook is the console as a plans.Hook: it forwards every event of the
// run to the model as a message. It is not required: the journal and the
// cluster-side run store are, so a slow screen never stops a run, and
// Handle gives up when the executor's hook deadline passes.
type runHook struct{ ch chan tea.Msg }

func newRunHook() *runHook { return &runHook{ch: make(chan tea.Msg, 256)} }

func (h *runHook) Handle(ctx context.Context, e plans.Event) error {
	select {
	case h.ch <- runEventMsg{e}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("tui: event %s of run %s not shown: %w", e.Type, e.RunID, ctx.Err())
	}
}

func (h *runHook) String() string { return "the console" }

// confirm asks the operator through the console and waits for the answer.
func (h *runHook) confirm(q string) error {
	reply := make(chan error, 1)
	h.ch <- stepQuestionMsg{question: q, reply: reply}
	return <-reply
}

// next waits for the run's next message.
func (h *runHook) next() tea.Cmd {
	return func() tea.Msg { return <-h.ch }
}
