package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/drctl/drctl/internal/sandbox"
)

func sandboxCommand() *cli.Command {
	return &cli.Command{
		Name:  "sandbox",
		Usage: "run two embedded Kafka clusters with demo traffic and a ready topology file",
		Description: "sandbox starts two in-process Kafka clusters (east, the active, and west, the standby) on\n" +
			"loopback, writes drctl.yaml for them, creates demo topics, runs a demo producer and two consumer\n" +
			"groups on the active cluster, prints the commands to try next, and runs until Ctrl-C.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Value: ".", Usage: "where to write drctl.yaml"},
			&cli.StringFlag{Name: "data-dir", Usage: "keep the clusters' data here across restarts (default: in memory)"},
			&cli.IntFlag{Name: "east-port", Value: 19092, Usage: "port of the east cluster"},
			&cli.IntFlag{Name: "west-port", Value: 29092, Usage: "port of the west cluster"},
			&cli.IntFlag{Name: "rate", Value: 20, Usage: "demo records per second"},
			&cli.BoolFlag{Name: "no-mirror", Usage: "do not run the built-in mirror"},
			&cli.StringFlag{Name: "mirror-listen", Value: "127.0.0.1:0", Usage: "address of the mirror's /metrics, /healthz and /readyz"},
			&cli.BoolFlag{Name: "tui", Usage: "open the live console (drctl tui) on the sandbox in this terminal; the sandbox stops when it quits"},
		},
		Action: func(c *cli.Context) error {
			o := sandbox.Options{
				Dir:          c.String("dir"),
				DataDir:      c.String("data-dir"),
				EastPort:     c.Int("east-port"),
				WestPort:     c.Int("west-port"),
				Rate:         c.Int("rate"),
				Mirror:       !c.Bool("no-mirror"),
				MirrorListen: c.String("mirror-listen"),
				Log:          c.App.Writer,
			}
			if c.Bool("tui") {
				return sandboxConsole(c, o)
			}
			return sandbox.Run(c.Context, o)
		},
	}
}

// sandboxConsole starts the sandbox, runs the console on it in this
// terminal, and stops the sandbox when the console quits. The sandbox's
// own lines go to drctl-sandbox.log beside drctl.yaml: the console owns the
// screen.
func sandboxConsole(c *cli.Context, o sandbox.Options) error {
	if !interactive() {
		return withCode(exitBadInput, errors.New("drctl sandbox --tui needs a terminal; run drctl sandbox without --tui"))
	}
	logPath := filepath.Join(o.Dir, "drctl-sandbox.log")
	log, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("sandbox log: %w", err)
	}
	defer log.Close()
	o.Log = log
	s, err := sandbox.Start(c.Context, o)
	if err != nil {
		return err
	}
	fmt.Fprint(log, s.Instructions())
	err = runConsole(c, s.Topology, false, 2*time.Second, 14*time.Second)
	if cerr := s.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("stop the sandbox: %w", cerr)
	}
	fmt.Fprintf(c.App.Writer, "sandbox stopped; its log is %s\n", logPath)
	return err
}
