package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/drill/report"
	"github.com/drctl/drctl/internal/kafkaconn"
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
		clusters := kafkaconn.Open(ctx, topo)
		defer clusters.Close()
		hist, err := drill.History(ctx, clusters, drill.HistoryOptions{JournalDir: dir, Limit: 100})
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
	detail *pane
}

func newDrillsView() *drillsView {
	return &drillsView{list: newTable(
		column{Title: "drill", Width: 8, Flex: true},
		column{Title: "kind", Width: 9},
		column{Title: "started", Width: 11},
		column{Title: "took", Width: 6, Right: true},
		column{Title: "verdict", Width: 7},
		column{Title: "rpo s", Width: 6, Right: true},
		column{Title: "rto s", Width: 6, Right: true},
		column{Title: "p99 ms", Width: 6, Right: true},
		column{Title: "id", Hidden: true},
	).inGivenOrder("newest first")}
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
		took := "-"
		if d, err := time.ParseDuration(s.Duration); err == nil && !r.Unfinished && !r.FinishedAt.IsZero() {
			took = d.Round(time.Second).String()
		}
		if r.Unfinished {
			verdict = "unfinished"
		}
		rto := floatCell(s.RTOSeconds, "%.1f")
		if s.RTOEstimated {
			rto = "~" + rto // an estimate from an earlier drill, not measured by this one
		}
		rows = append(rows, []string{s.Drill, s.Kind, s.StartedAt.UTC().Format("01-02 15:04"), took, verdict,
			floatCell(s.RPOSeconds, "%.1f"), rto, floatCell(s.LatencyP99MS, "%.0f"), r.ID})
	}
	v.list.SetRows(rows)
}

func floatCell(f *float64, format string) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprintf(format, *f)
}

// Enter opens the selected drill's report: its verdict, measurements and
// steps, as drctl drill report prints it.
func (v *drillsView) Enter() {
	row := v.list.Selected()
	if row == nil {
		return
	}
	id := row[len(row)-1]
	for i := range v.hist {
		if v.hist[i].ID == id {
			var b strings.Builder
			if err := report.Markdown(&b, &v.hist[i]); err != nil {
				v.detail = newPane("DRILL "+id, []string{"error: " + err.Error()})
				return
			}
			v.detail = newPane("DRILL "+id+"  esc back, ↑/↓ scroll", strings.Split(strings.TrimRight(b.String(), "\n"), "\n"))
			return
		}
	}
}

func (v *drillsView) View(width, height int, st styles) string {
	if v.detail != nil {
		return v.detail.View(width, height, st)
	}
	head := st.title.Render("DRILLS") + "  newest first (as drctl drill history); enter: report"
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
	verdict := st.bad.Render("FAIL")
	switch {
	case last.Unfinished:
		verdict = st.warn.Render("UNFINISHED")
	case last.Verdict == drill.Pass:
		verdict = st.ok.Render("PASS")
	}
	lines = append(lines, "last: "+last.Drill+" "+verdict+"  ("+last.ID+")")
	for _, r := range last.Reasons[:min(3, len(last.Reasons))] {
		lines = append(lines, wrapIndent("  - ", r, width)...)
	}
	return strings.Join(lines, "\n") + "\n" + v.list.View(width, height-len(lines), st)
}
