package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cpuguy83/go-md2man/v2/md2man"
	"github.com/urfave/cli/v2"
)

// The command reference (docs/commands.md) and the man page (docs/drctl.1)
// are generated from the command definitions by `make docs`, which runs the
// hidden `drctl docs --dir docs`; TestDocsCurrent fails when they are not
// current.

func docsCommand() *cli.Command {
	return &cli.Command{
		Name:   "docs",
		Hidden: true,
		Usage:  "write the command reference (commands.md) and the man page (drctl.1)",
		Flags:  []cli.Flag{&cli.StringFlag{Name: "dir", Value: "docs", Usage: "where to write them"}},
		Action: func(c *cli.Context) error {
			md, man := generateDocs()
			for name, body := range map[string][]byte{"commands.md": md, "drctl.1": man} {
				if err := os.WriteFile(filepath.Join(c.String("dir"), name), body, 0o644); err != nil {
					return fmt.Errorf("write docs: %w", err)
				}
			}
			return nil
		},
	}
}

// generateDocs returns commands.md and the drctl(1) man page.
func generateDocs() (markdown, man []byte) {
	app := newApp()
	var md, mm bytes.Buffer
	fmt.Fprintf(&md, "# drctl command reference\n\n<!-- Generated from the command definitions by `make docs`; do not edit. -->\n\n")
	writeReference(&md, app, false)
	fmt.Fprintf(&mm, "%% drctl 1\n\n# NAME\n\ndrctl - %s\n\n", app.Usage)
	writeReference(&mm, app, true)
	return md.Bytes(), md2man.Render(mm.Bytes())
}

func writeReference(w *bytes.Buffer, app *cli.App, man bool) {
	h := func(level int, title string) {
		if man { // the man page has one level of sections; commands are subsections
			level = max(1, level-1)
		}
		fmt.Fprintf(w, "%s %s\n\n", strings.Repeat("#", level), title)
	}
	if !man {
		fmt.Fprintf(w, "%s\n\n", app.Usage)
	}
	h(2, "SYNOPSIS")
	fmt.Fprintf(w, "`drctl [-c FILE] [-o table|wide|json|yaml] COMMAND [FLAGS] [ARGUMENTS]`\n\n")
	fmt.Fprintf(w, "Flags may come before or after the command and its arguments; `--` ends the flags.\n\n")
	h(2, "GLOBAL FLAGS")
	writeFlags(w, app.Flags, man)
	h(2, "EXIT CODES")
	fmt.Fprintf(w, "- `%d` success\n- `%d` the command failed\n- `%d` bad input: an unknown command or flag, a missing required flag, a bad value, a bad topology file; nothing was contacted. Also a change that needs the operator's consent when there is neither a terminal nor --yes, or whose question was not answered yes: nothing was changed\n- `%d` a cluster could not be reached or authenticated\n\n",
		exitOK, exitFailure, exitBadInput, exitUnreachable)
	h(2, "OUTPUT")
	fmt.Fprintf(w, "`-o json` and `-o yaml` print the same document (the YAML is the JSON in YAML syntax). "+
		"The run commands (failover, failback, apply, resume, reseed) print a JSON-lines event stream with `-o json`, "+
		"one event per line, and one YAML document per event with `-o yaml`. "+
		"`drctl status -o json` carries `schema_version` (see status.md). ")
	var refused []string
	for name := range textOnly {
		refused = append(refused, "`"+name+"`")
	}
	slices.Sort(refused)
	fmt.Fprintf(w, "These refuse `-o json|yaml` (exit 2), their output being a log, a script or a screen: %s.\n\n", strings.Join(refused, ", "))
	h(2, "COMMANDS")
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Hidden || c.Name == "help" {
				continue
			}
			path := strings.TrimSpace(prefix + " " + c.Name)
			writeCommand(w, h, path, c, man)
			walk(path, c.Subcommands)
		}
	}
	walk("", app.Commands)
}

func writeCommand(w *bytes.Buffer, h func(int, string), path string, c *cli.Command, man bool) {
	h(3, "drctl "+path)
	fmt.Fprintf(w, "%s.\n\n", capitalize(strings.TrimSuffix(c.Usage, ".")))
	usage := "drctl " + path
	if len(c.Subcommands) > 0 {
		usage += " COMMAND"
	} else {
		usage += " [FLAGS]"
	}
	if c.ArgsUsage != "" {
		usage += " " + c.ArgsUsage
	}
	fmt.Fprintf(w, "`%s`\n\n", usage)
	desc, examples := splitExamples(c.Description)
	if desc != "" {
		fmt.Fprintf(w, "%s\n\n", strings.Join(strings.Fields(desc), " "))
	}
	if len(examples) > 0 {
		fmt.Fprintf(w, "Examples:\n\n")
		if man {
			for _, e := range examples {
				fmt.Fprintf(w, "    %s\n", e)
			}
			fmt.Fprintln(w)
		} else {
			fmt.Fprintf(w, "```sh\n%s\n```\n\n", strings.Join(examples, "\n"))
		}
	}
	var own []cli.Flag
	for _, f := range c.Flags {
		if f != outputFlag {
			own = append(own, f)
		}
	}
	if len(c.Subcommands) == 0 {
		if len(own) > 0 {
			fmt.Fprintf(w, "Flags:\n\n")
			writeFlags(w, own, man)
		}
		if why, ok := textOnly[path]; ok {
			fmt.Fprintf(w, "`-o json|yaml` is refused: %s.\n\n", why)
		}
	}
}

// splitExamples separates the examples from a description that ends with
// "Examples:" and one command per line.
func splitExamples(desc string) (string, []string) {
	before, after, ok := strings.Cut(desc, "Examples:")
	if !ok {
		return strings.TrimSpace(desc), nil
	}
	var ex []string
	for l := range strings.SplitSeq(after, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ex = append(ex, l)
		}
	}
	return strings.TrimSpace(before), ex
}

func writeFlags(w *bytes.Buffer, flags []cli.Flag, man bool) {
	if !man {
		fmt.Fprintf(w, "| flag | default | what it does |\n| --- | --- | --- |\n")
	}
	for _, f := range flags {
		names := f.Names()
		var spelled []string
		for _, n := range names {
			if len(n) == 1 {
				spelled = append(spelled, "-"+n)
			} else {
				spelled = append(spelled, "--"+n)
			}
		}
		flag := strings.Join(spelled, ", ")
		usage, def := "", ""
		if d, ok := f.(cli.DocGenerationFlag); ok {
			usage = d.GetUsage()
			if d.TakesValue() {
				flag += " VALUE"
				def = d.GetDefaultText()
				if def == "" {
					def = d.GetValue()
				}
			}
			if env := d.GetEnvVars(); len(env) > 0 {
				usage += " (env: $" + strings.Join(env, ", $") + ")"
			}
		}
		if def == `""` {
			def = ""
		}
		if man {
			if def != "" {
				usage += " (default: " + def + ")"
			}
			fmt.Fprintf(w, "- **%s**: %s\n", flag, usage)
			continue
		}
		fmt.Fprintf(w, "| `%s` | %s | %s |\n", flag, mdCell(def), mdCell(usage))
	}
	fmt.Fprintln(w)
}

func mdCell(s string) string {
	if s == "" {
		return ""
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
