package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
)

// TestTinyTerminals: every view draws what fits on a terminal of a few
// rows or columns, down to 0x0, without a panic: exactly h lines (none
// at 0 rows), none wider than w.
func TestTinyTerminals(t *testing.T) {
	sizes := [][2]int{{0, 0}, {1, 1}, {80, 0}, {80, 1}, {80, 2}, {80, 3}, {80, 4}, {0, 24}, {1, 24}, {5, 5}, {20, 6}}
	for _, sc := range scenarios {
		for _, size := range sizes {
			w, h := size[0], size[1]
			for view := range viewCount {
				t.Run(fmt.Sprintf("%s/%s-%dx%d", sc.name, strings.ToLower(viewNames[view]), w, h), func(t *testing.T) {
					m := fixtureModel(w, h, false)
					m.Update(snapshotMsg{sc.snap()})
					m.Update(key(fmt.Sprint(view + 1)))
					if view == viewDrills {
						m.Update(drillsMsg{hist: fixtureDrills()})
					}
					for _, k := range []string{"", "?", "f"} {
						if k != "" {
							m.Update(key(k))
						}
						out := m.View()
						lines := strings.Split(out, "\n")
						if h == 0 {
							if out != "" {
								t.Fatalf("0 rows drew %q", out)
							}
							continue
						}
						if len(lines) != h {
							t.Fatalf("after %q: %d lines, want %d:\n%s", k, len(lines), h, out)
						}
						for i, l := range lines {
							if lipgloss.Width(l) > w {
								t.Fatalf("after %q: line %d is %d wide, more than %d: %q", k, i+1, lipgloss.Width(l), w, l)
							}
						}
					}
				})
			}
		}
	}
}
