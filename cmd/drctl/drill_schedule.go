package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

func drillScheduleCommand() *cli.Command {
	return &cli.Command{
		Name:  "schedule",
		Usage: "run the topology's scheduled drills (long-running)",
		Action: func(c *cli.Context) error {
			return errors.New("not implemented yet")
		},
	}
}
