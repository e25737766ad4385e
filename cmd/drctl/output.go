package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// render writes v as JSON or YAML when -o asks for it, and otherwise calls
// table to print the human form: fitted to the terminal, or with every
// column under -o wide.
func render(c *cli.Context, v any, table func(io.Writer) error) error {
	w := c.App.Writer
	f := outputFormat(c)
	switch f {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		return writeYAML(w, v)
	}
	return table(&tableOut{Writer: w, width: terminalWidth(w), wide: f == "wide"})
}

// outputFlag lets -o follow the command as well as precede it.
var outputFlag = &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "output format: table, wide (every column), json or yaml"}

// outputFormat is the innermost -o given, or "table".
func outputFormat(c *cli.Context) string {
	for _, cc := range c.Lineage() {
		if v := cc.String("output"); v != "" {
			return v
		}
	}
	return "table"
}

// textOnly names the commands whose output is a log, a script or a screen,
// not a document: -o json|yaml is refused there (exit 2) rather than
// silently ignored. A command is named by its path ("mirror run").
var textOnly = map[string]string{
	"sandbox":        "its output is a log",
	"mirror run":     "its output is a log; see --log-format",
	"drill schedule": "its output is a log; see --log-format",
	"completion":     "its output is a shell script",
	"tui":            "it is an interactive screen",
}

// humanOutput is whether -o asks for text for people (table or wide) rather
// than a document.
func humanOutput(c *cli.Context) bool {
	f := outputFormat(c)
	return f == "table" || f == "wide"
}

func checkOutputFormat(c *cli.Context) error {
	f := outputFormat(c)
	switch f {
	case "table", "wide", "json", "yaml":
	default:
		return withCode(exitBadInput, fmt.Errorf("-o %q is not a format; use table, wide, json or yaml", f))
	}
	if why, ok := textOnly[commandPath(c)]; ok && f != "table" && f != "wide" {
		return withCode(exitBadInput, fmt.Errorf("%s has no -o %s: %s", commandPath(c), f, why))
	}
	return nil
}

// commandPath is the command's path without the program name ("mirror lag").
func commandPath(c *cli.Context) string {
	var names []string
	for _, cc := range c.Lineage() {
		if cc.Command != nil && cc.Command.Name != "" && cc.Command.Name != c.App.Name {
			names = append([]string{cc.Command.Name}, names...)
		}
	}
	return strings.Join(names, " ")
}

// chainBefore runs first, then next (if any).
func chainBefore(first, next cli.BeforeFunc) cli.BeforeFunc {
	if next == nil {
		return first
	}
	return func(c *cli.Context) error {
		if err := first(c); err != nil {
			return err
		}
		return next(c)
	}
}

func hasFlag(flags []cli.Flag, name string) bool {
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return true
		}
	}
	return false
}

// badUsage makes flag errors bad input (exit 2) and prints no help page.
func badUsage(c *cli.Context, err error, _ bool) error {
	help := "drctl --help"
	if p := commandPath(c); p != "" {
		help = "drctl " + p + " --help"
		err = fmt.Errorf("%s: %w", p, err)
	}
	return withCode(exitBadInput, fmt.Errorf("%w (see %s)", err, help))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func section(w io.Writer, title string) {
	fmt.Fprintf(w, "\n%s\n", title)
}
