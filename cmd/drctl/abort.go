package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/internal/kafkaconn"
)

func abortCommand() *cli.Command {
	return &cli.Command{
		Name:      "abort",
		Usage:     "undo an interrupted run before its point of no return (the flip; a reseed's wipe)",
		ArgsUsage: "[RUN-ID]",
		Description: "abort puts the clusters back as the run found them: it removes the fence the run added, writes the\n" +
			"roles it started from (steady), and records who aborted it and why in the run record and the journal.\n" +
			"After the flip (a reseed: the wipe) it refuses and says to finish the run with drctl resume.\n" +
			"Stop any drctl still running the run first. Without a terminal it refuses unless --yes.\n\n" +
			"Examples:\n   drctl abort --reason \"drill called off\"\n   drctl abort failover-20261201T101500-8feb83 --yes -o json",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "yes", Usage: "do not ask for confirmation (required without a terminal)"},
			&cli.StringFlag{Name: "reason", Usage: "why the run is aborted (recorded with it)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return withCode(exitBadInput, errors.New("name at most one run: drctl abort [RUN-ID]"))
			}
			topo, err := loadTopology(c)
			if err != nil {
				return err
			}
			id := c.Args().First()
			cf := confirmOf(c)
			if err := cf.Require("abort changes the clusters and there is no terminal to confirm on: check drctl status and pass --yes"); err != nil {
				return err
			}
			if err := cf.YesNo(c.App.Writer, fmt.Sprintf("Abort run %s and restore the roles it started from?", orDash(id))); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(c.Context, 2*time.Minute)
			defer cancel()
			clusters := kafkaconn.Open(ctx, topo)
			defer clusters.Close()
			rep, err := failover.Abort(ctx, clusters, id, failover.AbortOptions{Reason: c.String("reason")})
			if err != nil {
				return abortError(err)
			}
			return render(c, rep, func(w io.Writer) error {
				if rep.Already {
					_, err := fmt.Fprintf(w, "run %s was already aborted by %s at %s (%s); nothing to do\n", rep.RunID, rep.Aborted.By, rep.Aborted.At.Format(time.RFC3339), rep.Aborted.Reason)
					return err
				}
				fmt.Fprintf(w, "run %s (%s) aborted at step %d: %s\n", rep.RunID, rep.Kind, rep.Aborted.Step+1, rep.Aborted.Reason)
				for _, u := range rep.Aborted.Undone {
					fmt.Fprintf(w, "  - %s\n", u)
				}
				return nil
			})
		},
	}
}

// abortError gives a refused abort its exit code. A plan edited after it
// was made is bad input (exit 2). A run past its point of no return, or no
// run in progress, is learnt from the clusters: the abort failed (exit 1),
// with nothing changed, and the message says what to do instead.
func abortError(err error) error {
	if errors.Is(err, failover.ErrPlanChanged) {
		return withCode(exitBadInput, err)
	}
	return withCode(exitFailure, err)
}
