package tui

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/mattn/go-runewidth"
)

// column is one column of a table. Width is the least width; Flex columns
// share what is left of the screen.
type column struct {
	Title string
	Width int
	Flex  bool
	Right bool // numbers: right-aligned
}

// table is a virtualised table: it keeps every row but renders only the
// rows on screen, so 10,000 partitions scroll as fast as ten. Rows are
// filtered (substring of any cell, case-insensitive) and sorted (by one
// column, numbers as numbers) into view, a list of row indices.
type table struct {
	cols    []column
	rows    [][]string
	view    []int
	cursor  int // index into view
	offset  int // first view row on screen
	filter  string
	sortCol int
	sortAsc bool
	height  int // rows on screen at the last render
	// natural is, per column, the widest cell: flex columns grow to it
	// first, in column order, before the rest is shared.
	natural []int
}

func newTable(cols ...column) *table { return &table{cols: cols, sortAsc: true} }

// SetRows replaces the rows and keeps the cursor on the row with the same
// first cell, if it is still there.
func (t *table) SetRows(rows [][]string) {
	key := t.SelectedKey()
	t.rows = rows
	t.natural = make([]int, len(t.cols))
	for _, r := range rows {
		for i, c := range r {
			if t.cols[i].Flex {
				t.natural[i] = max(t.natural[i], runewidth.StringWidth(c))
			}
		}
	}
	t.reindex()
	if key != "" {
		for i, r := range t.view {
			if t.rows[r][0] == key {
				t.cursor = i
				break
			}
		}
	}
	t.clamp()
}

// SetFilter filters the rows; "" shows all.
func (t *table) SetFilter(f string) {
	t.filter = f
	t.reindex()
	t.cursor, t.offset = 0, 0
}

// NextSort sorts by the next column (wrapping around, ascending first;
// the first column again is descending).
func (t *table) NextSort() {
	if t.sortCol == len(t.cols)-1 && t.sortAsc {
		t.sortAsc = false
		t.sortCol = 0
	} else if !t.sortAsc {
		t.sortAsc = true
		t.sortCol = 1 % len(t.cols)
	} else {
		t.sortCol++
	}
	t.reindex()
}

// SortLabel names the sort for the footer, e.g. "lag ↓".
func (t *table) SortLabel() string {
	arrow := "↑"
	if !t.sortAsc {
		arrow = "↓"
	}
	return t.cols[t.sortCol].Title + " " + arrow
}

func (t *table) reindex() {
	t.view = t.view[:0]
	f := strings.ToLower(t.filter)
	for i, r := range t.rows {
		if f == "" || rowContains(r, f) {
			t.view = append(t.view, i)
		}
	}
	c := t.sortCol
	slices.SortStableFunc(t.view, func(a, b int) int {
		x := compareCells(t.rows[a][c], t.rows[b][c])
		if !t.sortAsc {
			x = -x
		}
		return x
	})
}

func rowContains(r []string, f string) bool {
	for _, c := range r {
		if strings.Contains(strings.ToLower(c), f) {
			return true
		}
	}
	return false
}

// compareCells orders numbers numerically and everything else as text.
func compareCells(a, b string) int {
	fa, ea := strconv.ParseFloat(strings.TrimSuffix(a, "s"), 64)
	fb, eb := strconv.ParseFloat(strings.TrimSuffix(b, "s"), 64)
	if ea == nil && eb == nil {
		return cmp.Compare(fa, fb)
	}
	return strings.Compare(a, b)
}

// Move moves the cursor by n rows.
func (t *table) Move(n int) {
	t.cursor += n
	t.clamp()
}

// Home and End jump to the first and last row.
func (t *table) Home() { t.cursor = 0; t.clamp() }
func (t *table) End()  { t.cursor = len(t.view) - 1; t.clamp() }

func (t *table) clamp() {
	t.cursor = max(0, min(t.cursor, len(t.view)-1))
	if t.height > 0 {
		if t.cursor < t.offset {
			t.offset = t.cursor
		}
		if t.cursor >= t.offset+t.height {
			t.offset = t.cursor - t.height + 1
		}
	}
	t.offset = max(0, min(t.offset, len(t.view)-1))
}

// Selected is the row under the cursor; nil when there is none.
func (t *table) Selected() []string {
	if len(t.view) == 0 {
		return nil
	}
	return t.rows[t.view[t.cursor]]
}

// SelectedKey is the first cell of the selected row.
func (t *table) SelectedKey() string {
	if r := t.Selected(); r != nil {
		return r[0]
	}
	return ""
}

// Len is the number of rows in view (after the filter).
func (t *table) Len() int { return len(t.view) }

// View renders the header and the rows that fit in height lines, width
// columns wide. Only those rows are formatted.
func (t *table) View(width, height int, st styles) string {
	t.height = max(1, height-1)
	t.clamp()
	widths := t.widths(width)
	var b strings.Builder
	b.WriteString(st.tableHead.Render(t.line(widths, func(i int) string { return t.cols[i].Title }, "  ")))
	end := min(len(t.view), t.offset+t.height)
	for i := t.offset; i < end; i++ {
		r := t.rows[t.view[i]]
		b.WriteString("\n")
		if i == t.cursor {
			b.WriteString(st.selected.Render(t.line(widths, func(c int) string { return r[c] }, "› ")))
		} else {
			b.WriteString(t.line(widths, func(c int) string { return r[c] }, "  "))
		}
	}
	return b.String()
}

// widths gives each column its least width, grows flex columns into the
// rest, and shrinks the widest columns when the screen is too narrow.
func (t *table) widths(width int) []int {
	w := make([]int, len(t.cols))
	total := 2
	for i, c := range t.cols {
		w[i] = max(c.Width, runewidth.StringWidth(c.Title))
		total += w[i] + 1
	}
	spare := width - total
	var flex []int
	for i, c := range t.cols {
		if c.Flex {
			flex = append(flex, i)
		}
	}
	for _, i := range flex {
		if i < len(t.natural) && spare > 0 {
			grow := min(spare, max(0, t.natural[i]-w[i]))
			w[i] += grow
			spare -= grow
		}
	}
	for spare > 0 && len(flex) > 0 {
		for _, i := range flex {
			if spare == 0 {
				break
			}
			w[i]++
			spare--
		}
	}
	for spare < 0 {
		// Flex columns (names, free text) give way first, down to 8 cells.
		widest := -1
		for _, i := range flex {
			if w[i] > 8 && (widest < 0 || w[i] > w[widest]) {
				widest = i
			}
		}
		if widest < 0 {
			widest = 0
			for i := range w {
				if w[i] > w[widest] {
					widest = i
				}
			}
		}
		if w[widest] <= 3 {
			break
		}
		w[widest]--
		spare++
	}
	return w
}

func (t *table) line(widths []int, cell func(int) string, lead string) string {
	var b strings.Builder
	b.WriteString(lead)
	for i, w := range widths {
		if i > 0 {
			b.WriteString(" ")
		}
		s := runewidth.Truncate(cell(i), w, "…")
		pad := strings.Repeat(" ", w-runewidth.StringWidth(s))
		if t.cols[i].Right {
			b.WriteString(pad + s)
		} else {
			b.WriteString(s + pad)
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// fit cuts every line of s to width cells and pads or cuts it to height
// lines, so that a view never spills over the footer. It draws nothing at
// 0 lines and empty lines at 0 columns.
func fit(s string, width, height int) string {
	if height <= 0 {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > height {
		lines = lines[:height]
	}
	for i, l := range lines {
		if lipgloss.Width(l) > width {
			lines[i] = truncateANSI(l, width)
		}
	}
	for len(lines) < height {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}
