package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// urfave/cli v2 stops reading flags at the first positional argument, and a
// flag is only known to the command that declares it: `drctl apply plan.json
// --yes` and `drctl status -c drctl.yaml` fail there. normalizeArgs rewrites a
// command line so that every flag stands right after the command that
// declares it (the innermost one along the command path) and the positional
// arguments come last, after "--" when one of them looks like a flag. It
// works from the command definitions alone, so a command added later gets
// the same treatment. "--" ends the flags as usual.
//
// On the way it finds what urfave would report badly (exit 1, or a help
// page): an unknown command or flag (with a suggestion) and a missing
// required flag. Those are usageErrors (exit 2).
//
// A command line that asks for shell completions is passed through as is.

// cmdLevel is one command on the path from the app to the leaf.
type cmdLevel struct {
	name     string
	flags    []cli.Flag
	subs     []*cli.Command
	hasHelp  bool // urfave adds a help subcommand to commands with subcommands
	leafArgs bool // the command takes positional arguments: a leaf with an Action, or one that says so
	cmd      *cli.Command
}

// flagTok is one flag with its value, and the path level it belongs to.
type flagTok struct {
	level int
	toks  []string
}

const completionFlag = "--generate-bash-completion"

func appLevel(app *cli.App) cmdLevel {
	return cmdLevel{flags: app.Flags, subs: app.Commands, hasHelp: !app.HideHelpCommand, leafArgs: takesArgs(app.Action != nil, app.Commands, app.ArgsUsage)}
}

func commandLevel(parent string, c *cli.Command) cmdLevel {
	return cmdLevel{name: strings.TrimSpace(parent + " " + c.Name), flags: c.Flags, subs: c.Subcommands, hasHelp: len(c.Subcommands) > 0 && !c.HideHelpCommand, leafArgs: takesArgs(c.Action != nil, c.Subcommands, c.ArgsUsage), cmd: c}
}

func takesArgs(action bool, subs []*cli.Command, argsUsage string) bool {
	return argsUsage != "" || (action && len(subs) == 0)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// flagName returns the name of a flag token ("--to=x" -> "to") and whether
// it carries its value inline.
func flagName(tok string) (name string, inline bool) {
	name = strings.TrimLeft(tok, "-")
	if i := strings.IndexByte(name, '='); i >= 0 {
		return name[:i], true
	}
	return name, false
}

func isFlag(tok string) bool { return len(tok) > 1 && tok[0] == '-' }

// lookupFlag finds the innermost level (index into path) declaring name.
func lookupFlag(path []cmdLevel, name string) (int, cli.Flag) {
	if name == "help" || name == "h" {
		return len(path) - 1, cli.HelpFlag
	}
	for i, p := range slices.Backward(path) {
		for _, f := range p.flags {
			if slices.Contains(f.Names(), name) {
				return i, f
			}
		}
	}
	return -1, nil
}

func takesValue(f cli.Flag) bool {
	if v, ok := f.(cli.DocGenerationFlag); ok {
		return v.TakesValue()
	}
	return false
}

// normalizeArgs returns args (args[0] is the program) reordered for urfave.
func normalizeArgs(app *cli.App, args []string) ([]string, error) {
	if len(args) == 0 || args[len(args)-1] == completionFlag {
		return args, nil
	}
	path := []cmdLevel{appLevel(app)}
	var flags []flagTok
	var positional []string
	dashdash, help := false, false
	rest := args[1:]
	for i := 0; i < len(rest); i++ {
		tok := rest[i]
		switch {
		case dashdash:
			positional = append(positional, tok)
		case tok == "--":
			dashdash = true
		case isFlag(tok):
			name, inline := flagName(tok)
			lvl, f := lookupFlag(path, name)
			if f == nil {
				// It may belong to a command named further on; decide at the end.
				flags = append(flags, flagTok{level: -1, toks: []string{tok}})
				continue
			}
			if f == cli.HelpFlag {
				help = true
			}
			ft := flagTok{level: lvl, toks: []string{tok}}
			if takesValue(f) && !inline && i+1 < len(rest) {
				i++
				ft.toks = append(ft.toks, rest[i])
			}
			flags = append(flags, ft)
		default:
			cur := path[len(path)-1]
			if len(positional) == 0 && len(cur.subs) > 0 {
				if c := findCommand(cur.subs, tok); c != nil {
					path = append(path, commandLevel(cur.name, c))
					continue
				}
				if cur.hasHelp && (tok == "help" || tok == "h") {
					// drctl [CMD] help [TOPIC...]: the rest names a topic.
					positional = append(positional, rest[i+1:]...)
					help = true
					i = len(rest)
					path = append(path, cmdLevel{name: strings.TrimSpace(cur.name + " help")})
					continue
				}
				if !cur.leafArgs {
					return nil, usageError{cur.name, fmt.Errorf("unknown command %q%s", tok, suggestCommand(cur.subs, tok))}
				}
			}
			positional = append(positional, tok)
		}
	}
	// Place every flag at the innermost command of the final path that
	// declares it (a flag may precede its command); refuse unknown ones.
	for i := range flags {
		tok := flags[i].toks[0]
		name, _ := flagName(tok)
		lvl, f := lookupFlag(path, name)
		if f == nil {
			return nil, usageError{path[len(path)-1].name, fmt.Errorf("unknown flag %s%s", tok, suggestFlag(path, name))}
		}
		flags[i].level = lvl
		if f == cli.HelpFlag {
			help = true
		}
	}
	if !help {
		if err := checkRequired(path, flags); err != nil {
			return nil, err
		}
	}
	out := []string{args[0]}
	for lvl := range path {
		if lvl > 0 {
			if path[lvl].cmd == nil { // the help command
				out = append(out, "help")
				continue
			}
			out = append(out, path[lvl].cmd.Name)
		}
		for _, f := range flags {
			if f.level == lvl {
				out = append(out, f.toks...)
			}
		}
	}
	if len(positional) > 0 && path[len(path)-1].cmd != nil {
		if slices.ContainsFunc(positional, isFlag) {
			out = append(out, "--")
		}
	}
	return append(out, positional...), nil
}

// checkRequired reports the first required flag along the path that was not
// given (on the command line or through its environment variables).
func checkRequired(path []cmdLevel, given []flagTok) error {
	have := map[string]bool{}
	for _, f := range given {
		name, _ := flagName(f.toks[0])
		have[name] = true
	}
	for _, l := range path {
		for _, f := range l.flags {
			if r, ok := f.(cli.RequiredFlag); !ok || !r.IsRequired() {
				continue
			}
			if flagGiven(f, have) {
				continue
			}
			usage := ""
			if d, ok := f.(cli.DocGenerationFlag); ok && d.GetUsage() != "" {
				usage = " (" + d.GetUsage() + ")"
			}
			return usageError{path[len(path)-1].name, fmt.Errorf("--%s is required%s", f.Names()[0], usage)}
		}
	}
	return nil
}

func flagGiven(f cli.Flag, have map[string]bool) bool {
	for _, n := range f.Names() {
		if have[n] {
			return true
		}
	}
	if d, ok := f.(cli.DocGenerationFlag); ok {
		for _, env := range d.GetEnvVars() {
			if _, set := os.LookupEnv(env); set {
				return true
			}
		}
	}
	return false
}

// usageError is a command line drctl cannot run: exit 2, nothing contacted.
// command is the command path ("mirror lag"; empty for drctl itself).
type usageError struct {
	command string
	err     error
}

func (e usageError) Error() string {
	if e.command == "" {
		return e.err.Error() + " (see drctl --help)"
	}
	return fmt.Sprintf("%s: %v (see drctl %s --help)", e.command, e.err, e.command)
}
func (e usageError) Unwrap() error { return e.err }

// suggestCommand returns `; did you mean "status"?` for a close enough name.
func suggestCommand(cmds []*cli.Command, typed string) string {
	var names []string
	for _, c := range cmds {
		if !c.Hidden {
			names = append(names, c.Names()...)
		}
	}
	if s := closest(names, typed); s != "" {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	return ""
}

func suggestFlag(path []cmdLevel, typed string) string {
	var names []string
	for _, l := range path {
		for _, f := range l.flags {
			names = append(names, f.Names()...)
		}
	}
	if s := closest(names, typed); s != "" {
		if len(s) == 1 {
			return fmt.Sprintf("; did you mean -%s?", s)
		}
		return fmt.Sprintf("; did you mean --%s?", s)
	}
	return ""
}

// closest is the most similar name, if it is close enough to be what was
// meant: at most one edit away (two for names of five letters or more),
// where swapping two neighbouring letters is one edit.
func closest(names []string, typed string) string {
	slices.Sort(names)
	best, dist := "", 1<<30
	for _, n := range names {
		if d := editDistance(n, typed); d < dist {
			best, dist = n, d
		}
	}
	limit := 1
	if len(typed) >= 5 {
		limit = 2
	}
	if dist > limit {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and transpositions of adjacent letters.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
