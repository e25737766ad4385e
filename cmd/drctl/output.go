package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"
)

// render writes v as JSON or YAML when -o asks for it, and otherwise calls
// table to print the human form.
func render(c *cli.Context, v any, table func(io.Writer) error) error {
	w := c.App.Writer
	switch outputFormat(c) {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		enc := yaml.NewEncoder(w)
		enc.SetIndent(2)
		if err := enc.Encode(v); err != nil {
			return err
		}
		return enc.Close()
	}
	return table(w)
}

// outputFlag lets -o follow the command as well as precede it.
var outputFlag = &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "output format: table, json or yaml"}

// outputFormat is the innermost -o given, or "table".
func outputFormat(c *cli.Context) string {
	for _, cc := range c.Lineage() {
		if v := cc.String("output"); v != "" {
			return v
		}
	}
	return "table"
}

func checkOutputFormat(c *cli.Context) error {
	switch outputFormat(c) {
	case "table", "json", "yaml":
		return nil
	}
	return withCode(exitBadInput, fmt.Errorf("-o %q is not a format; use table, json or yaml", outputFormat(c)))
}

// badUsage makes flag errors bad input (exit 2) and prints no help page.
func badUsage(_ *cli.Context, err error, _ bool) error {
	return withCode(exitBadInput, fmt.Errorf("%w (see drctl help)", err))
}

// newTable starts a table with the given header.
func newTable(w io.Writer, header ...any) *tablewriter.Table {
	t := tablewriter.NewTable(w)
	t.Header(header...)
	return t
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
