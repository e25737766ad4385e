package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

// mirrorAckLostCommand removes recorded losses to source retention from
// the live link's state once an operator has dealt with them.
func mirrorAckLostCommand() *cli.Command {
	return &cli.Command{
		Name:      "ack-lost",
		Usage:     "acknowledge records lost to source retention before they were mirrored",
		ArgsUsage: "[TOPIC/PARTITION...]",
		Description: "Records that the active removed (retention, DeleteRecords) before the mirror copied them are\n" +
			"recorded in the live link's state on the standby (topic, partition, offsets, when) and shown by\n" +
			"drctl mirror lag, drctl status and drill reports until they are acknowledged. ack-lost removes\n" +
			"the records of the partitions named (all of them without an argument); the data is not touched.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "yes", Usage: "do not ask for confirmation (required without a terminal)"},
			&cli.DurationFlag{Name: "timeout", Value: time.Minute, Usage: "give up after this long"},
		},
		Action: mirrorAckLost,
	}
}

// AckLostResult is what ack-lost removed.
type AckLostResult struct {
	Link         string                `json:"link" yaml:"link"`
	Acknowledged []linkstate.LostRange `json:"acknowledged" yaml:"acknowledged"`
	Records      int64                 `json:"records" yaml:"records"`
}

func mirrorAckLost(c *cli.Context) error {
	topo, err := loadTopology(c)
	if err != nil {
		return err
	}
	var which []topology.TopicPartition
	for _, arg := range c.Args().Slice() {
		tp, err := parsePartitionArg(arg)
		if err != nil {
			return withCode(exitBadInput, err)
		}
		which = append(which, tp)
	}
	cf := confirmOf(c)
	if err := cf.Require("ack-lost removes recorded losses from the link's state: run it on a terminal to confirm, or pass --yes"); err != nil {
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
	dst, err := clusters.Need(link.Target)
	if err != nil {
		return withCode(exitUnreachable, err)
	}
	losses, err := linkstate.ReadLost(ctx, dst, link)
	if err != nil {
		return withCode(exitUnreachable, fmt.Errorf("read the losses of %s on %s: %w", link, link.Target, err))
	}
	picked, unmatched := linkstate.SelectLost(losses, which)
	if len(unmatched) > 0 {
		names := make([]string, len(unmatched))
		for i, tp := range unmatched {
			names[i] = tp.String()
		}
		return withCode(exitBadInput, fmt.Errorf("link %s has no recorded loss on %s: drctl mirror lag lists the recorded losses; nothing was acknowledged",
			link, strings.Join(names, ", ")))
	}
	res := AckLostResult{Link: link.String(), Acknowledged: []linkstate.LostRange{}}
	if len(picked) > 0 {
		lines := make([]string, len(picked))
		for i, r := range picked {
			lines[i] = "  " + r.String() + ", found " + r.At.Format(time.RFC3339)
		}
		q := fmt.Sprintf("acknowledge %d record(s) in %d range(s) lost on %s before they were mirrored to %s?\n%s\n",
			linkstate.TotalLost(picked), len(picked), link.Source, link.Target, strings.Join(lines, "\n"))
		if err := cf.YesNo(c.App.Writer, q); err != nil {
			return err
		}
		n, err := linkstate.AckLost(ctx, dst, link, picked)
		res.Acknowledged = picked[:n]
		res.Records = linkstate.TotalLost(res.Acknowledged)
		if err != nil {
			return fmt.Errorf("%w (%d of %d range(s) acknowledged; run it again for the rest)", err, n, len(picked))
		}
	}
	return render(c, res, func(w io.Writer) error {
		if len(res.Acknowledged) == 0 {
			fmt.Fprintf(w, "link %s has no recorded loss to acknowledge\n", link)
			return nil
		}
		fmt.Fprintf(w, "acknowledged %d record(s) in %d range(s) lost on %s:\n", res.Records, len(res.Acknowledged), link.Source)
		for _, r := range res.Acknowledged {
			fmt.Fprintf(w, "  %s\n", r)
		}
		return nil
	})
}

// parsePartitionArg reads "TOPIC/PARTITION" (a topic name may itself hold
// a slash: the partition follows the last one).
func parsePartitionArg(arg string) (topology.TopicPartition, error) {
	i := strings.LastIndexByte(arg, '/')
	if i <= 0 {
		return topology.TopicPartition{}, fmt.Errorf("%q: name a partition as TOPIC/PARTITION, e.g. orders/3", arg)
	}
	p, err := strconv.ParseInt(arg[i+1:], 10, 32)
	if err != nil || p < 0 {
		return topology.TopicPartition{}, fmt.Errorf("%q: the partition after the last / must be a number, e.g. orders/3", arg)
	}
	return topology.TopicPartition{Topic: arg[:i], Partition: int32(p)}, nil
}
