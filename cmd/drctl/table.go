package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"golang.org/x/term"
)

// A table prints rows as plain columns aligned with spaces, one row a line,
// as kubectl, gh and kafka-topics do: no box drawing, nothing wrapped
// mid-word, and a cell that is a name (an id, a topic, a group, a cluster)
// is never cut, so it can be copied. When the rows are wider than the
// terminal, free-text columns are shortened (or word-wrapped) first, then
// the least important columns are dropped; a line under the table names
// what was dropped, and -o wide prints every column in full.
//
// The alignment is text/tabwriter's: which columns to show and how wide is
// drctl's own decision (tablewriter's fitting wraps any cell, names
// included), so all that is left for a library is padding, which the
// standard library does. Widths are counted in runes, as tabwriter counts
// them; drctl's cells are names and ASCII text with a few one-column
// symbols (→, ≤).
type table struct {
	w     io.Writer
	width int  // 0: no limit (a pipe)
	wide  bool // -o wide: every column, nothing shortened
	cols  []column
	rows  [][]string
}

// column describes one column. A column with neither Drop nor Fit is always
// shown in full: give ids, topics, groups and clusters neither.
type column struct {
	Name string
	// Drop ranks the columns dropped to fit the width, 1 first (0: never).
	Drop int
	// Fit says how a free-text column gives up width.
	Fit fit
}

type fit int

const (
	fitNone    fit = iota
	fitShorten     // cut at the column's width, with "…"
	fitWrap        // wrapped between words onto more lines
)

// minFitWidth is the narrowest a shortened or wrapped column gets.
const minFitWidth = 10

// gap is the space between columns.
const gap = 2

// tableOut is the writer render hands a command's table function: where
// the output goes, how wide it may be and whether -o wide asked for every
// column.
type tableOut struct {
	io.Writer
	width int
	wide  bool
}

// newTable starts a table for w: as wide as w's terminal at most (or
// $COLUMNS), or unlimited on a pipe; every column under -o wide.
func newTable(w io.Writer, cols ...column) *table {
	t := &table{w: w, cols: cols}
	if to, ok := w.(*tableOut); ok {
		t.width, t.wide = to.width, to.wide
	} else {
		t.width = terminalWidth(w)
	}
	return t
}

// col is a column shown in full and never dropped.
func col(name string) column { return column{Name: name} }

// Append adds a row; cells beyond the columns are ignored, missing ones are
// empty.
func (t *table) Append(cells ...string) {
	row := make([]string, len(t.cols))
	for i := range row {
		if i < len(cells) {
			row[i] = strings.Join(strings.Fields(cells[i]), " ") // one line, no tabs
		}
	}
	t.rows = append(t.rows, row)
}

// Render writes the header, the rows and, when columns were dropped to fit,
// a line that names them.
func (t *table) Render() error {
	shown := make([]int, len(t.cols))
	for i := range shown {
		shown[i] = i
	}
	var dropped []string
	limit := t.width
	if t.wide {
		limit = 0
	}
	for limit > 0 && t.narrowest(shown) > limit {
		drop := -1
		for j, i := range shown {
			if r := t.cols[i].Drop; r > 0 && (drop < 0 || r < t.cols[shown[drop]].Drop) {
				drop = j
			}
		}
		if drop < 0 {
			break // names are never cut: the table is wider than the terminal
		}
		dropped = append(dropped, strings.ToUpper(t.cols[shown[drop]].Name))
		shown = append(shown[:drop], shown[drop+1:]...)
	}
	widths := t.fitWidths(shown, limit)
	tw := tabwriter.NewWriter(t.w, 0, 0, gap, ' ', 0)
	header := make([][]string, len(shown))
	for j, i := range shown {
		header[j] = []string{strings.ToUpper(t.cols[i].Name)}
	}
	writeLines(tw, header)
	for _, row := range t.rows {
		cells := make([][]string, len(shown))
		for j, i := range shown {
			switch {
			case t.cols[i].Fit == fitShorten:
				cells[j] = []string{shorten(row[i], widths[j])}
			case t.cols[i].Fit == fitWrap:
				cells[j] = wrapWords(row[i], widths[j])
			default:
				cells[j] = []string{row[i]}
			}
		}
		writeLines(tw, cells)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(dropped) > 0 {
		return writeWrapped(t.w, "  ", fmt.Sprintf("(not shown to fit %d columns: %s; -o wide shows them)", t.width, strings.Join(dropped, ", ")))
	}
	return nil
}

// writeWrapped writes text as a line, broken between words to the width of
// w (see newTable), continued on lines that start with indent. Spaces that
// begin text are kept.
func writeWrapped(w io.Writer, indent, text string) error {
	width := terminalWidth(w)
	if to, ok := w.(*tableOut); ok {
		width = to.width
	}
	lines := []string{text}
	if lead := text[:len(text)-len(strings.TrimLeft(text, " "))]; width > 0 {
		lines = wrapWords(text, max(width-len(lead), minFitWidth))
		lines[0] = lead + lines[0]
		if len(lines) > 1 {
			rest := wrapWords(strings.Join(lines[1:], " "), max(width-len(indent), minFitWidth))
			lines = lines[:1]
			for _, l := range rest {
				lines = append(lines, indent+l)
			}
		}
	}
	_, err := fmt.Fprintln(w, strings.Join(lines, "\n"))
	return err
}

// writeLines writes one row of cells, each a cell's lines, as tab-separated
// lines (the last cell unpadded).
func writeLines(w io.Writer, cells [][]string) {
	n := 1
	for _, c := range cells {
		n = max(n, len(c))
	}
	for l := range n {
		parts := make([]string, len(cells))
		for j, c := range cells {
			if l < len(c) {
				parts[j] = c[l]
			}
		}
		fmt.Fprintln(w, strings.TrimRight(strings.Join(parts, "\t"), "\t"))
	}
}

// natural is the width column i needs for its header and every cell.
func (t *table) natural(i int) int {
	n := utf8.RuneCountInString(t.cols[i].Name)
	for _, r := range t.rows {
		n = max(n, utf8.RuneCountInString(r[i]))
	}
	return n
}

// minWidth is the narrowest column i can be: its natural width, or for
// free text the header's width, at least minFitWidth.
func (t *table) minWidth(i int) int {
	n := t.natural(i)
	if t.cols[i].Fit == fitNone {
		return n
	}
	return min(n, max(minFitWidth, utf8.RuneCountInString(t.cols[i].Name)))
}

// narrowest is the width of the shown columns with free text at its
// narrowest.
func (t *table) narrowest(shown []int) int {
	total := gap * (len(shown) - 1)
	for _, i := range shown {
		total += t.minWidth(i)
	}
	return total
}

// fitWidths gives each shown column its natural width, and when that is
// wider than limit, takes the excess from the free-text columns, the widest
// first, down to their minimum.
func (t *table) fitWidths(shown []int, limit int) []int {
	widths := make([]int, len(shown))
	total := gap * (len(shown) - 1)
	for j, i := range shown {
		widths[j] = t.natural(i)
		total += widths[j]
	}
	for limit > 0 && total > limit {
		widest := -1
		for j, i := range shown {
			if t.cols[i].Fit != fitNone && widths[j] > t.minWidth(i) && (widest < 0 || widths[j] > widths[widest]) {
				widest = j
			}
		}
		if widest < 0 {
			break
		}
		widths[widest]--
		total--
	}
	return widths
}

// shorten cuts s to n runes, the last one "…".
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n || n < 1 {
		return s
	}
	return string(r[:n-1]) + "…"
}

// wrapWords breaks s between words into lines of at most n runes; a word
// longer than n stays whole on a line of its own. A command in backticks
// (`drctl resume ID`) is kept on one line when it fits, so it can be copied.
func wrapWords(s string, n int) []string {
	var lines []string
	line := ""
	for _, word := range wordsOf(s, n) {
		switch {
		case line == "":
			line = word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= n:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	return append(lines, line)
}

// wordsOf splits s into words, a backtick span of at most n runes being one.
func wordsOf(s string, n int) []string {
	var out, span []string
	for w := range strings.FieldsSeq(s) {
		switch {
		case span != nil:
			span = append(span, w)
			if strings.Contains(w, "`") {
				out = append(out, joinSpan(span, n)...)
				span = nil
			}
		case strings.Count(w, "`") == 1:
			span = []string{w}
		default:
			out = append(out, w)
		}
	}
	return append(out, span...) // an unclosed backtick: plain words
}

func joinSpan(span []string, n int) []string {
	if j := strings.Join(span, " "); utf8.RuneCountInString(j) <= n {
		return []string{j}
	}
	return span
}

// terminalWidth is the width of the terminal w writes to, else $COLUMNS
// (set by shells, and by tests), else 0: no limit, as for a pipe.
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 0 {
			return width
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 0
}
