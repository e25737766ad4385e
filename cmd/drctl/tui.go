package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/urfave/cli/v2"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/topology"
	"github.com/drctl/drctl/tui"
)

func tuiCommand() *cli.Command {
	return &cli.Command{
		Name:  "tui",
		Usage: "the live DR console: both clusters, mirror, topics, groups, runs; failover at a keystroke",
		Description: "tui opens a full-screen console on the topology: an overview of both clusters and the mirror\n" +
			"with a ready-to-fail-over verdict, and views of topics, groups, runs, drills and events (keys 1-6).\n" +
			"It refreshes every --interval without blocking the keys. f, b, R and s plan a failover, a failback,\n" +
			"a resume or an offsets sync, show what will change, and run only after you type the target's name.\n" +
			"--read-only disables every action. ? lists every key. See docs/tui.md.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "read-only", Usage: "disable every action (for observers)"},
			&cli.DurationFlag{Name: "interval", Value: 2 * time.Second, Usage: "time between refreshes (+/- change it)"},
			&cli.DurationFlag{Name: "timeout", Value: 14 * time.Second, Usage: "give up on an unresponsive cluster after this long, as drctl status"},
		},
		Action: func(c *cli.Context) error {
			topo, err := loadTopology(c)
			if err != nil {
				return err
			}
			if !streams(c).IsTerminal {
				return withCode(exitBadInput, errors.New("drctl tui needs a terminal; for scripts use drctl status -o json"))
			}
			return runConsole(c, topo, c.Bool("read-only"), c.Duration("interval"), c.Duration("timeout"))
		},
	}
}

// runConsole runs the console until the operator quits, then prints the
// resume command of a run it left unfinished.
func runConsole(c *cli.Context, topo *topology.Topology, readOnly bool, interval, timeout time.Duration) error {
	m := tui.New(tui.Options{Topology: topo, ReadOnly: readOnly, Interval: interval, Timeout: timeout, JournalDir: failover.JournalDir()})
	if _, err := consoleProgram(c.Context, m).Run(); consoleFailed(err) {
		return fmt.Errorf("tui: %w", err)
	}
	// Also after SIGTERM: the run stops with the process, and resumes.
	if cmd := m.ResumeCommand(); cmd != "" {
		fmt.Fprintf(c.App.ErrWriter, "a run is unfinished; to finish it: %s\n", cmd)
	}
	return nil
}

// consoleProgram is the console's program on the terminal (or on opts'
// input and output). SIGTERM and SIGINT cancel ctx (main): the program then
// restores the terminal and returns. Its own signal handler stays off,
// since two handlers of one signal race and could leave it waiting
// forever. Panics stay caught (bubbletea's default): a panic restores the
// terminal before the program returns ErrProgramPanic.
func consoleProgram(ctx context.Context, m tea.Model, opts ...tea.ProgramOption) *tea.Program {
	return tea.NewProgram(m, append([]tea.ProgramOption{tea.WithAltScreen(), tea.WithContext(ctx), tea.WithoutSignalHandler()}, opts...)...)
}

// consoleFailed reports whether the program's end is a failure: a panic
// is one, a kill by the cancelled context (a signal) is not.
func consoleFailed(err error) bool {
	return err != nil && (errors.Is(err, tea.ErrProgramPanic) || !errors.Is(err, tea.ErrProgramKilled))
}
