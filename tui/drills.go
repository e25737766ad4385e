package tui

// drillsView is view 5. drctl has no drill history to read yet (issue #11);
// until a drill package exposes one, the view says so.
type drillsView struct{}

func (drillsView) View(width, height int, st styles) string {
	return st.title.Render("DRILLS") + "\n" +
		"no drills yet: drctl has no drill history to show.\n" +
		st.dim.Render("Drills (drctl drill) will list their verdicts here.")
}
