package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drctl/drctl/drill"
)

// drillsMsg carries the drill history, as `drctl drill history` reads it.
type drillsMsg struct {
	hist []drill.Record
	err  error
}

// drillsCmd reads the drill history (both clusters' drills topic and the
// local journal). It costs a read of the clusters, so the console asks for
// it only while the Drills view is open.
func (m *Model) drillsCmd() tea.Cmd {
	topo, dir, timeout := m.opts.Topology, m.opts.JournalDir, m.opts.Timeout
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		hist, err := drill.History(ctx, topo, drill.HistoryOptions{JournalDir: dir, Limit: 100})
		return drillsMsg{hist: hist, err: err}
	}
}

// drillsView is view 5: the drill history, newest first, with verdicts
// and their measurements; the last verdict's reasons under it.
type drillsView struct {
	list   *table
	loaded bool
	hist   []drill.Record
	err    string
}

func newDrillsView() *drillsView {
	return &drillsView{list: newTable(
		column{Title: "drill", Width: 12, Flex: true},
		column{Title: "kind", Width: 9},
		column{Title: "started", Width: 11},
		column{Title: "took", Width: 7, Right: true},
		column{Title: "verdict", Width: 7},
		column{Title: "rpo s", Width: 6, Right: true},
		column{Title: "rto s", Width: 6, Right: true},
		column{Title: "p99 ms", Width: 6, Right: true},
	)}
}

func (v *drillsView) Set(msg drillsMsg) {
	v.loaded, v.hist, v.err = true, msg.hist, ""
	if msg.err != nil {
		v.err = msg.err.Error()
	}
	rows := make([][]string, 0, len(msg.hist))
	for _, r := range msg.hist {
		s := r.Summary()
		verdict := string(s.Verdict)
		if s.Verdict == drill.Fail {
			verdict = "FAIL"
		}
		d, _ := time.ParseDuration(s.Duration)
		rows = append(rows, []string{s.Drill, s.Kind, s.StartedAt.UTC().Format("01-02 15:04"), d.Round(time.Second).String(), verdict,
			floatCell(s.RPOSeconds, "%.1f"), floatCell(s.RTOSeconds, "%.1f"), floatCell(s.LatencyP99MS, "%.0f")})
	}
	v.list.SetRows(rows)
}

func floatCell(f *float64, format string) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprintf(format, *f)
}

func (v *drillsView) View(width, height int, st styles) string {
	head := st.title.Render("DRILLS") + "  history and verdicts (as drctl drill history)"
	switch {
	case !v.loaded:
		return head + "\n" + st.dim.Render("reading the drill history ...")
	case len(v.hist) == 0 && v.err != "":
		return head + "\n" + st.bad.Render("error: "+v.err)
	case len(v.hist) == 0:
		return head + "\n" + "no drills yet: run one with drctl drill run (a canary drill is safe in production)"
	}
	lines := []string{head}
	if v.err != "" {
		lines = append(lines, st.bad.Render("partial: "+v.err))
	}
	last := v.hist[0]
	verdict := st.ok.Render("PASS")
	if last.Verdict == drill.Fail {
		verdict = st.bad.Render("FAIL")
	}
	lines = append(lines, "last: "+last.Drill+" "+verdict+"  ("+last.ID+")")
	for _, r := range last.Reasons[:min(3, len(last.Reasons))] {
		lines = append(lines, wrapIndent("  - ", r, width)...)
	}
	return strings.Join(lines, "\n") + "\n" + v.list.View(width, height-len(lines), st)
}
