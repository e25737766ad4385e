package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/drill/report"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

func drillCommand() *cli.Command {
	return &cli.Command{
		Name:        "drill",
		Usage:       "DR drills with evidence: run, schedule, history, report, verify-report, evidence-key",
		Subcommands: commands(drillRunCommand(), drillScheduleCommand(), drillHistoryCommand(), drillReportCommand(), drillVerifyReportCommand(), drillEvidenceKeyCommand()),
	}
}

func drillRunCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run one drill; the exit code is the verdict (0 pass, 1 fail, 2 bad input, 3 unreachable)",
		ArgsUsage: "[NAME]",
		Description: "Without NAME, runs the default drill of --kind (canary). NAME is a drill of the topology's\n" +
			"drills.named section, judged against its objectives. A disruptive kind (failover, unplanned)\n" +
			"runs only where the topology sets drills.allow_disruptive, and asks for the target cluster's\n" +
			"name on a terminal (--yes otherwise).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "kind", Usage: "canary, failover or unplanned (without NAME)"},
			&cli.BoolFlag{Name: "yes", Usage: "do not ask for confirmation of a disruptive drill"},
			&cli.StringFlag{Name: "report", Usage: "also write the report to this file (format from --format; a signed drill's json gets FILE.dsse beside it)"},
			&cli.StringFlag{Name: "format", Value: "md", Usage: "format of --report: md, json, junit, html or dsse (the signed envelope)"},
			&cli.DurationFlag{Name: "wait", Value: time.Minute, Usage: "how long to wait for another drill (e.g. a scheduled canary) to finish before refusing; 0 refuses at once"},
		},
		Action: func(c *cli.Context) error {
			args, err := drillArgs(c)
			if err != nil {
				return err
			}
			if len(args) > 1 {
				return withCode(exitBadInput, errors.New("name at most one drill: drctl drill run [NAME]"))
			}
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			if name != "" && c.String("kind") != "" {
				return withCode(exitBadInput, errors.New("give a drill NAME or --kind, not both (a named drill has its kind)"))
			}
			if err := checkReportFormat(c.String("format")); err != nil {
				return err
			}
			topo, err := loadTopology(c)
			if err != nil {
				return err
			}
			d, err := drill.Resolve(topo, name, topology.DrillKind(c.String("kind")))
			if err != nil {
				return drillError(err)
			}
			in := &plans.Interrupts{}
			stop := plans.NotifySignals(in, c.App.ErrWriter, "the next drill cleans up")
			defer stop()
			cf := confirmOf(c)
			o := drill.Options{Interrupts: in, Yes: cf.Given(), WaitBusy: c.Duration("wait")}
			if humanOutput(c) {
				o.Out = c.App.Writer
			}
			if cf.CanAsk() {
				// The drill asks (and refuses without an answer) itself:
				// only a disruptive kind needs consent.
				o.Confirm = func(q, answer string) error {
					// A Ctrl-C now is the question's no; after a no the
					// drill ends, so the relay stays quiet (it may see the
					// same signal after the question did).
					answered := in.Asking()
					if err := cf.Typed(c.App.Writer, q, answer); err != nil {
						return err
					}
					answered()
					return nil
				}
			}
			dctx, dcancel := context.WithTimeout(c.Context, 30*time.Second)
			clusters := kafkaconn.Open(dctx, topo)
			dcancel()
			defer clusters.Close()
			rec, err := drill.Run(context.WithoutCancel(c.Context), clusters, d, o)
			if rec == nil {
				return drillError(err)
			}
			if path := c.String("report"); path != "" {
				if werr := writeReport(path, rec, c.String("format")); werr != nil {
					return werr
				}
			}
			if rerr := render(c, rec, func(w io.Writer) error { return drillSummary(w, rec) }); rerr != nil {
				return rerr
			}
			if err != nil {
				return drillError(err)
			}
			if !rec.Passed() {
				return withCode(exitFailure, fmt.Errorf("drill %s failed: %s", rec.ID, strings.Join(rec.Reasons, "; ")))
			}
			return nil
		},
	}
}

// drillError maps the drill package's errors to exit codes.
func drillError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, drill.ErrBadInput):
		return withCode(exitBadInput, err)
	case errors.Is(err, kafkaconn.ErrUnreachable):
		return withCode(exitUnreachable, err)
	}
	return err
}

// formatDSSE is the report format of a signed drill's DSSE envelope (the
// signed JSON inside): drill run and drill report write it beside the
// package report's formats.
const formatDSSE = "dsse"

func checkReportFormat(f string) error {
	if slices.Contains(report.Formats, f) || f == formatDSSE {
		return nil
	}
	return withCode(exitBadInput, fmt.Errorf("--format %q is not a report format; use md, json, junit, html or dsse", f))
}

// writeReportTo writes rec in format to w; dsse is the signed envelope,
// which an unsigned drill does not have (exit 1).
func writeReportTo(w io.Writer, rec *drill.Record, format string) error {
	if format != formatDSSE {
		return report.Write(w, rec, format)
	}
	env := rec.Envelope()
	if env == nil {
		return withCode(exitFailure, fmt.Errorf("drill %s is not signed (drills.evidence.signing_key was not set when it was recorded): it has no dsse envelope", rec.ID))
	}
	_, err := w.Write(env.Marshal())
	return err
}

// writeReport writes rec to path; the json of a signed drill gets its
// envelope beside it, as path.dsse (drctl drill verify-report path checks
// the pair).
func writeReport(path string, rec *drill.Record, format string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := writeReportTo(f, rec, format); err != nil {
		f.Close()
		_ = os.Remove(path)
		if _, ok := errors.AsType[*exitError](err); ok {
			return err
		}
		return fmt.Errorf("report %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if env := rec.Envelope(); format == "json" && env != nil {
		if err := os.WriteFile(path+".dsse", env.Marshal(), 0o644); err != nil {
			return fmt.Errorf("report %s: its signature: %w", path, err)
		}
	}
	return nil
}

func drillSummary(w io.Writer, r *drill.Record) error {
	fmt.Fprintf(w, "\ndrill %s (%s, kind %s): %s in %s\n", r.ID, r.Drill, r.Kind, strings.ToUpper(string(r.Verdict)), r.Duration().Round(time.Millisecond))
	if r.Next != "" {
		fmt.Fprintf(w, "NEXT: %s\n", r.Next)
	}
	for _, s := range r.Reasons {
		fmt.Fprintf(w, "  - %s\n", s)
	}
	fmt.Fprintf(w, "full evidence: drctl drill report %s --format md|json|junit|html\n", r.ID)
	if env := r.Envelope(); env != nil {
		fmt.Fprintf(w, "signed with key %s: --format json --out FILE writes FILE.dsse beside it, which drctl drill verify-report FILE checks\n", strings.Join(env.KeyIDs(), ", "))
	}
	return nil
}

func drillHistoryCommand() *cli.Command {
	return &cli.Command{
		Name:  "history",
		Usage: "list the recorded drills, newest first (from both clusters and the local journal)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "drill", Usage: "only the drills of this name"},
			&cli.IntFlag{Name: "limit", Value: 50, Usage: "at most this many (0: all)"},
			&cli.BoolFlag{Name: "verify", Usage: "check the history's hash chain and signatures instead of listing it: exit 0 intact, 1 a record removed or edited"},
			&cli.StringFlag{Name: "public-key", TakesFile: true, Usage: "with --verify: check signatures with this public key (default: the topology's signing key)"},
		},
		Action: func(c *cli.Context) error {
			if c.Bool("verify") && (c.IsSet("drill") || c.IsSet("limit")) {
				return withCode(exitBadInput, errors.New("--verify checks the topology's whole chain: it takes no --drill or --limit"))
			}
			if c.IsSet("public-key") && !c.Bool("verify") {
				return withCode(exitBadInput, errors.New("--public-key checks signatures: use it with --verify"))
			}
			topo, err := loadTopology(c)
			if err != nil {
				return err
			}
			if c.Bool("verify") {
				return historyVerify(c, topo)
			}
			ctx, cancel := context.WithTimeout(c.Context, 30*time.Second)
			defer cancel()
			clusters := kafkaconn.Open(ctx, topo)
			defer clusters.Close()
			hist, herr := drill.History(ctx, clusters, drill.HistoryOptions{Drill: c.String("drill"), Limit: c.Int("limit")})
			if hist == nil {
				hist = []drill.Record{}
			}
			summaries := make([]drill.Summary, len(hist))
			for i := range hist {
				summaries[i] = hist[i].Summary()
			}
			err = render(c, summaries, func(w io.Writer) error { return historyTable(w, summaries) })
			if err != nil {
				return err
			}
			if herr != nil {
				fmt.Fprintln(c.App.ErrWriter, "drctl: warning: part of the history could not be read:", herr)
			}
			return nil
		},
	}
}

func drillReportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "print a drill's full evidence",
		ArgsUsage: "ID",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "md", Usage: "md, json, junit, html or dsse (the signed envelope of the json)"},
			&cli.StringFlag{Name: "out", TakesFile: true, Usage: "write to this file instead of standard output (a signed drill's json gets FILE.dsse beside it)"},
		},
		Action: func(c *cli.Context) error {
			args, err := drillArgs(c)
			if err != nil {
				return err
			}
			if len(args) != 1 {
				return withCode(exitBadInput, errors.New("name the drill: drctl drill report ID (drctl drill history lists them)"))
			}
			if err := checkReportFormat(c.String("format")); err != nil {
				return err
			}
			topo, err := loadTopology(c)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(c.Context, 30*time.Second)
			defer cancel()
			clusters := kafkaconn.Open(ctx, topo)
			defer clusters.Close()
			rec, err := drill.Find(ctx, clusters, args[0], drill.HistoryOptions{})
			if err != nil {
				return drillError(err)
			}
			if path := c.String("out"); path != "" {
				return writeReport(path, rec, c.String("format"))
			}
			return writeReportTo(c.App.Writer, rec, c.String("format"))
		},
	}
}

// historyTable lists drills as history returns them (newest first). The id
// is never cut (drctl drill report takes it); to fit a terminal the kind
// (the id holds it), the latency, the start (the id holds it too), the
// drill's name and its duration go first, and the reasons are shortened.
func historyTable(w io.Writer, summaries []drill.Summary) error {
	t := newTable(w, col("id"), column{Name: "drill", Drop: 4}, column{Name: "kind", Drop: 1}, column{Name: "started", Drop: 3},
		column{Name: "took", Drop: 5}, col("verdict"), col("rpo"), col("rto"), column{Name: "latency p99", Drop: 2},
		column{Name: "reasons", Fit: fitShorten})
	estimated := false
	for _, s := range summaries {
		rpo, rto, lat := "-", "-", "-"
		if s.RPOSeconds != nil {
			rpo = fmt.Sprintf("%.1fs", *s.RPOSeconds)
		}
		if s.RTOSeconds != nil {
			rto = fmt.Sprintf("%.1fs", *s.RTOSeconds)
			if s.RTOEstimated {
				rto, estimated = "~"+rto, true
			}
		}
		if s.LatencyP99MS != nil {
			lat = fmt.Sprintf("%.0fms", *s.LatencyP99MS)
		}
		t.Append(s.ID, s.Drill, s.Kind, s.StartedAt.UTC().Format(time.RFC3339), s.Duration, string(s.Verdict), rpo, rto, lat, orDash(strings.Join(s.Reasons, "; ")))
	}
	if err := t.Render(); err != nil {
		return err
	}
	if estimated {
		return writeWrapped(w, "  ", "~: an RTO estimated from the last drill that measured one, not measured by that drill")
	}
	return nil
}
