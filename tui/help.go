package tui

import "strings"

// keyMap is every key of the console, as the help overlay and docs/tui.md
// list them.
var keyMap = [][2]string{
	{"1-6, tab, shift+tab", "switch view: overview, topics, groups, runs, drills, events"},
	{"j/k, up/down", "move; pgup/pgdn, g/G page and jump"},
	{"enter / esc", "open the selected topic (partition lag) or group (translation) / back"},
	{"/", "filter the table (enter keeps, esc clears)"},
	{"o", "sort by the next column"},
	{"r", "refresh now"},
	{"+ / -", "refresh less / more often"},
	{"p", "pause / resume the refresh"},
	{"f", "failover to the standby: shows the plan, you type the target's name"},
	{"F", "unplanned failover: only while the active is unreachable"},
	{"b", "failback to the home active cluster"},
	{"R", "resume the run in progress"},
	{"s", "offsets sync of the selected group on the standby (asks first)"},
	{"ctrl-c", "during a run: stop after this step; twice: cancel the step"},
	{"q", "quit (a run in progress must be stopped first)"},
	{"?", "this help; any key closes it"},
}

func helpView(width int, st styles) string {
	lines := []string{st.title.Render("KEYS") + "  (actions are disabled with --read-only)"}
	for _, k := range keyMap {
		lines = append(lines, truncateANSI(st.key.Render(padRight(k[0], 20))+" "+k[1], width))
	}
	return strings.Join(lines, "\n")
}

func padRight(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return s + strings.Repeat(" ", n-len(s))
}
