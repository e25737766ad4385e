package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/linkstate"
)

// mirrorReshardCommand changes the shard count of the live link while no
// mirror process of it runs (linkstate.Reshard).
func mirrorReshardCommand() *cli.Command {
	return &cli.Command{
		Name:  "reshard",
		Usage: "change the shard count of the live link, with its mirror processes stopped",
		Description: "reshard changes how many shards the live link (the live active to the live standby) copies in.\n" +
			"Each shard copies its partitions in transactions of its own under its own transactional id: more\n" +
			"shards spread a large link over more processes, fewer shards mean fewer, larger transactions and a\n" +
			"lower latency at modest rates (docs/mirror.md, \"Shards and scale-out\"). Stop every drctl mirror run of\n" +
			"the link first: reshard refuses while the link's worker group has members. It records the new count\n" +
			"on the standby, then fences every transactional id the link used, so no process of the old count can\n" +
			"write again; then start drctl mirror run without --shards. Every partition resumes exactly where its\n" +
			"old shard committed: no record is copied twice or skipped.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "shards", Required: true, Usage: fmt.Sprintf("the new shard count (1 to %d)", maxShards)},
			&cli.BoolFlag{Name: "yes", Usage: "do not ask for confirmation (required without a terminal)"},
			&cli.DurationFlag{Name: "timeout", Value: 2 * time.Minute, Usage: "give up after this long"},
		},
		Action: mirrorReshard,
	}
}

func mirrorReshard(c *cli.Context) error {
	n := c.Int("shards")
	if n < 1 || n > maxShards {
		return withCode(exitBadInput, fmt.Errorf("--shards %d: use 1 to %d", n, maxShards))
	}
	topo, err := loadTopology(c)
	if err != nil {
		return err
	}
	cf := confirmOf(c)
	if err := cf.Require("reshard fences the link's transactional ids on the standby: run it on a terminal to confirm, or pass --yes"); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	clusters := kafkaconn.Open(ctx, topo)
	defer clusters.Close()
	link, err := liveLink(ctx, clusters)
	if err != nil {
		return err
	}
	if err := cf.YesNo(c.App.Writer, fmt.Sprintf("reshard the link %s to %d shards (every mirror process of it stopped)?", link, n)); err != nil {
		return err
	}
	res, err := linkstate.Reshard(ctx, clusters, link, int32(n))
	switch {
	case errors.Is(err, linkstate.ErrLinkRunning), errors.Is(err, linkstate.ErrNeverRan):
		return withCode(exitBadInput, err)
	case err != nil:
		return err
	}
	return render(c, res, func(w io.Writer) error {
		switch {
		case res.From == res.To && res.Fenced == 0:
			fmt.Fprintf(w, "link %s already has %d shards and its mirror runs with them: nothing changed\n", link, res.To)
			return nil
		case res.From == res.To:
			fmt.Fprintf(w, "link %s already has %d shards; fenced its %d transactional ids again on %s (completing an interrupted reshard, if any)\n",
				link, res.To, res.Fenced, link.Target)
			return nil
		}
		fmt.Fprintf(w, "link %s: %d shards -> %d; fenced %d transactional ids on %s\n", link, res.From, res.To, res.Fenced, link.Target)
		fmt.Fprintf(w, "start drctl mirror run without --shards (or with --shards %d): every partition resumes where it was committed\n", res.To)
		return nil
	})
}
