package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// drillArgs returns the positional arguments of a drill command, applying
// the flags written after them ("drctl drill report ID --format html"):
// urfave/cli stops parsing flags at the first positional argument.
func drillArgs(c *cli.Context) ([]string, error) {
	args := c.Args().Slice()
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if isBoolFlag(c, name) {
			if !hasVal {
				val = "true"
			}
		} else if !hasVal {
			if i+1 >= len(args) {
				return nil, withCode(exitBadInput, fmt.Errorf("flag %s needs a value (see drctl help)", a))
			}
			i++
			val = args[i]
		}
		if err := setFlag(c, name, val); err != nil {
			return nil, withCode(exitBadInput, fmt.Errorf("flag %s: %w (see drctl help)", a, err))
		}
	}
	return pos, nil
}

func isBoolFlag(c *cli.Context, name string) bool {
	for _, cc := range c.Lineage() {
		if cc.Command == nil {
			continue
		}
		for _, f := range cc.Command.Flags {
			if _, ok := f.(*cli.BoolFlag); ok {
				if slices.Contains(f.Names(), name) {
					return true
				}
			}
		}
	}
	return false
}

// setFlag sets name on the innermost context that defines it.
func setFlag(c *cli.Context, name, val string) error {
	var err error
	for _, cc := range c.Lineage() {
		if err = cc.Set(name, val); err == nil {
			return nil
		}
	}
	return fmt.Errorf("not a flag of this command")
}
