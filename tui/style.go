package tui

import (
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// styles are the console's colours. lipgloss drops them by itself where
// the terminal has none or NO_COLOR is set; every state is also said in
// words, so nothing depends on colour.
type styles struct {
	header, tabOn, tabOff, tableHead, selected, title lipgloss.Style
	ok, warn, bad, dim, key, card, cardBad            lipgloss.Style
}

func newStyles() styles {
	return styles{
		header:    lipgloss.NewStyle().Bold(true).Reverse(true),
		tabOn:     lipgloss.NewStyle().Bold(true).Underline(true),
		tabOff:    lipgloss.NewStyle().Faint(true),
		tableHead: lipgloss.NewStyle().Bold(true),
		selected:  lipgloss.NewStyle().Reverse(true),
		title:     lipgloss.NewStyle().Bold(true),
		ok:        lipgloss.NewStyle().Foreground(lipgloss.Color("2")),
		warn:      lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
		bad:       lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true),
		dim:       lipgloss.NewStyle().Faint(true),
		key:       lipgloss.NewStyle().Bold(true),
		card:      lipgloss.NewStyle().Border(lipgloss.NormalBorder()).Padding(0, 1),
		cardBad:   lipgloss.NewStyle().Border(lipgloss.NormalBorder()).BorderForeground(lipgloss.Color("1")).Padding(0, 1),
	}
}

// truncateANSI cuts s to width cells, keeping its escapes; nothing at 0.
func truncateANSI(s string, width int) string {
	if width <= 0 {
		return ""
	}
	return ansi.Truncate(s, width, "…")
}
