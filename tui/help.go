package tui

import "strings"

// keyMap is every key of the console, as the help overlay and docs/tui.md
// list them.
var keyMap = [][2]string{
	{"1-6, tab", "switch view (shift+tab: back)"},
	{"j/k, up/down", "move; pgup/pgdn page, g/G first/last"},
	{"enter / esc", "open topic, group, past run or drill / back"},
	{"/", "filter the table (enter keeps, esc clears)"},
	{"o", "sort by the next column"},
	{"r", "refresh now"},
	{"+ / -", "refresh less / more often"},
	{"p", "pause / resume the refresh"},
	{"f", "failover: shows the plan, you type the target's name"},
	{"F", "unplanned failover, only while the active is down"},
	{"b", "failback to the home active cluster"},
	{"R", "resume the run in progress"},
	{"s", "offsets sync of the selected group (asks first)"},
	{"d", "run a canary drill (safe: canary topic and group only)"},
	{"ctrl-c", "at a question: no; in a run: stop after this step; twice: cancel"},
	{"q", "quit (stop a run in progress first)"},
	{"?", "this help; any key closes it"},
}

func helpView(width int, st styles) string {
	lines := []string{st.title.Render("KEYS") + "  (actions are disabled with --read-only)"}
	for _, k := range keyMap {
		lines = append(lines, truncateANSI(st.key.Render(padRight(k[0], 14))+" "+k[1], width))
	}
	return strings.Join(lines, "\n")
}

func padRight(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return s + strings.Repeat(" ", n-len(s))
}
