package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/topology"
	"github.com/drctl/drctl/verify"
)

func verifyCommand() *cli.Command {
	return &cli.Command{
		Name:  "verify",
		Usage: "prove the standby identical to the active, record by record, through the offset map",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "link", Usage: "verify the link SOURCE->TARGET (quoted in a shell: 'east->west'), also one the roles left after a failover (default: the live link)"},
			&cli.StringFlag{Name: "topic", Usage: "verify only this mirrored topic"},
			&cli.IntFlag{Name: "partition", Value: -1, Usage: "verify only this partition of --topic"},
			&cli.DurationFlag{Name: "since", Usage: "start each partition at its first source record this recent (e.g. 1h)"},
			&cli.Int64Flag{Name: "from-offset", Value: -1, Usage: "start each partition at this source offset"},
			&cli.IntFlag{Name: "sample", Usage: "compare every Nth record only, fetching only the batches that hold them: a quick look that proves nothing (default: every record)"},
			&cli.IntFlag{Name: "details", Value: 10, Usage: "differences shown in detail per partition (the others are counted)"},
			&cli.IntFlag{Name: "parallel", Value: 4, Usage: "partitions verified at once"},
			&cli.DurationFlag{Name: "timeout", Value: time.Hour, Usage: "give up after this long"},
		},
		Action: verifyAction,
	}
}

// verifyOptions reads and checks the flags; it contacts nothing.
func verifyOptions(c *cli.Context) (verify.Options, error) {
	opts := verify.DefaultOptions()
	opts.Topic, opts.Partition = c.String("topic"), int32(c.Int("partition"))
	opts.Since, opts.FromOffset = c.Duration("since"), c.Int64("from-offset")
	opts.Sample, opts.Details, opts.Parallel = c.Int("sample"), c.Int("details"), c.Int("parallel")
	bad := func(format string, a ...any) error { return withCode(exitBadInput, fmt.Errorf(format, a...)) }
	switch {
	case c.IsSet("partition") && opts.Topic == "":
		return opts, bad("--partition needs --topic: a partition number names a partition of one topic")
	case c.IsSet("partition") && opts.Partition < 0:
		return opts, bad("--partition %d: partitions are numbered from 0", opts.Partition)
	case c.IsSet("since") && c.IsSet("from-offset"):
		return opts, bad("--since and --from-offset both say where to start: give one of them")
	case c.IsSet("since") && opts.Since <= 0:
		return opts, bad("--since %s: give a positive duration, such as 1h", opts.Since)
	case c.IsSet("from-offset") && opts.FromOffset < 0:
		return opts, bad("--from-offset %d: offsets start at 0", opts.FromOffset)
	case opts.Sample < 0:
		return opts, bad("--sample %d: give N >= 1 to compare every Nth record (1: every record)", opts.Sample)
	case opts.Details < 0:
		return opts, bad("--details %d: give 0 or more", opts.Details)
	case opts.Parallel < 1:
		return opts, bad("--parallel %d: give 1 or more", opts.Parallel)
	}
	return opts, nil
}

func verifyAction(c *cli.Context) error {
	opts, err := verifyOptions(c)
	if err != nil {
		return err
	}
	topo, err := loadTopology(c)
	if err != nil {
		return err
	}
	if opts.Topic != "" && !topo.Mirrors(opts.Topic) {
		return withCode(exitBadInput, fmt.Errorf("topic %s is not mirrored: mirror.topics in %s does not select it", opts.Topic, topo.Path))
	}
	var named *topology.Link
	if c.IsSet("link") {
		l, err := parseLink(topo, c.String("link"))
		if err != nil {
			return withCode(exitBadInput, err)
		}
		named = &l
	}
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	clusters := kafkaconn.Open(ctx, topo)
	defer clusters.Close()
	roles, err := rolestate.ResolveLive(ctx, clusters)
	if err != nil {
		return withCode(exitUnreachable, fmt.Errorf("cannot read the live roles: %w", err))
	}
	if roles.Lost != "" {
		return withCode(exitFailure, fmt.Errorf("the live roles are unknown, so which cluster takes writes is too: %s", roles.Lost))
	}
	link, note := verifyLink(topo, named, roles.Current)
	opts.Retired = link.Target == roles.Current.Active
	s := streams(c)
	if s.IsTerminal && humanOutput(c) {
		opts.Progress = func(p verify.Progress) {
			fmt.Fprintf(s.Err, "\rverify %s: %d of %d partitions, %s records compared", link, p.Done, p.Partitions, grouped(p.Compared))
			if p.Done == p.Partitions {
				fmt.Fprintln(s.Err)
			}
		}
	}
	rep, err := verify.Run(ctx, clusters, link, opts)
	if rep != nil {
		rep.Note = note
	}
	switch {
	case errors.Is(err, kafkaconn.ErrUnreachable):
		return withCode(exitUnreachable, err)
	case errors.Is(err, verify.ErrNoSuchPartition):
		return withCode(exitBadInput, err)
	case err != nil:
		return fmt.Errorf("verify %s: %w", link, err)
	}
	if err := render(c, rep, func(w io.Writer) error { return verifyText(w, rep) }); err != nil {
		return err
	}
	sum := rep.Summary
	switch {
	case sum.Differing > 0:
		return withCode(exitDiffers, fmt.Errorf("%s differs from %s on %d of %d partitions (%s differences)", rep.Target, rep.Source, sum.Differing, sum.Partitions, grouped(sum.Differences)))
	case sum.NotVerified > 0:
		return withCode(exitDiffers, fmt.Errorf("%d of %d partitions not verified; see the reasons above", sum.NotVerified, sum.Partitions))
	}
	return nil
}

// parseLink reads --link: SOURCE->TARGET, two clusters of topo. It
// contacts nothing.
func parseLink(topo *topology.Topology, s string) (topology.Link, error) {
	source, target, ok := strings.Cut(s, "->")
	switch {
	case !ok && strings.HasSuffix(s, "-"):
		return topology.Link{}, fmt.Errorf("--link %q: the shell took the '>' of '->' for a redirection (and may have written a file named after the target); quote the link: --link '%s>TARGET'", s, s)
	case !ok || source == "" || target == "":
		return topology.Link{}, fmt.Errorf("--link %q: give SOURCE->TARGET, two clusters of %s (%s), quoted in a shell: --link '%s->%s'",
			s, topo.Path, strings.Join(topo.ClusterNames(), ", "), topo.Active, topo.Standby)
	}
	for _, c := range []string{source, target} {
		if _, known := topo.Clusters[c]; !known {
			return topology.Link{}, fmt.Errorf("--link %s: %s is no cluster of %s (its clusters: %s)", s, c, topo.Path, strings.Join(topo.ClusterNames(), ", "))
		}
	}
	if source == target {
		return topology.Link{}, fmt.Errorf("--link %s: a link copies from one cluster to the other; give two clusters", s)
	}
	return topo.Link(source, target), nil
}

// verifyLink decides which link drctl verify checks, and says why when it
// is not the live one: the link named, or the live link (live active ->
// live standby), or, after a failover or failback flipped the roles and
// while the old active awaits its wipe (phase wiping: no mirror runs into
// it, the live link has copied nothing), the link before the flip, whose
// offset map and copies are on the new active. Once the old active is
// wiped, its records are gone and the live link is the one to verify.
func verifyLink(topo *topology.Topology, named *topology.Link, live rolestate.State) (topology.Link, string) {
	if named != nil {
		if named.Target == live.Active {
			return *named, fmt.Sprintf("%s is the active cluster (epoch %d): the link %s does not run, and %s takes writes of its own; its records are compared up to the link's last copy",
				live.Active, live.Epoch, named, live.Active)
		}
		return *named, ""
	}
	if r := live.Run; live.Phase == rolestate.PhaseWiping && r != nil && (r.Kind == rolestate.RunFailover || r.Kind == rolestate.RunFailback) {
		old := topo.Link(live.Standby, live.Active)
		return old, fmt.Sprintf("the %s run %s made %s the active cluster (epoch %d); %s, the old active, awaits its wipe and no mirror runs into it. Verified: the link before the flip, %s, up to its last copy on %s (drctl verify --link '%s->%s' names the live link)",
			r.Kind, r.ID, live.Active, live.Epoch, live.Standby, old, live.Active, live.Active, live.Standby)
	}
	return topo.Link(live.Active, live.Standby), ""
}

func verifyText(w io.Writer, rep *verify.Report) error {
	mode := "every committed record"
	if rep.Sample > 1 {
		mode = fmt.Sprintf("sampled: every %d records, proves nothing", rep.Sample)
	}
	fmt.Fprintf(w, "verify %s -> %s (%s)\n", rep.Source, rep.Target, mode)
	if rep.Note != "" {
		_ = writeWrapped(w, "  ", "note: "+rep.Note)
	}
	for _, p := range rep.Partitions {
		tp := fmt.Sprintf("%s/%d", p.Topic, p.Partition)
		counts := fmt.Sprintf("%s of %s records compared", grouped(p.Compared), grouped(p.SourceRecords))
		switch p.Status {
		case verify.Identical:
			_ = writeWrapped(w, "    ", fmt.Sprintf("%s %s %s = %s %s: identical, %s", rep.Source, tp, span(p.SourceFrom, p.ProvenSourceTo), rep.Target, span(p.TargetFrom, p.ProvenTargetTo), counts))
		case verify.NoDifferenceSeen:
			_ = writeWrapped(w, "    ", fmt.Sprintf("%s %s %s, %s %s: no difference seen, %s", rep.Source, tp, span(p.SourceFrom, p.SourceTo), rep.Target, span(p.TargetFrom, p.TargetTo), counts))
		case verify.Differs:
			proven := "nothing proven"
			if p.ProvenSourceTo > p.SourceFrom || p.ProvenTargetTo > p.TargetFrom {
				proven = fmt.Sprintf("proven %s = %s %s", span(p.SourceFrom, p.ProvenSourceTo), rep.Target, span(p.TargetFrom, p.ProvenTargetTo))
			} else if p.ProvenSourceTo < 0 {
				proven = "sampled"
			}
			_ = writeWrapped(w, "    ", fmt.Sprintf("%s %s %s: DIFFERS, %s (%s); %s; %s", rep.Source, tp, span(p.SourceFrom, p.SourceTo),
				plural(int(p.Differences), "difference"), kinds(p.ByKind), proven, counts))
		default:
			_ = writeWrapped(w, "    ", fmt.Sprintf("%s %s: not verified: %s", rep.Source, tp, p.Reason))
			continue
		}
		if rep.Retired && p.SourceEnd > p.SourceTo {
			_ = writeWrapped(w, "    ", fmt.Sprintf("  %s's offsets %s were never copied by this link: they are not on %s (the failover's RPO; a reseed salvages them before the wipe)",
				rep.Source, span(p.SourceTo, p.SourceEnd), rep.Target))
		}
		if p.SourceGone > 0 {
			_ = writeWrapped(w, "    ", fmt.Sprintf("  %s standby records copy source records the source no longer holds (compacted or deleted there since): not compared", grouped(p.SourceGone)))
		}
		if !p.TimestampsCompared {
			fmt.Fprintf(w, "  timestamps not compared: %s uses LogAppendTime on %s\n", p.Topic, rep.Target)
		}
		if p.Reason != "" {
			_ = writeWrapped(w, "    ", "  note: "+p.Reason)
		}
		for _, d := range p.Details {
			_ = writeWrapped(w, "      ", fmt.Sprintf("  %s: %s %s, %s %s: %s", d.Kind, rep.Source, offsetOrNone(d.SourceOffset), rep.Target, offsetOrNone(d.TargetOffset), d.Why))
		}
		if n := p.Differences - int64(len(p.Details)); n > 0 {
			fmt.Fprintf(w, "  and %s more\n", grouped(n))
		}
	}
	s := rep.Summary
	fmt.Fprintf(w, "\n%d of %d partitions proven identical", s.Identical, s.Partitions)
	if s.NoDifferenceSeen > 0 {
		fmt.Fprintf(w, ", %d with no difference seen in the sample", s.NoDifferenceSeen)
	}
	fmt.Fprintf(w, ", %d differ, %d not verified; %s of %s records compared, %s; read %s records of %s and %s of %s\n", s.Differing, s.NotVerified,
		grouped(s.Compared), grouped(s.SourceRecords), plural(int(s.Differences), "difference"),
		grouped(s.SourceRead), rep.Source, grouped(s.TargetRead), rep.Target)
	return nil
}

func span(from, to int64) string { return "[" + grouped(from) + ", " + grouped(to) + ")" }

func offsetOrNone(o int64) string {
	if o < 0 {
		return "(none)"
	}
	return "offset " + grouped(o)
}

func kinds(by map[verify.Kind]int64) string {
	var parts []string
	for _, k := range []verify.Kind{verify.Missing, verify.Unexpected, verify.ContentDiffers, verify.OrderDiffers} {
		if n := by[k]; n > 0 {
			parts = append(parts, grouped(n)+" "+string(k))
		}
	}
	return strings.Join(parts, ", ")
}

// grouped writes n with thousands separators: 1204331 -> 1,204,331.
func grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
