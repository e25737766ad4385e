package tui

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/mattn/go-runewidth"
)

// column is one column of a table. Width is the least width. A narrow
// screen takes room from Flex columns first (names, free text), then from
// the widest others; never from a Keep column (ids an operator must type,
// such as run ids), which always shows its cells whole.
type column struct {
	Title string
	Width int
	Flex  bool
	Keep  bool
	Right bool // numbers: right-aligned
	// Hidden columns are not drawn: a row's id for the code, not the eye.
	Hidden bool
	// Optional columns are dropped whole on a screen too narrow for
	// every column (the rightmost first), before any other column is cut.
	Optional bool
}

// table is a virtualised table: it keeps every row but renders only the
// rows on screen, so 10,000 partitions scroll as fast as ten. Rows are
// filtered (substring of any cell, case-insensitive) and sorted (by one
// column, numbers as numbers) into view, a list of row indices.
type table struct {
	cols   []column
	rows   [][]string
	view   []int
	cursor int // index into view
	offset int // first view row on screen
	filter string
	// sortCol is the column sorted by; -1 keeps the rows in the order
	// given (givenLabel names it, e.g. "newest first").
	sortCol    int
	sortAsc    bool
	givenLabel string
	height     int // rows on screen at the last render
	// natural is, per column, the widest cell: a column cut narrower than
	// it gets spare width first, in column order.
	natural []int
	// follow keeps the cursor on the first row as rows come (a list
	// newest first follows the newest) until the operator moves it away.
	follow, moved bool
}

func newTable(cols ...column) *table { return &table{cols: cols, sortAsc: true} }

// inGivenOrder keeps the rows in the order SetRows gives them, named
// label, until the operator sorts; the cursor follows the first row until
// the operator moves it.
func (t *table) inGivenOrder(label string) *table {
	t.sortCol, t.givenLabel, t.follow = -1, label, true
	return t
}

// SetRows replaces the rows and keeps the cursor on the row with the same
// first cell, if it is still there.
func (t *table) SetRows(rows [][]string) {
	key := t.SelectedKey()
	if t.follow && !t.moved {
		key = ""
	}
	t.rows = rows
	t.natural = make([]int, len(t.cols))
	for _, r := range rows {
		for i, c := range r {
			t.natural[i] = max(t.natural[i], runewidth.StringWidth(c))
		}
	}
	t.reindex()
	if key == "" {
		t.cursor, t.offset = 0, 0
	} else {
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
	if t.sortCol < 0 {
		t.sortCol, t.sortAsc = 0, true
	} else if t.sortCol == len(t.cols)-1 && t.sortAsc {
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
	if t.sortCol < 0 {
		return t.givenLabel
	}
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
	if c < 0 {
		return
	}
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
	t.moved = t.cursor != 0
}

// Home and End jump to the first and last row.
func (t *table) Home() { t.cursor = 0; t.clamp(); t.moved = false }
func (t *table) End()  { t.cursor = len(t.view) - 1; t.clamp(); t.moved = t.cursor != 0 }

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

// widths gives each column its least width (a Keep column its widest
// cell), then spare width to the columns cut narrower than their widest
// cell, in column order; what is left goes to the last column if it is
// free text (Flex), never as padding between columns. On a narrow screen flex columns give way
// first, down to 8 cells, then the widest others down to 3; Keep columns
// never do. A width of 0 is a column not drawn (Hidden, or Optional and
// dropped).
func (t *table) widths(width int) []int {
	w := make([]int, len(t.cols))
	total := 2
	for i, c := range t.cols {
		if c.Hidden {
			continue
		}
		w[i] = max(c.Width, runewidth.StringWidth(c.Title))
		if c.Keep && i < len(t.natural) {
			w[i] = max(w[i], t.natural[i])
		}
		total += w[i] + 1
	}
	spare := width - total
	for i := len(t.cols) - 1; i >= 0 && spare < 0; i-- {
		if t.cols[i].Optional && w[i] > 0 {
			spare += w[i] + 1
			w[i] = 0
		}
	}
	for i, c := range t.cols {
		if !c.Hidden && i < len(t.natural) && spare > 0 {
			grow := min(spare, max(0, t.natural[i]-w[i]))
			w[i] += grow
			spare -= grow
		}
	}
	// The last column, when it is free text, takes the rest: it ends the
	// line, so its room is never padding between columns.
	if last := len(t.cols) - 1; spare > 0 && last >= 0 {
		for last >= 0 && t.cols[last].Hidden {
			last--
		}
		if last >= 0 && t.cols[last].Flex {
			w[last] += spare
		}
	}
	for spare < 0 {
		widest := -1
		for i, c := range t.cols {
			if c.Flex && !c.Keep && w[i] > 8 && (widest < 0 || w[i] > w[widest]) {
				widest = i
			}
		}
		if widest < 0 {
			for i, c := range t.cols {
				if !c.Keep && w[i] > 3 && (widest < 0 || w[i] > w[widest]) {
					widest = i
				}
			}
		}
		if widest < 0 {
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
	first := true
	for i, w := range widths {
		if w == 0 { // hidden, or dropped on a narrow screen
			continue
		}
		if !first {
			b.WriteString(" ")
		}
		first = false
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
