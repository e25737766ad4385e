package tui

import (
	"fmt"
	"strings"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/linkstate"
)

// topicsView is view 2: every selected topic on both sides with its lag;
// enter opens the topic's per-partition lag (as `drctl mirror lag`).
type topicsView struct {
	list  *table
	parts *table
	open  string // the topic whose partitions are shown; "" for the list
	snap  *Snapshot
	prev  *Snapshot
}

func newTopicsView() *topicsView {
	return &topicsView{
		list: newTable(
			column{Title: "topic", Width: 12, Flex: true},
			column{Title: "partitions", Width: 10, Right: true},
			column{Title: "parity", Width: 7},
			column{Title: "lag", Width: 7, Right: true},
			column{Title: "lag s", Width: 6, Right: true},
			column{Title: "rate/s", Width: 7, Right: true},
			column{Title: "config drift", Width: 12, Flex: true},
		),
		parts: newTable(
			column{Title: "partition", Width: 9, Right: true},
			column{Title: "source end", Width: 10, Right: true},
			column{Title: "mirrored", Width: 10, Right: true},
			column{Title: "lag", Width: 7, Right: true},
			column{Title: "lag s", Width: 6, Right: true},
			column{Title: "lost", Width: 5, Right: true},
			column{Title: "error", Width: 10, Flex: true},
		),
	}
}

type topicLag struct {
	records, sourceEnd int64
	seconds            float64
}

func lagByTopic(l *linkstate.LagReport) map[string]topicLag {
	out := map[string]topicLag{}
	if l == nil {
		return out
	}
	for _, p := range l.Partitions {
		t := out[p.Topic]
		t.records += p.Records
		t.seconds = max(t.seconds, p.Seconds)
		t.sourceEnd += p.SourceEnd
		out[p.Topic] = t
	}
	return out
}

func (v *topicsView) SetSnapshot(prev, s *Snapshot) {
	v.prev, v.snap = prev, s
	if s == nil || s.Status == nil {
		return
	}
	lag, before := lagByTopic(s.Lag), lagByTopic(nil)
	dt := 0.0
	if prev != nil && prev.Lag != nil && s.Lag != nil && prev.Lag.Link == s.Lag.Link {
		before = lagByTopic(prev.Lag)
		dt = s.Lag.MeasuredAt.Sub(prev.Lag.MeasuredAt).Seconds()
	}
	rows := make([][]string, 0, len(s.Status.Topics))
	for _, t := range s.Status.Topics {
		parts := sidePartitions(t.Active) + "/" + sidePartitions(t.Standby)
		parity := "yes"
		switch {
		case t.Active.Unknown || t.Standby.Unknown:
			parity = "unknown"
		case !t.InParity:
			parity = "NO"
		}
		var drift []string
		for _, d := range t.ConfigDrift {
			drift = append(drift, fmt.Sprintf("%s: %s / %s", d.Key, orDash(d.Active), orDash(d.Standby)))
		}
		recs, secs, rate := "-", "-", "-"
		if l, ok := lag[t.Name]; ok {
			recs, secs = fmt.Sprint(l.records), fmt.Sprintf("%.1f", l.seconds)
			if b, ok := before[t.Name]; ok && dt > 0 {
				rate = fmt.Sprintf("%.1f", max(0, float64(l.sourceEnd-b.sourceEnd)/dt))
			}
		}
		rows = append(rows, []string{t.Name, parts, parity, recs, secs, rate, orDash(strings.Join(drift, "; "))})
	}
	v.list.SetRows(rows)
	v.fillParts()
}

// sidePartitions is a topic's partition count on one side: "-" when the
// cluster answered without it, "unknown" when the cluster did not answer.
func sidePartitions(s inspect.TopicSide) string {
	switch {
	case s.Unknown:
		return "unknown"
	case !s.Exists:
		return "-"
	}
	return fmt.Sprint(s.Partitions)
}

func (v *topicsView) fillParts() {
	if v.open == "" || v.snap == nil || v.snap.Lag == nil {
		v.parts.SetRows(nil)
		return
	}
	var rows [][]string
	for _, p := range v.snap.Lag.Partitions {
		if p.Topic != v.open {
			continue
		}
		mirrored := fmt.Sprint(p.Mirrored)
		if p.Mirrored < 0 {
			mirrored = "never"
		}
		rows = append(rows, []string{fmt.Sprint(p.Partition), fmt.Sprint(p.SourceEnd), mirrored, fmt.Sprint(p.Records), fmt.Sprintf("%.1f", p.Seconds), fmt.Sprint(p.Lost), orDash(p.Error)})
	}
	v.parts.SetRows(rows)
}

func (v *topicsView) current() *table {
	if v.open != "" {
		return v.parts
	}
	return v.list
}

// Enter opens the selected topic; Back closes it. Back reports whether
// there was something to close.
func (v *topicsView) Enter() {
	if v.open == "" && v.list.SelectedKey() != "" {
		v.open = v.list.SelectedKey()
		v.parts.cursor, v.parts.offset = 0, 0
		v.fillParts()
	}
}

func (v *topicsView) Back() bool {
	if v.open == "" {
		return false
	}
	v.open = ""
	return true
}

func (v *topicsView) View(width, height int, st styles) string {
	if v.snap == nil || v.snap.Status == nil {
		return st.dim.Render("waiting for the first refresh ...")
	}
	if v.open != "" {
		head := st.title.Render("TOPIC "+v.open) + "  per-partition lag (as drctl mirror lag)  esc: back"
		if v.snap.Lag == nil {
			msg := "lag not measured: both clusters must answer"
			if v.snap.LagError != "" {
				msg = "lag: " + v.snap.LagError
			}
			return head + "\n" + st.bad.Render(msg)
		}
		return head + "\n" + v.parts.View(width, height-1, st)
	}
	if noneAnswered(v.snap.Status) {
		return st.title.Render("TOPICS") + "  " + st.warn.Render("unknown: no cluster answered the last refresh")
	}
	head := st.title.Render(fmt.Sprintf("TOPICS (%d)", len(v.snap.Status.Topics))) + fmt.Sprintf("  partitions active/standby  sort %s", v.list.SortLabel())
	if v.list.filter != "" {
		head += fmt.Sprintf("  filter %q: %d", v.list.filter, v.list.Len())
	}
	lines := []string{head}
	switch m := v.snap.Status.Mirror; {
	case v.snap.LagError != "":
		lines = append(lines, wrapIndent("", st.bad.Render("lag: "+v.snap.LagError), width)...)
	case v.snap.Lag == nil && m != nil && m.Error != "":
		lines = append(lines, wrapIndent("", st.bad.Render("lag: "+m.Error), width)...)
	case v.snap.Lag == nil:
		lines = append(lines, wrapIndent("", st.warn.Render("lag "+notRead(v.snap.Status)), width)...)
	}
	return strings.Join(lines, "\n") + "\n" + v.list.View(width, height-len(lines), st)
}
