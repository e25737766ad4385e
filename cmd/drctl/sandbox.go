package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/drctl/drctl/sandbox"
)

func sandboxCommand() *cli.Command {
	return &cli.Command{
		Name:  "sandbox",
		Usage: "run two embedded Kafka clusters with demo traffic and a ready topology file",
		Description: "sandbox starts two in-process Kafka clusters (east, the active, and west, the standby) on\n" +
			"loopback, writes drctl.yaml for them, creates demo topics, runs a demo producer and two consumer\n" +
			"groups on the active cluster and the mirror, prints the commands to try next, and runs until Ctrl-C.\n" +
			"A second sandbox in the same directory (on other ports) writes its own drctl-PORT.yaml and says so.",
		Flags: append(logFlags(),
			&cli.StringFlag{Name: "dir", Value: ".", Usage: "where to write drctl.yaml"},
			&cli.StringFlag{Name: "data-dir", Usage: "keep the clusters' data here across restarts (default: in memory)"},
			&cli.IntFlag{Name: "east-port", Value: sandbox.DefaultEastPort, Usage: "port of the east cluster"},
			&cli.IntFlag{Name: "west-port", Value: sandbox.DefaultWestPort, Usage: "port of the west cluster"},
			&cli.IntFlag{Name: "rate", Value: sandbox.DefaultRate, Usage: "demo records per second"},
			&cli.BoolFlag{Name: "no-mirror", Usage: "do not run the built-in mirror"},
			&cli.StringFlag{Name: "mirror-listen", Value: sandbox.DefaultMirrorListen, Usage: "address of the mirror's /metrics, /healthz and /readyz (empty: none)"},
			&cli.BoolFlag{Name: "tui", Usage: "open the live console (drctl tui) on the sandbox in this terminal; the sandbox stops when it quits"},
		),
		Action: func(c *cli.Context) error {
			level, format, err := logSettings(c)
			if err != nil {
				return err
			}
			o := sandbox.Options{
				Dir:          c.String("dir"),
				DataDir:      c.String("data-dir"),
				EastPort:     c.Int("east-port"),
				WestPort:     c.Int("west-port"),
				Rate:         c.Int("rate"),
				Mirror:       !c.Bool("no-mirror"),
				MirrorListen: c.String("mirror-listen"),
				LogFormat:    format,
				LogLevel:     level,
				Command:      invocation(os.Args[0]),
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
	if !streams(c).IsTerminal {
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

// invocation is how a person runs this drctl again, for printed hints:
// "go run ./cmd/drctl" when it was built by go run (its binary sits in the
// go-build cache), "drctl" when that name on $PATH is this binary, and
// otherwise the path it was started by.
func invocation(arg0 string) string {
	if strings.Contains(filepath.ToSlash(arg0), "/go-build") {
		return "go run ./cmd/drctl"
	}
	self, err := os.Executable()
	if err != nil {
		return "drctl"
	}
	if onPath, err := exec.LookPath("drctl"); err == nil && sameFile(onPath, self) {
		return "drctl"
	}
	if !strings.Contains(arg0, "/") {
		return arg0
	}
	return shellQuote(arg0)
}

func sameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./:=+-", r)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
