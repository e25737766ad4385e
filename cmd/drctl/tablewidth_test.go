package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTablesFitTheTerminal: with an 80-column terminal ($COLUMNS when the
// output is not one), no line of a table is wider than 80 columns; long
// cells wrap in their column.
func TestTablesFitTheTerminal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "drctl.yaml")
	long := strings.Repeat("very-long-topic-name-", 6)
	yaml := "name: t\nclusters:\n  east:\n    bootstrap: [127.0.0.1:1]\n  west:\n    bootstrap: [127.0.0.1:2]\n" +
		"active: east\nstandby: west\nmirror:\n  topics: {include: [orders, \"" + long + "\"]}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cols := range []int{80, 60} {
		t.Setenv("COLUMNS", strconv.Itoa(cols))
		out, stderr, code := drctl(t, "validate", "-c", path)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		for line := range strings.SplitSeq(out, "\n") {
			if strings.ContainsAny(line, "│┌└├") && utf8.RuneCountInString(line) > cols {
				t.Errorf("COLUMNS=%d: a %d-column line:\n%s", cols, utf8.RuneCountInString(line), out)
				break
			}
		}
	}
}
