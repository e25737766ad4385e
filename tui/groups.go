package tui

import (
	"fmt"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/mirror/groupsync"
)

// groupsView is view 3: every selected group on both sides and its sync;
// enter translates the group's positions (as `drctl offsets translate`).
type groupsView struct {
	list  *table
	parts *table
	open  string
	// translation of the open group; err when it failed; loading while
	// the command runs.
	tr      *groupsync.GroupTranslation
	trErr   string
	loading bool
	snap    *Snapshot
}

func newGroupsView() *groupsView {
	return &groupsView{
		list: newTable(
			column{Title: "group", Width: 12, Flex: true},
			column{Title: "active", Width: 8},
			column{Title: "mem", Width: 3, Right: true},
			column{Title: "standby", Width: 8},
			column{Title: "mem", Width: 3, Right: true},
			column{Title: "sync", Width: 8},
			column{Title: "age s", Width: 6, Right: true},
			column{Title: "reason", Width: 6, Flex: true},
		),
		parts: newTable(
			column{Title: "topic", Width: 10, Flex: true},
			column{Title: "part", Width: 4, Right: true},
			column{Title: "source", Width: 8, Right: true},
			column{Title: "target", Width: 8, Right: true},
			column{Title: "target end", Width: 10, Right: true},
			column{Title: "standby", Width: 8, Right: true},
			column{Title: "status", Width: 8, Flex: true},
			column{Title: "exact", Width: 5},
		),
	}
}

func (v *groupsView) SetSnapshot(s *Snapshot) {
	v.snap = s
	if s == nil || s.Status == nil {
		return
	}
	rows := make([][]string, 0, len(s.Status.Groups))
	for _, g := range s.Status.Groups {
		sync, age, reason := "-", "-", ""
		switch {
		case s.Status.Mirror == nil:
			// The link was not read: nothing is known of the sync.
			sync = "unknown"
		case g.Sync != nil:
			sync = "in sync"
			if !g.Sync.InSync {
				sync, reason = "BEHIND", g.Sync.Reason
			}
			if g.Sync.BehindSeconds >= 0 {
				age = fmt.Sprintf("%.1f", g.Sync.BehindSeconds)
			}
		case g.Active.Exists:
			sync = "never"
		}
		rows = append(rows, []string{g.Name, groupSide(g.Active), groupMembers(g.Active),
			groupSide(g.Standby), groupMembers(g.Standby), sync, age, orDash(reason)})
	}
	v.list.SetRows(rows)
}

// groupSide is a group's state on one side: "absent" when the cluster
// answered without it, "unknown" when the cluster did not answer.
func groupSide(s inspect.GroupSide) string {
	switch {
	case s.Unknown:
		return "unknown"
	case !s.Exists:
		return "absent"
	}
	return s.State
}

// groupMembers counts a side's members; "-" when its cluster did not
// answer (no count was seen).
func groupMembers(s inspect.GroupSide) string {
	if s.Unknown {
		return "-"
	}
	return fmt.Sprint(s.Members)
}

func (v *groupsView) current() *table {
	if v.open != "" {
		return v.parts
	}
	return v.list
}

// Enter opens the selected group and returns its name, for the caller to
// start the translation; "" when nothing opened.
func (v *groupsView) Enter() string {
	if v.open != "" || v.list.SelectedKey() == "" {
		return ""
	}
	v.open, v.tr, v.trErr, v.loading = v.list.SelectedKey(), nil, "", true
	v.parts.SetRows(nil)
	return v.open
}

func (v *groupsView) Back() bool {
	if v.open == "" {
		return false
	}
	v.open = ""
	return true
}

// SetTranslation shows a finished translation of the open group.
func (v *groupsView) SetTranslation(m translationMsg) {
	if m.group != v.open {
		return
	}
	v.loading = false
	if m.err != nil {
		v.trErr = m.err.Error()
		return
	}
	for i := range m.rep.Groups {
		if m.rep.Groups[i].Group == m.group {
			v.tr = &m.rep.Groups[i]
		}
	}
	if v.tr == nil {
		v.trErr = "the group has no committed offsets on " + m.rep.Source
		return
	}
	if v.tr.Error != "" {
		v.trErr = v.tr.Error
	}
	var rows [][]string
	for _, p := range v.tr.Partitions {
		rows = append(rows, []string{p.Topic, fmt.Sprint(p.Partition), fmt.Sprint(p.SourceCommitted), offsetCell(p.Target), offsetCell(p.TargetEnd),
			offsetCell(p.StandbyCommitted), p.Status.String(), yesNo(p.Exact)})
	}
	v.parts.SetRows(rows)
}

func offsetCell(o int64) string {
	if o < 0 {
		return "-"
	}
	return fmt.Sprint(o)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func (v *groupsView) View(width, height int, st styles) string {
	if v.snap == nil || v.snap.Status == nil {
		return st.dim.Render("waiting for the first refresh ...")
	}
	if v.open != "" {
		head := st.title.Render("GROUP "+v.open) + "  translation (as drctl offsets translate)  s: sync  esc: back"
		switch {
		case v.loading:
			return head + "\n" + st.dim.Render("translating ...")
		case v.trErr != "":
			return head + "\n" + st.bad.Render("error: "+v.trErr)
		}
		return head + "\n" + v.parts.View(width, height-1, st)
	}
	if noneAnswered(v.snap.Status) {
		return st.title.Render("GROUPS") + "  " + st.warn.Render("unknown: no cluster answered the last refresh")
	}
	head := st.title.Render(fmt.Sprintf("GROUPS (%d)", len(v.snap.Status.Groups))) + fmt.Sprintf("  members and sync on both sides  sort %s", v.list.SortLabel())
	if v.list.filter != "" {
		head += fmt.Sprintf("  filter %q: %d", v.list.filter, v.list.Len())
	}
	return head + "\n" + v.list.View(width, height-1, st)
}
