package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rcrowley/go-metrics"
	"github.com/urfave/cli/v2"

	"github.com/drctl/drctl/internal/kafkaconn"
)

// Exit codes are part of the public surface (docs/commands.md).
const (
	exitOK          = 0
	exitFailure     = 1 // the command failed
	exitBadInput    = 2 // bad flags or a bad topology file (nothing was contacted), or a change not consented to (nothing was changed)
	exitUnreachable = 3 // a cluster could not be reached or authenticated
	exitDiffers     = 1 // drctl verify: the standby differs, or a partition could not be verified
)

// exitError carries an exit code to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

func main() {
	// sarama keeps histograms and meters per broker and per topic in every
	// client (go-metrics). drctl reads none of them (it exports its own), and
	// they cost memory: a mirror of 1,000 partitions held 7.6 MB of them.
	metrics.UseNilMetrics = true
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, processStreams())
	stop()
	os.Exit(code)
}

// run runs one drctl command line on streams s and returns its exit code.
func run(ctx context.Context, args []string, s Streams) int {
	app := newApp()
	s.attach(app)
	args, err := normalizeArgs(app, args)
	if err == nil {
		err = app.RunContext(ctx, args)
	}
	if err == nil {
		return exitOK
	}
	code := exitFailure
	var ee *exitError
	var ue usageError
	switch {
	case errors.As(err, &ee):
		code = ee.code
	case errors.As(err, &ue):
		code = exitBadInput
	case errors.Is(err, kafkaconn.ErrUnreachable):
		// A command that did not give a code of its own failed to
		// reach or authenticate to a cluster.
		code = exitUnreachable
	}
	fmt.Fprintln(s.Err, "drctl:", err)
	return code
}

// commands gives every command, and every subcommand, drctl's common
// policy: -o (or its refusal, for commands whose output is a log or a
// script), the usage-error policy (exit 2) and the output format check.
// It is idempotent, so a command list may pass through it twice.
func commands(cmds ...*cli.Command) []*cli.Command {
	for _, c := range cmds {
		if !hasFlag(c.Flags, outputFlag.Name) {
			c.Flags = append(c.Flags, outputFlag)
			c.OnUsageError = badUsage
			c.Before = chainBefore(checkOutputFormat, c.Before)
		}
		if len(c.Subcommands) == 0 && c.BashComplete == nil {
			c.BashComplete = leafComplete(c)
		}
		commands(c.Subcommands...)
	}
	return cmds
}

// describe gives every command under parent its long help (helpTexts).
func describe(parent string, cmds []*cli.Command) {
	for _, c := range cmds {
		path := strings.TrimSpace(parent + " " + c.Name)
		applyHelp(path, c)
		describe(path, c.Subcommands)
	}
}

func newApp() *cli.App {
	app := &cli.App{
		Name:  "drctl",
		Usage: "Kafka disaster recovery: mirror, fail over, fail back",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, TakesFile: true, Usage: "topology file (default: $DRCTL_CONFIG, then ./drctl.yaml, then $XDG_CONFIG_HOME/drctl/drctl.yaml, i.e. ~/.config/drctl/drctl.yaml)"},
			outputFlag,
			&cli.BoolFlag{Name: "version", Usage: "print the version and exit (as drctl version)"},
		},
		OnUsageError: badUsage,
		HideVersion:  true, // --version is ours: it prints the same as drctl version
		Action:       rootAction,
		Commands: commands(append([]*cli.Command{
			validateCommand(),
			statusCommand(),
			mirrorCommand(),
			offsetsCommand(),
			verifyCommand(),
			planCommand(),
			failoverCommand(),
			failbackCommand(),
			applyCommand(),
			resumeCommand(),
			abortCommand(),
			reseedCommand(),
			sandboxCommand(),
			tuiCommand(),
			drillCommand(),
			rolesCommand(),
			versionCommand(),
			completionCommand(),
			docsCommand(),
		}, fenceCommands()...)...),
		EnableBashCompletion: true,                         // drctl completion SHELL
		ExitErrHandler:       func(*cli.Context, error) {}, // main decides the exit code
	}
	describe("", app.Commands)
	return app
}
