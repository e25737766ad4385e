package topology

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

var envRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}`)

// expansions remembers what ${VAR} expansion changed, so that no message
// drctl prints about the file shows an expanded value: a variable may hold
// a secret, and a value that fails validation is shown as written.
type expansions struct {
	file    []byte                // the file as written
	written map[*yaml.Node]string // scalar -> its text as written in the file
	vars    map[string]string     // variable name -> the value substituted
	literal map[string]bool       // values the file writes out (set by expandEnv)
}

func newExpansions(file []byte) *expansions {
	return &expansions{file: file, written: map[*yaml.Node]string{}, vars: map[string]string{}, literal: map[string]bool{}}
}

// expandEnv replaces ${VAR} and ${VAR:-default} in every scalar value (not in
// keys). An unset variable without a default is an error.
func (x *expansions) expandEnv(n *yaml.Node, lookup func(string) (string, bool)) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var missing string
		out := envRE.ReplaceAllStringFunc(n.Value, func(ref string) string {
			m := envRE.FindStringSubmatch(ref)
			if v, ok := lookup(m[1]); ok && v != "" {
				x.vars[m[1]] = v
				return v
			}
			if strings.Contains(ref, ":-") {
				return m[2]
			}
			if missing == "" {
				missing = m[1]
			}
			return ""
		})
		if missing != "" {
			return &Error{Line: n.Line, Msg: fmt.Sprintf("environment variable %s is not set; export it, or write ${%s:-default}", missing, missing)}
		}
		if out != n.Value {
			x.written[n] = n.Value
			n.Value = out
		} else {
			x.literal[out] = true
		}
	case yaml.MappingNode:
		for i := 0; i < len(n.Content); i += 2 {
			x.literal[n.Content[i].Value] = true
		}
		for i := 1; i < len(n.Content); i += 2 {
			if err := x.expandEnv(n.Content[i], lookup); err != nil {
				return err
			}
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, c := range n.Content {
			if err := x.expandEnv(c, lookup); err != nil {
				return err
			}
		}
	}
	return nil
}

// asWritten returns a scalar's text as written in the file.
func (x *expansions) asWritten(n *yaml.Node) string {
	if w, ok := x.written[n]; ok {
		return w
	}
	return n.Value
}

// minScrubbed is the shortest variable value scrub removes wherever it
// appears; shorter ones are removed only where a message quotes them.
const minScrubbed = 6

// scrub rewrites a message about the file so that it shows each expanded
// value as written: a quoted expanded scalar ("...", `...` and yaml.v3's
// truncated `1234567...`) becomes its ${VAR} text, and any remaining
// variable value of minScrubbed or more characters becomes ${NAME}. What
// the file itself writes out is left alone (a quoted value that is also a
// literal scalar of the file may be that scalar; it is no secret).
func (x *expansions) scrub(msg string) string {
	type pair struct{ from, to string }
	var pairs []pair
	for n, w := range x.written {
		v := n.Value
		if v == "" || x.literal[v] {
			continue
		}
		pairs = append(pairs, pair{strconv.Quote(v), strconv.Quote(w)}, pair{"`" + v + "`", "`" + w + "`"})
		if len(v) > 10 {
			pairs = append(pairs, pair{"`" + v[:7] + "...`", "`" + w + "`"})
		}
	}
	// Longest first, so that a value inside another is not replaced in it.
	slices.SortFunc(pairs, func(a, b pair) int { return cmp.Compare(len(b.from), len(a.from)) })
	for _, p := range pairs {
		msg = strings.ReplaceAll(msg, p.from, p.to)
	}
	names := slices.SortedFunc(maps.Keys(x.vars), func(a, b string) int { return cmp.Compare(len(x.vars[b]), len(x.vars[a])) })
	for _, name := range names {
		if v := x.vars[name]; len(v) >= minScrubbed && !bytes.Contains(x.file, []byte(v)) {
			msg = strings.ReplaceAll(msg, v, "${"+name+"}")
		}
	}
	return msg
}
