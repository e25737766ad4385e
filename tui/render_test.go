package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/golden"
)

func tea_WindowSize(w, h int) tea.Msg { return tea.WindowSizeMsg{Width: w, Height: h} }

func key(s string) tea.KeyMsg {
	switch s {
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "ctrl+c":
		return tea.KeyMsg{Type: tea.KeyCtrlC}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
}

// screen checks the rendered screen's shape: exactly h lines, none wider
// than w.
func screen(t *testing.T, m *Model, w, h int) string {
	t.Helper()
	out := m.View()
	lines := strings.Split(out, "\n")
	if len(lines) != h {
		t.Fatalf("screen has %d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if n := len([]rune(l)); n > w {
			t.Fatalf("line %d is %d wide, more than %d: %q", i+1, n, w, l)
		}
	}
	return out
}

var sizes = [][2]int{{80, 24}, {160, 48}}

var scenarios = []struct {
	name string
	snap func() *Snapshot
	run  bool // the console runs the failover itself
}{
	{"steady", scenarioSteady, false},
	{"lagging", scenarioLagging, false},
	{"cluster-down", scenarioClusterDown, false},
	{"both-down", scenarioBothDown, false},
	{"failing-over", scenarioFailingOver, true},
	{"stale", scenarioStale, false},
	{"differs", scenarioDiffers, false},
}

// TestGoldenViews renders every view of every scenario at 80x24 and
// 160x48; go test ./tui -run TestGoldenViews -update rewrites the goldens.
func TestGoldenViews(t *testing.T) {
	for _, sc := range scenarios {
		for _, size := range sizes {
			w, h := size[0], size[1]
			for view := range viewCount {
				if view == viewDrills && sc.name != "steady" {
					continue
				}
				t.Run(fmt.Sprintf("%s/%s-%dx%d", sc.name, strings.ToLower(viewNames[view]), w, h), func(t *testing.T) {
					m := fixtureModel(w, h, false)
					m.Update(snapshotMsg{sc.snap()})
					if sc.run {
						m.run = &liveRun{resume: "drctl -c drctl.yaml resume failover-20261201T095930-1234"}
						m.runs.run = m.run
						for _, e := range runEvents() {
							m.run.apply(e)
						}
					}
					m.Update(key(fmt.Sprint(view + 1)))
					if view == viewDrills {
						m.Update(drillsMsg{hist: fixtureDrills()})
					}
					golden.RequireEqual(t, []byte(screen(t, m, w, h)))
				})
			}
		}
	}
}

// TestGoldenRunQuestion: a step's question shows above the run's progress.
func TestGoldenRunQuestion(t *testing.T) {
	m := fixtureModel(80, 24, false)
	m.Update(snapshotMsg{scenarioFailingOver()})
	m.run = &liveRun{resume: "drctl -c drctl.yaml resume failover-20261201T095930-1234"}
	m.runs.run = m.run
	for _, e := range runEvents() {
		m.run.apply(e)
	}
	m.Update(key("4"))
	reply := make(chan error, 1)
	m.Update(stepQuestionMsg{question: "fence none: stop every producer writing to east now. Have they stopped?", reply: reply})
	golden.RequireEqual(t, []byte(screen(t, m, 80, 24)))
	m.Update(key("esc"))
	if err := <-reply; err == nil || !strings.Contains(err.Error(), "not confirmed") {
		t.Fatalf("esc answered %v", err)
	}
}
