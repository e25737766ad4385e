package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/urfave/cli/v2"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/mirror/groupsync"
	"github.com/drctl/drctl/offsettranslate"
	"github.com/drctl/drctl/topology"
)

func offsetsCommand() *cli.Command {
	groupFlag := &cli.StringSliceFlag{Name: "group", Aliases: []string{"g"}, Usage: "consumer group (repeat for several; default: every selected group)"}
	snapshotFlag := &cli.BoolFlag{Name: "from-snapshot", Usage: "take the source positions from the standby's snapshot (for when the active cluster is gone)"}
	timeoutFlag := &cli.DurationFlag{Name: "timeout", Value: 60 * time.Second, Usage: "give up after this long"}
	return &cli.Command{
		Name:  "offsets",
		Usage: "translate consumer-group positions to the standby, and commit them there",
		Subcommands: commands(
			&cli.Command{
				Name:  "translate",
				Usage: "each group's source offsets and their exact target offsets",
				Description: "translate reads the committed offsets of consumer groups on the live active cluster and\n" +
					"translates each through the mirror's offset map into the target offset where a consumer reads next\n" +
					"the very record the group would read next on the source. Per partition it shows the source\n" +
					"committed offset, the target offset, the target's end, the group's offset on the standby now, and\n" +
					"the status (exact, clamped-to-end, before-start, unmapped; see docs/offsets.md). It changes nothing.",
				Flags:  []cli.Flag{groupFlag, snapshotFlag, timeoutFlag},
				Action: offsetsTranslate,
			},
			&cli.Command{
				Name:  "sync",
				Usage: "commit translated offsets on the standby, once",
				Description: "sync translates the groups' positions as translate does and commits them on the live standby,\n" +
					"printing each change (before -> after). A group that has members on the standby is never changed:\n" +
					"it is reported and the command exits 1. On a terminal sync shows the changes and asks before it\n" +
					"commits; without one it refuses unless --yes is given. `drctl mirror run` does the same every\n" +
					"mirror.group_sync_interval.",
				Flags: []cli.Flag{groupFlag, snapshotFlag, timeoutFlag,
					&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "commit without asking"}},
				Action: offsetsSync,
			},
		),
	}
}

// checkGroups refuses group names that drctl never touches: its own
// groups always, and, for a sync, the groups mirror.groups does not select.
func checkGroups(topo *topology.Topology, groups []string, sync bool) error {
	for _, g := range groups {
		switch {
		case g == "":
			return withCode(exitBadInput, errors.New("--group needs a name"))
		case topology.OwnsGroup(g):
			return withCode(exitBadInput, fmt.Errorf("group %s is drctl's own (its name starts with %s); it is never translated", g, topology.InternalPrefix))
		case sync && !topo.SyncsGroup(g):
			return withCode(exitBadInput, fmt.Errorf("group %s is not selected by mirror.groups in %s; add it to mirror.groups.include (or remove it from exclude) to sync it", g, topo.Path))
		}
	}
	return nil
}

// translateCmd resolves the live link and translates the flags' groups.
func translateCmd(ctx context.Context, c *cli.Context, clusters *kafkaconn.Clusters) (*groupsync.TranslationReport, topology.Link, error) {
	link, err := liveLink(ctx, clusters)
	if err != nil {
		return nil, link, err
	}
	rep, err := groupsync.Translate(ctx, clusters, link, groupsync.TranslateOptions{Groups: c.StringSlice("group"), FromSnapshot: c.Bool("from-snapshot")})
	switch {
	case err == nil:
		return rep, link, nil
	case errors.Is(err, kafkaconn.ErrUnreachable):
		hint := ""
		if !c.Bool("from-snapshot") {
			hint = "; if the active cluster is gone, --from-snapshot translates the last positions the mirror saw"
		}
		return nil, link, withCode(exitUnreachable, fmt.Errorf("%w%s", err, hint))
	case errors.Is(err, sarama.ErrUnknownTopicOrPartition):
		return nil, link, fmt.Errorf("%w: has drctl mirror run ever run for %s?", err, link)
	}
	return nil, link, err
}

func offsetsTranslate(c *cli.Context) error {
	topo, err := loadTopology(c)
	if err != nil {
		return err
	}
	if err := checkGroups(topo, c.StringSlice("group"), false); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	clusters := kafkaconn.Open(ctx, topo)
	defer clusters.Close()
	rep, _, err := translateCmd(ctx, c, clusters)
	if err != nil {
		return err
	}
	if err := render(c, rep, func(w io.Writer) error { return translationTables(w, rep) }); err != nil {
		return err
	}
	var failed []string
	for _, g := range rep.Groups {
		if g.Error != "" {
			failed = append(failed, g.Group)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("could not translate %s; see the errors above", strings.Join(failed, ", "))
	}
	return nil
}

func translationTables(w io.Writer, rep *groupsync.TranslationReport) error {
	fmt.Fprintf(w, "link %s, translated at %s\n", rep.Link, rep.TranslatedAt.Format(time.RFC3339))
	if len(rep.Groups) == 0 {
		fmt.Fprintf(w, "no selected group has committed offsets on %s\n", rep.Source)
	}
	statuses := map[offsettranslate.Status]bool{}
	for _, g := range rep.Groups {
		from := "read from " + rep.Source
		if g.FromSnapshot {
			from = "from the snapshot on " + rep.Target
		}
		fmt.Fprintln(w)
		_ = writeWrapped(w, "  ", fmt.Sprintf("GROUP %s (positions %s at %s; on %s: %s)", g.Group, from, g.ObservedAt.Format(time.RFC3339), rep.Target, standbyState(g.Standby)))
		if g.Error != "" {
			fmt.Fprintf(w, "error: %s\n", g.Error)
			continue
		}
		if len(g.Partitions) == 0 {
			fmt.Fprintf(w, "no committed offsets on mirrored topics\n")
		} else {
			t := newTable(w, col("topic"), col("partition"), col("source"), col("target"), column{Name: "target end", Drop: 1},
				column{Name: "standby committed", Drop: 2}, col("status"), column{Name: "exact", Drop: 3})
			for _, p := range g.Partitions {
				statuses[p.Status] = true
				t.Append(p.Topic, fmt.Sprint(p.Partition), fmt.Sprint(p.SourceCommitted), offset(p.Target), offset(p.TargetEnd),
					offset(p.StandbyCommitted), p.Status.String(), yesNo(p.Exact))
			}
			if err := t.Render(); err != nil {
				return err
			}
		}
		if len(g.Unmirrored) > 0 {
			fmt.Fprintf(w, "not mirrored, not translated: %s\n", strings.Join(g.Unmirrored, ", "))
		}
	}
	if len(statuses) > 0 {
		fmt.Fprintln(w)
		for _, line := range translationFooter(rep.Source, rep.Target, statuses) {
			_ = writeWrapped(w, "  ", line)
		}
	}
	if len(rep.Problems) > 0 {
		section(w, "PROBLEMS")
		for _, p := range rep.Problems {
			_ = writeWrapped(w, "  ", "- "+p)
		}
	}
	return nil
}

// translationFooter explains the translation table's columns, and each
// status that appears in it.
func translationFooter(source, target string, statuses map[offsettranslate.Status]bool) []string {
	lines := []string{
		fmt.Sprintf("SOURCE: the group's committed offset on %s, the next record it reads there.", source),
		fmt.Sprintf("TARGET: where that record is on %s: the position a failover gives the group (drctl offsets sync commits it now). TARGET END: the end of the partition on %s.", target, target),
		fmt.Sprintf("STANDBY COMMITTED: the group's committed offset on %s now (-: none).", target),
	}
	why := map[offsettranslate.Status]string{
		offsettranslate.Exact:        "exact: TARGET is the copy of the record at SOURCE.",
		offsettranslate.ClampedToEnd: fmt.Sprintf("clamped-to-end: the group has read everything mirrored so far; TARGET is the end of what %s holds, and still exact (EXACT yes) unless the group is ahead of the mirror.", target),
		offsettranslate.BeforeStart:  "before-start: SOURCE is before the first record the offset map covers (mirrored later, or removed by retention); TARGET is the first record it covers.",
		offsettranslate.Unmapped:     "unmapped: nothing of the partition was mirrored yet, so there is no TARGET.",
	}
	for _, s := range []offsettranslate.Status{offsettranslate.Exact, offsettranslate.ClampedToEnd, offsettranslate.BeforeStart, offsettranslate.Unmapped} {
		if statuses[s] {
			lines = append(lines, why[s])
		}
	}
	return lines
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func standbyState(s groupsync.StandbyGroup) string {
	if !s.Exists {
		return "absent"
	}
	return fmt.Sprintf("%s, %d members", s.State, s.Members)
}

func offset(o int64) string {
	if o < 0 {
		return "-"
	}
	return fmt.Sprint(o)
}

func offsetsSync(c *cli.Context) error {
	topo, err := loadTopology(c)
	if err != nil {
		return err
	}
	if err := checkGroups(topo, c.StringSlice("group"), true); err != nil {
		return err
	}
	cf := confirmOf(c)
	if err := cf.Require("offsets sync changes committed offsets on the standby: run it on a terminal to confirm, or pass --yes"); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	clusters := kafkaconn.Open(ctx, topo)
	defer clusters.Close()
	rep, link, err := translateCmd(ctx, c, clusters)
	if err != nil {
		return err
	}
	plan := groupsync.Decide(rep)
	if n := plan.Changes(); n > 0 && !cf.Given() {
		out := c.App.Writer
		if !humanOutput(c) {
			out = c.App.ErrWriter // keep stdout for the JSON or YAML result
		}
		if err := syncTable(out, plan, false); err != nil {
			return err
		}
		if err := cf.YesNo(out, fmt.Sprintf("Commit %s on %s?", plural(n, "offset"), plan.Target)); err != nil {
			return err
		}
	}
	result := plan
	if plan.Changes() > 0 {
		// Apply gets its own time: the question may have waited long.
		actx, acancel := context.WithTimeout(c.Context, c.Duration("timeout"))
		defer acancel()
		if result, err = groupsync.Apply(actx, clusters, link, plan); err != nil {
			if errors.Is(err, kafkaconn.ErrUnreachable) {
				return withCode(exitUnreachable, fmt.Errorf("%w; nothing was committed", err))
			}
			return fmt.Errorf("%w; nothing was committed", err)
		}
	}
	if err := render(c, result, func(w io.Writer) error { return syncTable(w, result, true) }); err != nil {
		return err
	}
	if bad := result.NotSynced(); len(bad) > 0 {
		var msgs []string
		for _, g := range bad {
			msgs = append(msgs, fmt.Sprintf("%s (%s): %s", g.Group, g.Action, g.Reason))
		}
		return fmt.Errorf("%d of %d groups not synced on %s:\n  %s",
			len(bad), len(result.Groups), result.Target, strings.Join(msgs, "\n  "))
	}
	return nil
}

// syncTable prints a plan (done false: what it would change) or its
// result, one row per change.
func syncTable(w io.Writer, p *groupsync.Sync, done bool) error {
	verb := "changes"
	if done {
		verb = "result"
	}
	fmt.Fprintf(w, "link %s: group sync %s on %s\n", p.Link, verb, p.Target)
	if len(p.Groups) == 0 {
		fmt.Fprintf(w, "no selected group has committed offsets on %s\n", p.Source)
		return nil
	}
	t := newTable(w, col("group"), col("action"), col("topic"), col("partition"), col("before"), col("after"), column{Name: "status", Fit: fitWrap})
	for _, g := range p.Groups {
		action := string(g.Action)
		if g.Action == groupsync.SyncCommit {
			action = "will commit"
			if done {
				action = "committed"
			}
		}
		if len(g.Changes) == 0 || g.Action != groupsync.SyncCommit {
			note := "-"
			switch g.Action {
			case groupsync.SyncSkippedActive:
				note = "members on the standby: not changed"
			case groupsync.SyncStale:
				note = "moved since the plan: not changed"
			case groupsync.SyncFailed:
				note = "failed (see below)"
			case groupsync.SyncInSync:
				note = fmt.Sprintf("%d partitions already there", g.Unchanged)
			}
			t.Append(g.Group, action, "-", "-", "-", "-", note)
			continue
		}
		for _, ch := range g.Changes {
			status := ch.Status.String()
			if !ch.Exact {
				status += " (not exact)"
			}
			t.Append(g.Group, action, ch.Topic, fmt.Sprint(ch.Partition), offset(ch.Before), fmt.Sprint(ch.After), status)
		}
	}
	return t.Render()
}
