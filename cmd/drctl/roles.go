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

// rolesCommand is drctl roles restore: the way back when the role state was
// deleted on both clusters after a failover (drctl refuses to act until
// then, rather than take the file's home roles for the live ones).
func rolesCommand() *cli.Command {
	return &cli.Command{
		Name:  "roles",
		Usage: "the live roles kept in the clusters",
		Subcommands: []*cli.Command{{
			Name:  "restore",
			Usage: "write the live roles back after the role state was lost on both clusters (you name the active)",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "active", Required: true, Usage: "the cluster the applications use now: it becomes the active, the other the standby"},
				&cli.BoolFlag{Name: "yes", Usage: "do not ask for confirmation (required without a terminal)"},
			},
			Action: func(c *cli.Context) error {
				topo, err := loadTopology(c)
				if err != nil {
					return err
				}
				active := c.String("active")
				if _, ok := topo.Clusters[active]; !ok {
					return withCode(exitBadInput, fmt.Errorf("no cluster %q in %s; use one of %v", active, topo.Path, topo.ClusterNames()))
				}
				cf := confirmOf(c)
				if err := cf.Require("roles restore writes the roles into both clusters and there is no terminal to confirm on: pass --yes"); err != nil {
					return err
				}
				if err := cf.Typed(c.App.Writer, fmt.Sprintf("This writes %s as the active into both clusters; the mirror then copies from it.\nType the name of the cluster %q to go on: ", active, active), active); err != nil {
					return err
				}
				ctx, cancel := context.WithTimeout(c.Context, time.Minute)
				defer cancel()
				clusters := kafkaconn.Open(ctx, topo)
				defer clusters.Close()
				st, err := failover.RestoreState(ctx, clusters, active)
				if errors.Is(err, failover.ErrNothingToRestore) {
					return withCode(exitFailure, err)
				}
				if err != nil {
					return err
				}
				return render(c, st, func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "restored: %s (both clusters); drctl status shows the roles, and drctl mirror run follows them\n", st)
					return err
				})
			},
		}},
	}
}
