package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
)

// dialog asks before anything changes: it shows what will happen (a plan
// as `drctl plan failover` prints it, the offsets a sync commits) and
// waits for the expected answer. expect "" is a y/N question, answered on
// the single key: y is yes; n and esc are no; any other key (enter too)
// answers nothing, so a stray key never decides.
type dialog struct {
	title  string
	body   []string
	scroll int
	expect string
	input  textinput.Model
	ok     func(*Model) tea.Cmd
	cancel func()
	wrong  string
	// under says the current view stays visible below the dialog (a
	// run's question: its progress matters for the answer).
	under bool
}

func newDialog(title, body, prompt, expect string, ok func(*Model) tea.Cmd) *dialog {
	ti := textinput.New()
	ti.Prompt = prompt
	ti.CharLimit = 200
	if expect == "" {
		ti.CharLimit = 0 // nothing is typed: the answer is one key
	}
	ti.Focus()
	return &dialog{title: title, body: strings.Split(body, "\n"), expect: expect, input: ti, ok: ok}
}

func (d *dialog) key(m *Model, k tea.KeyMsg) tea.Cmd {
	if d.expect == "" {
		return d.yesNo(m, k)
	}
	switch k.String() {
	case "esc":
		return d.close(m, false)
	case "up":
		d.scroll = max(0, d.scroll-1)
		return nil
	case "down":
		d.scroll = min(max(0, len(d.body)-1), d.scroll+1)
		return nil
	case "pgup":
		d.scroll = max(0, d.scroll-10)
		return nil
	case "pgdown":
		d.scroll = min(max(0, len(d.body)-1), d.scroll+10)
		return nil
	case "enter":
		answer := strings.TrimSpace(d.input.Value())
		if answer == d.expect {
			return d.close(m, true)
		}
		d.wrong = "that is not " + d.expect + "; nothing was changed (esc cancels)"
		d.input.SetValue("")
		return nil
	}
	d.wrong = ""
	var cmd tea.Cmd
	d.input, cmd = d.input.Update(k)
	return cmd
}

// yesNo answers a y/N question on one key; the arrows scroll what it
// shows.
func (d *dialog) yesNo(m *Model, k tea.KeyMsg) tea.Cmd {
	switch k.String() {
	case "y", "Y":
		return d.close(m, true)
	case "n", "N", "esc":
		return d.close(m, false)
	case "up":
		d.scroll = max(0, d.scroll-1)
	case "down":
		d.scroll = min(max(0, len(d.body)-1), d.scroll+1)
	case "pgup":
		d.scroll = max(0, d.scroll-10)
	case "pgdown":
		d.scroll = min(max(0, len(d.body)-1), d.scroll+10)
	default:
		d.wrong = "press y for yes, n or esc for no"
	}
	return nil
}

func (d *dialog) close(m *Model, yes bool) tea.Cmd {
	m.dialog = nil
	if yes {
		return d.ok(m)
	}
	if d.cancel != nil {
		d.cancel()
	}
	m.say(true, "not confirmed; nothing was changed")
	return nil
}

func (d *dialog) view(width, height int, st styles) string {
	lines := []string{st.title.Render(d.title)}
	room := max(1, height-3)
	body := d.body[min(d.scroll, len(d.body)):]
	if len(body) > room {
		body = append(body[:room-1:room-1], st.dim.Render("… ↑/↓ pgup/pgdn scroll the plan"))
	}
	for _, l := range body {
		lines = append(lines, truncateANSI(l, width))
	}
	lines = append(lines, "")
	if d.wrong != "" {
		lines = append(lines, st.bad.Render(d.wrong))
	}
	return strings.Join(lines, "\n")
}
