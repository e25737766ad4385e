package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drctl/drctl/topology"
	"github.com/drctl/drctl/tui"
)

// panicking is the console with a bug: the key p panics inside Update.
type panicking struct{ *tui.Model }

func (p panicking) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if k, ok := msg.(tea.KeyMsg); ok && k.String() == "p" {
		panic("a bug in Update")
	}
	_, cmd := p.Model.Update(msg)
	return p, cmd
}

// TestConsolePanicRestoresTerminal: a panic inside the console's program
// ends it with ErrProgramPanic (a failure, unlike a signal's kill), after
// the program left the alternate screen and showed the cursor again.
func TestConsolePanicRestoresTerminal(t *testing.T) {
	topo := &topology.Topology{Name: "payments", Path: "drctl.yaml", Active: "east", Standby: "west"}
	m := tui.New(tui.Options{Topology: topo, NoRefresh: true})
	var out bytes.Buffer
	_, err := consoleProgram(context.Background(), panicking{m}, tea.WithInput(strings.NewReader("p")), tea.WithOutput(&out)).Run()
	if !errors.Is(err, tea.ErrProgramPanic) {
		t.Fatalf("Run after a panic returned %v, want ErrProgramPanic", err)
	}
	if !consoleFailed(err) {
		t.Errorf("a panic is not counted as a failure: drctl tui would exit 0")
	}
	screen := out.String()
	enter := strings.Index(screen, ansiEnterAltScreen)
	leave := strings.LastIndex(screen, ansiExitAltScreen)
	if enter < 0 || leave < enter {
		t.Errorf("the program did not leave the alternate screen after the panic (enter at %d, leave at %d): %q", enter, leave, screen)
	}
	if show := strings.LastIndex(screen, ansiShowCursor); show < enter {
		t.Errorf("the cursor is not shown again after the panic: %q", screen)
	}
	if consoleFailed(tea.ErrProgramKilled) {
		t.Errorf("a kill by the cancelled context (a signal) is counted as a failure")
	}
}

const (
	ansiEnterAltScreen = "\x1b[?1049h"
	ansiExitAltScreen  = "\x1b[?1049l"
	ansiShowCursor     = "\x1b[?25h"
)
