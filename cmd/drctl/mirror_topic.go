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

// mirrorReseedTopicCommand resolves a topic recreated on the live active:
// the mirror keeps the old copy and stops copying into it until the
// operator chooses here.
func mirrorReseedTopicCommand() *cli.Command {
	return &cli.Command{
		Name:      "reseed-topic",
		Usage:     "choose what happens to the copy of a topic recreated on the active, and mirror the new one",
		ArgsUsage: "TOPIC",
		Description: "When a mirrored topic is deleted and created again on the active (a new topic id), the mirror\n" +
			"keeps the standby's copy of the old incarnation and copies nothing into it. reseed-topic resolves it:\n" +
			"--salvage first copies the old copy's records, unchanged, into TOPIC<salvage suffix> on the standby;\n" +
			"then (with either flag) the old copy and its progress are deleted and the running mirror copies the\n" +
			"new incarnation from its earliest offset. It refuses a topic that was not recreated.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "salvage", Usage: "keep the old copy's records in a quarantine topic on the standby first"},
			&cli.BoolFlag{Name: "drop", Usage: "delete the old copy without keeping its records"},
			&cli.BoolFlag{Name: "yes", Usage: "do not ask for confirmation (required without a terminal)"},
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Minute, Usage: "give up after this long"},
		},
		Action: mirrorReseedTopic,
	}
}

func mirrorReseedTopic(c *cli.Context) error {
	topo, err := loadTopology(c)
	if err != nil {
		return err
	}
	if c.NArg() != 1 {
		return withCode(exitBadInput, errors.New("name one topic: drctl mirror reseed-topic TOPIC --salvage|--drop"))
	}
	topic := c.Args().First()
	if c.Bool("salvage") == c.Bool("drop") {
		return withCode(exitBadInput, errors.New("choose one of --salvage (keep the old copy's records in a quarantine topic) or --drop (delete them)"))
	}
	if !topo.Mirrors(topic) {
		return withCode(exitBadInput, fmt.Errorf("topic %s is not mirrored (mirror.topics in %s): nothing to reseed", topic, topo.Path))
	}
	cf := confirmOf(c)
	if err := cf.Require("reseed-topic deletes the standby's copy of a topic: run it on a terminal to confirm, or pass --yes"); err != nil {
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
	what := "delete"
	if c.Bool("salvage") {
		what = "salvage into " + topo.SalvageTopic(topic) + ", then delete"
	}
	if err := cf.YesNo(c.App.Writer, fmt.Sprintf("%s the copy of %s on %s and mirror the new %s from %s?", what, topic, link.Target, topic, link.Source)); err != nil {
		return err
	}
	res, err := linkstate.ReseedTopic(ctx, clusters, link, topic, c.Bool("salvage"))
	if errors.Is(err, linkstate.ErrNotRecreated) {
		return withCode(exitBadInput, err)
	}
	if err != nil {
		return err
	}
	return render(c, res, func(w io.Writer) error {
		if res.SalvageTopic != "" {
			fmt.Fprintf(w, "salvaged %d records of the old %s into %s on %s\n", res.Salvaged, topic, res.SalvageTopic, link.Target)
		}
		fmt.Fprintf(w, "dropped the old copy of %s on %s; the mirror now copies %s (topic id %s) from its earliest offset\n", topic, link.Target, topic, res.NewID)
		return nil
	})
}
