package tui

import "strings"

// pane is a scrollable page of text: a past run's or a drill's details.
type pane struct {
	title  string
	lines  []string
	scroll int
}

func newPane(title string, lines []string) *pane { return &pane{title: title, lines: lines} }

// Scroll moves the page by n lines.
func (p *pane) Scroll(n int) {
	p.scroll = max(0, min(p.scroll+n, len(p.lines)-1))
}

// View shows the title and the lines that fit from the scroll position,
// each wrapped (an id or a command is never cut).
func (p *pane) View(width, height int, st styles) string {
	var body []string
	for _, l := range p.lines[min(p.scroll, len(p.lines)):] {
		if l == "" {
			body = append(body, "")
			continue
		}
		body = append(body, wrapIndent("", l, width)...)
		if len(body) >= height {
			break
		}
	}
	return st.title.Render(p.title) + "\n" + strings.Join(body, "\n")
}
