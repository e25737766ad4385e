package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drctl/drctl/inspect"
)

// Event is one line of the events view: something that changed between
// two refreshes, or a run's milestone.
type Event struct {
	At   time.Time
	Text string
	Bad  bool
}

// changes lists what differs from prev to cur, in words: role changes, a
// cluster going down or coming back, staleness, problems appearing and
// clearing, runs starting and ending. prev nil means the first snapshot.
func changes(prev, cur *inspect.Status, at time.Time) []Event {
	var out []Event
	add := func(bad bool, f string, a ...any) {
		out = append(out, Event{At: at, Text: fmt.Sprintf(f, a...), Bad: bad})
	}
	if cur == nil {
		return nil
	}
	r := cur.Roles
	if prev == nil {
		add(false, "first refresh: active %s, standby %s, epoch %d, %s", r.Active, r.Standby, r.Epoch, r.Phase)
		for _, c := range cur.Clusters {
			if !c.Reachable {
				add(true, "cluster %s is DOWN: %s", c.Name, c.Error)
			}
		}
		for _, p := range cur.Problems {
			add(true, "problem: %s", p)
		}
		return out
	}
	p := prev.Roles
	switch {
	case p.Active != r.Active:
		add(false, "roles: active %s, standby %s, epoch %d (were %s/%s, epoch %d)", r.Active, r.Standby, r.Epoch, p.Active, p.Standby, p.Epoch)
	case p.Epoch != r.Epoch:
		add(false, "epoch %d (was %d), active still %s", r.Epoch, p.Epoch, r.Active)
	}
	if p.Phase != r.Phase {
		add(false, "phase %s -> %s", p.Phase, r.Phase)
	}
	switch {
	case p.Run == nil && r.Run != nil:
		add(false, "run %s (%s) started by %s", r.Run.ID, r.Run.Kind, r.Run.By)
	case p.Run != nil && r.Run == nil:
		add(false, "run %s (%s) ended", p.Run.ID, p.Run.Kind)
	case p.Run != nil && r.Run != nil && p.Run.ID != r.Run.ID:
		add(false, "run %s ended; run %s (%s) started", p.Run.ID, r.Run.ID, r.Run.Kind)
	}
	was := map[string]inspect.ClusterStatus{}
	for _, c := range prev.Clusters {
		was[c.Name] = c
	}
	for _, c := range cur.Clusters {
		w, ok := was[c.Name]
		if !ok {
			continue
		}
		switch {
		case w.Reachable && !c.Reachable:
			add(true, "cluster %s is DOWN: %s", c.Name, c.Error)
		case !w.Reachable && c.Reachable:
			add(false, "cluster %s is back", c.Name)
		}
		if c.Reachable && w.Reachable && w.ClusterID != "" && c.ClusterID != w.ClusterID {
			add(true, "cluster %s answers with a different cluster id: %s (was %s)", c.Name, c.ClusterID, w.ClusterID)
		}
		if !w.Stale && c.Stale {
			add(true, "cluster %s is stale", c.Name)
		} else if w.Stale && !c.Stale && c.Reachable {
			add(false, "cluster %s is no longer stale", c.Name)
		}
	}
	before := map[string]bool{}
	for _, x := range prev.Problems {
		before[x] = true
	}
	now := map[string]bool{}
	for _, x := range cur.Problems {
		now[x] = true
		if !before[x] && !strings.HasPrefix(x, "cluster ") {
			add(true, "problem: %s", x)
		}
	}
	for _, x := range prev.Problems {
		if !now[x] && !strings.HasPrefix(x, "cluster ") {
			add(false, "cleared: %s", x)
		}
	}
	return out
}

// eventsView is view 6: the event log, newest first.
type eventsView struct {
	list *table
	all  []Event
}

func newEventsView() *eventsView {
	v := &eventsView{list: newTable(column{Title: "time", Width: 8}, column{Title: "what", Width: 20, Flex: true})}
	v.list.sortAsc = false // newest first
	return v
}

// maxEvents bounds the log.
const maxEvents = 1000

func (v *eventsView) Add(es ...Event) {
	v.all = append(v.all, es...)
	if len(v.all) > maxEvents {
		v.all = v.all[len(v.all)-maxEvents:]
	}
	rows := make([][]string, 0, len(v.all))
	for _, e := range slices.Backward(v.all) {

		text := e.Text
		if e.Bad {
			text = "! " + text
		}
		rows = append(rows, []string{e.At.Format("15:04:05"), text})
	}
	v.list.rows = rows
	v.list.reindex()
	v.list.clamp()
}

func (v *eventsView) View(width, height int, st styles) string {
	head := st.title.Render(fmt.Sprintf("EVENTS (%d)", len(v.all))) + "  what changed between refreshes, newest first"
	if len(v.all) == 0 {
		return head + "\n" + st.dim.Render("nothing yet")
	}
	return head + "\n" + v.list.View(width, height-1, st)
}
