package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

func planCommand() *cli.Command {
	return &cli.Command{
		Name:  "plan",
		Usage: "build and print a plan without running it",
		Subcommands: commands(&cli.Command{
			Name:  "failover",
			Usage: "plan a failover to cluster --to",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "to", Required: true, Usage: "the cluster that becomes active"},
				&cli.BoolFlag{Name: "unplanned", Usage: "the active cluster is down: no fence of it, no drain"},
				forceUnplannedFlag(),
				&cli.StringFlag{Name: "out", TakesFile: true, Usage: "save the plan as JSON here (run it with drctl apply)"},
			},
			Action: func(c *cli.Context) error {
				topo, err := loadTopology(c)
				if err != nil {
					return err
				}
				ctx, cancel := context.WithTimeout(c.Context, 30*time.Second)
				defer cancel()
				clusters := kafkaconn.Open(ctx, topo)
				defer clusters.Close()
				p, err := failover.PlanFailover(ctx, clusters, failoverRequest(c))
				if err != nil {
					return planError(err)
				}
				if out := c.String("out"); out != "" {
					if err := plans.SavePlan(out, p); err != nil {
						return err
					}
				}
				return render(c, p, func(w io.Writer) error {
					if err := p.WriteText(w); err != nil {
						return err
					}
					writeWipePreview(c, clusters, p, w)
					if out := c.String("out"); out != "" {
						fmt.Fprintf(w, "\nsaved to %s; run it with: drctl apply %s\n", out, out)
					}
					return nil
				})
			},
		}),
	}
}

func forceUnplannedFlag() cli.Flag {
	return &cli.BoolFlag{Name: "force-unplanned",
		Usage: "with --unplanned: fail over although the active cluster answers (it is fenced first; what its producers write after that stays behind, salvaged later)"}
}

func failoverRequest(c *cli.Context) failover.FailoverRequest {
	req := failover.FailoverRequest{To: c.String("to"), ForceUnplanned: c.Bool("force-unplanned")}
	if c.Bool("unplanned") || req.ForceUnplanned {
		req.Mode = failover.Unplanned
	}
	return req
}

// printForced tells the operator which refusal a --force flag overrode.
func printForced(c *cli.Context, p *plans.Plan) {
	if reason, forced := failover.Forced(p); forced {
		fmt.Fprintf(c.App.ErrWriter, "forced: %s\n", reason)
	}
}

func planError(err error) error {
	if errors.Is(err, kafkaconn.ErrUnreachable) {
		// Refused because a cluster could not be reached (or its TLS or
		// SASL settings are wrong): the unreachable class, exit 3.
		return withCode(exitUnreachable, err)
	}
	if errors.Is(err, failover.ErrRefused) {
		return withCode(exitBadInput, err)
	}
	return err
}

func runFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "yes", Usage: "do not ask for confirmation (required without a terminal)"},
		&cli.StringFlag{Name: "salvage-to", Usage: "salvage into files under `DIR` (JSON lines, one file per partition) instead of quarantine topics on the active cluster: the way on when it cannot take a record"},
	}
}

func failoverCommand() *cli.Command {
	return &cli.Command{
		Name:  "failover",
		Usage: "move the active role to cluster --to (drain, fence, translate groups, flip, reseed)",
		Flags: append(runFlags(),
			&cli.StringFlag{Name: "to", Required: true, Usage: "the cluster that becomes active"},
			&cli.BoolFlag{Name: "unplanned", Usage: "the active cluster is down: no fence of it, no drain; groups from the last snapshot"},
			forceUnplannedFlag()),
		Action: func(c *cli.Context) error {
			return planAndRun(c, func(ctx context.Context, clusters *kafkaconn.Clusters) (*plans.Plan, error) {
				p, err := failover.PlanFailover(ctx, clusters, failoverRequest(c))
				if err != nil {
					return nil, err
				}
				printForced(c, p)
				return p, nil
			})
		},
	}
}

func failbackCommand() *cli.Command {
	return &cli.Command{
		Name:  "failback",
		Usage: "move the active role back to the home active cluster",
		Flags: runFlags(),
		Action: func(c *cli.Context) error {
			return planAndRun(c, func(ctx context.Context, clusters *kafkaconn.Clusters) (*plans.Plan, error) {
				return failover.PlanFailover(ctx, clusters, failover.FailoverRequest{To: clusters.Topology().Active, Kind: rolestate.RunFailback})
			})
		},
	}
}

func reseedCommand() *cli.Command {
	return &cli.Command{
		Name:      "reseed",
		Usage:     "salvage, wipe and re-seed a stale cluster as the standby",
		ArgsUsage: "CLUSTER",
		Flags: append(runFlags(), &cli.BoolFlag{Name: "force",
			Usage: "re-seed a cluster that is not stale (e.g. the healthy standby): its records that the active lacks are salvaged, then it is wiped"}),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return withCode(exitBadInput, errors.New("name the stale cluster: drctl reseed CLUSTER"))
			}
			return planAndRun(c, func(ctx context.Context, clusters *kafkaconn.Clusters) (*plans.Plan, error) {
				p, err := failover.PlanReseedWith(ctx, clusters, c.Args().First(), failover.ReseedOptions{Force: c.Bool("force")})
				if err != nil {
					return nil, err
				}
				printForced(c, p)
				return p, nil
			})
		},
	}
}

func applyCommand() *cli.Command {
	return &cli.Command{
		Name:      "apply",
		Usage:     "run a saved plan; refuses a stale one",
		ArgsUsage: "PLAN.json",
		Flags:     runFlags(),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return withCode(exitBadInput, errors.New("name the plan file: drctl apply plan.json"))
			}
			return planAndRun(c, func(ctx context.Context, clusters *kafkaconn.Clusters) (*plans.Plan, error) {
				p, err := plans.LoadPlan(c.Args().First())
				if err != nil {
					return nil, withCode(exitBadInput, err)
				}
				if err := checkFresh(ctx, clusters, p); err != nil {
					return nil, err
				}
				return p, nil
			})
		},
	}
}

func resumeCommand() *cli.Command {
	return &cli.Command{
		Name:      "resume",
		Usage:     "finish an interrupted run, from this or another machine",
		ArgsUsage: "[RUN-ID]",
		Flags:     runFlags(),
		Action: func(c *cli.Context) error {
			topo, err := loadTopology(c)
			if err != nil {
				return err
			}
			if err := confirmOf(c).Require("resume changes the clusters (and may need the operator to confirm that producers stopped) and there is no terminal to confirm on: check drctl status and pass --yes"); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(c.Context, 30*time.Second)
			clusters := kafkaconn.Open(ctx, topo)
			defer clusters.Close()
			id, err := failover.ResumeID(ctx, clusters, c.Args().First())
			cancel()
			if err != nil {
				if errors.Is(err, failover.ErrNothingToResume) {
					// The clusters name no run, but this machine may hold
					// one killed before it recorded itself there.
					if st := failover.UnfinishedRun(failover.JournalDir(), topo.Name); st != nil {
						n := len(st.Plan.Steps)
						return fmt.Errorf("no run is recorded in progress in the clusters, but this machine's journal holds run %s (%s) stopped at step %d/%d (%s): finish it with drctl resume %s, or undo it with drctl abort %s",
							st.Plan.ID, st.Plan.Kind, min(st.Next+1, n), n, st.Plan.Steps[min(st.Next, n-1)].Name, st.Plan.ID, st.Plan.ID)
					}
					// No run left: a stopped drill may still need its
					// clean-up (a mirror pause, the roles it found).
					return drillCleanup(c, clusters, err)
				}
				return err
			}
			ctx, cancel = context.WithTimeout(c.Context, 30*time.Second)
			ended := finishedRun(ctx, clusters, failover.JournalDir(), id)
			cancel()
			if ended != "" {
				return withCode(exitFailure, errors.New(ended))
			}
			err = execute(c, topo, func(runCtx context.Context, o failover.RunOptions) error {
				return failover.Resume(runCtx, clusters, id, o)
			}, id)
			if err != nil {
				return err
			}
			return drillCleanup(c, clusters, nil)
		},
	}
}

func fenceCommands() []*cli.Command {
	mk := func(name, usage string, do func(ctx context.Context, clusters *kafkaconn.Clusters, cluster string) (any, string, error)) *cli.Command {
		return &cli.Command{
			Name: name, Usage: usage, ArgsUsage: "CLUSTER",
			Action: func(c *cli.Context) error {
				if c.NArg() != 1 {
					return withCode(exitBadInput, fmt.Errorf("name the cluster: drctl %s CLUSTER", name))
				}
				topo, err := loadTopology(c)
				if err != nil {
					return err
				}
				if _, ok := topo.Clusters[c.Args().First()]; !ok {
					return withCode(exitBadInput, fmt.Errorf("no cluster %q in %s; use one of %v", c.Args().First(), topo.Path, topo.ClusterNames()))
				}
				ctx, cancel := context.WithTimeout(c.Context, time.Minute)
				defer cancel()
				clusters := kafkaconn.Open(ctx, topo, c.Args().First())
				defer clusters.Close()
				v, msg, err := do(ctx, clusters, c.Args().First())
				if err != nil {
					return err
				}
				return render(c, v, func(w io.Writer) error { _, err := fmt.Fprintln(w, msg); return err })
			},
		}
	}
	return []*cli.Command{
		mk("fence", "deny writes to the selected topics of a cluster (DENY WRITE ACLs, recorded)", func(ctx context.Context, clusters *kafkaconn.Clusters, cl string) (any, string, error) {
			rec, err := failover.Fence(ctx, clusters, cl)
			if err != nil {
				return nil, "", err
			}
			return rec, fmt.Sprintf("%s fenced: %d ACL(s) added by drctl, %d already there", cl, len(rec.Added), len(rec.Existing)), nil
		}),
		mk("unfence", "remove exactly the ACLs drctl's fence added", func(ctx context.Context, clusters *kafkaconn.Clusters, cl string) (any, string, error) {
			removed, err := failover.Unfence(ctx, clusters, cl)
			if err != nil {
				return nil, "", err
			}
			return removed, fmt.Sprintf("%s unfenced: %d ACL(s) removed", cl, len(removed)), nil
		}),
	}
}

// writeWipePreview says, under a plan that wipes a cluster, what the wipe
// would delete there now (read when the plan is shown, so before anyone
// types a name), or that it is unknown.
func writeWipePreview(c *cli.Context, clusters *kafkaconn.Clusters, p *plans.Plan, w io.Writer) {
	ctx, cancel := context.WithTimeout(c.Context, 15*time.Second)
	defer cancel()
	if pv := failover.PreviewWipe(ctx, clusters, p); pv != nil {
		fmt.Fprintln(w)
		for _, l := range pv.Lines() {
			fmt.Fprintln(w, l)
		}
	}
}

// planAndRun builds a plan, shows it, asks for confirmation and runs it.
func planAndRun(c *cli.Context, build func(context.Context, *kafkaconn.Clusters) (*plans.Plan, error)) error {
	topo, err := loadTopology(c)
	if err != nil {
		return err
	}
	// The command's one session: the plan, its preview and its run.
	ctx, cancel := context.WithTimeout(c.Context, 30*time.Second)
	clusters := kafkaconn.Open(ctx, topo)
	defer clusters.Close()
	p, err := build(ctx, clusters)
	cancel()
	if err != nil {
		return planError(err)
	}
	if humanOutput(c) {
		if err := p.WriteText(c.App.Writer); err != nil {
			return err
		}
		writeWipePreview(c, clusters, p, c.App.Writer)
	}
	target, err := failover.ConfirmName(p)
	if err != nil {
		return err
	}
	cf := confirmOf(c)
	if err := cf.Require("this changes the clusters and there is no terminal to confirm on: review the plan (drctl plan ...) and pass --yes"); err != nil {
		return err
	}
	if err := cf.Typed(c.App.Writer, fmt.Sprintf("\nType the name of the cluster %q to run this plan: ", target), target); err != nil {
		return err
	}
	return execute(c, topo, func(runCtx context.Context, o failover.RunOptions) error {
		return failover.Execute(runCtx, clusters, p, o)
	}, p.ID)
}

func execute(c *cli.Context, topo *topology.Topology, run func(context.Context, failover.RunOptions) error, id string) error {
	in := &plans.Interrupts{}
	stop := plans.NotifySignals(in, c.App.ErrWriter, "drctl -c "+topo.Path+" resume "+id)
	defer stop()
	o := failover.RunOptions{Interrupts: in}
	if dir := c.String("salvage-to"); dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return withCode(exitBadInput, fmt.Errorf("--salvage-to %s: %w", dir, err))
		}
		o.SalvageTo = abs
	}
	switch outputFormat(c) {
	case "json": // a JSON-lines event stream (docs/commands.md)
		o.JSON = c.App.Writer
	case "yaml": // the same events, one YAML document each
		o.JSON = &yamlStream{w: c.App.Writer}
	default:
		o.Out = c.App.Writer
	}
	// Questions asked during the run (fence: none asks whether producers
	// stopped). With nobody to ask, a question fails the step, naming --yes.
	cf := confirmOf(c)
	o.Yes = cf.Given()
	if cf.CanAsk() {
		o.Confirm = func(q string) error {
			// A Ctrl-C now is the question's "no", not an interrupt of
			// the run: the question comes before the run's first change.
			// After a no the run ends, so the relay stays quiet: it may
			// see the same signal after the question did.
			answered := in.Asking()
			if err := cf.YesNo(c.App.Writer, q); err != nil {
				return fmt.Errorf("%w: %w", failover.ErrNotConfirmed, err)
			}
			answered()
			return nil
		}
	}
	// The run's context is not the command's: the executor handles the
	// interrupts itself (first finishes the step, second cancels it).
	err := run(context.WithoutCancel(c.Context), o)
	if errors.Is(err, plans.ErrStalePlan) || errors.Is(err, failover.ErrPlanChanged) {
		return withCode(exitBadInput, err)
	}
	if errors.Is(err, failover.ErrNotConfirmed) {
		return withCode(exitBadInput, errors.New("not confirmed; nothing was changed, and nothing is left to resume"))
	}
	return err
}

// checkFresh maps failover.CheckFresh's refusal of a stale saved plan to
// its exit code.
func checkFresh(ctx context.Context, clusters *kafkaconn.Clusters, p *plans.Plan) error {
	err := failover.CheckFresh(ctx, clusters, p)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, rolestate.ErrNoneReachable):
		return withCode(exitUnreachable, err)
	}
	return withCode(exitBadInput, err) // stale, or not a plan drctl made
}

// drillCleanup puts right what a stopped disruptive drill left (see
// drill.Cleanup) and prints what it did; with nothing to do it returns
// nothing (nil or, when there was no run to resume either, that error).
func drillCleanup(c *cli.Context, clusters *kafkaconn.Clusters, nothing error) error {
	did, err := drill.Cleanup(context.WithoutCancel(c.Context), clusters, drill.CleanupOptions{Out: c.App.Writer, JournalDir: failover.JournalDir()})
	for _, line := range did {
		fmt.Fprintln(c.App.Writer, line)
	}
	if err != nil {
		return err
	}
	if len(did) == 0 {
		return nothing
	}
	return nil
}
