package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/kafkaconn"
)

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:  "validate",
		Usage: "check the topology file (and, with --online, both clusters)",
		Description: "Offline, validate reads the topology file and checks its schema and consistency without contacting\n" +
			"any cluster. With --online it also connects to both clusters and checks reachability, authentication,\n" +
			"broker versions, the permissions drctl needs and which selected topics and groups exist. It changes nothing.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "online", Usage: "also check both clusters"},
			&cli.DurationFlag{Name: "timeout", Value: 20 * time.Second, Usage: "give up on the clusters after this long"},
		},
		Action: func(c *cli.Context) error {
			topo, err := loadTopology(c)
			if err != nil {
				return err
			}
			var v *inspect.Validation
			if c.Bool("online") {
				ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
				defer cancel()
				clusters := kafkaconn.Open(ctx, topo)
				defer clusters.Close()
				v = inspect.ValidateOnline(ctx, clusters)
			} else {
				v = inspect.ValidateOffline(topo)
			}
			if err := render(c, v, func(w io.Writer) error { return validationTable(w, v) }); err != nil {
				return err
			}
			switch {
			case v.Unreachable():
				return withCode(exitUnreachable, fmt.Errorf("%s: a cluster could not be reached; see the checks above", topo.Path))
			case v.Failed():
				return fmt.Errorf("%s: validation failed; see the checks above", topo.Path)
			}
			return nil
		},
	}
}

func validationTable(w io.Writer, v *inspect.Validation) error {
	t := newTable(w, col("cluster"), col("check"), col("result"), column{Name: "detail", Fit: fitWrap})
	for _, c := range v.Checks {
		t.Append(orDash(c.Cluster), c.Name, string(c.Result), c.Detail)
	}
	if err := t.Render(); err != nil {
		return err
	}
	if !v.Failed() {
		mode := "offline"
		if v.Online {
			mode = "online"
		}
		return writeWrapped(w, "  ", fmt.Sprintf("%s: topology %s is valid (%s checks)", v.File, v.Topology, mode))
	}
	return nil
}
