package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/urfave/cli/v2"
)

// The long-running commands (mirror run, sandbox) log through log/slog in
// one format per process, chosen by --log-format, at the least level
// --log-level. An unknown value is bad input (exit 2), never a silent
// fallback.

func logFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "log-level", Value: "info", Usage: "least level logged: debug, info, warn or error"},
		&cli.StringFlag{Name: "log-format", Value: "text", Usage: "log format: text (for a terminal) or json (one object per line)"},
	}
}

// logSettings reads and checks --log-level and --log-format.
func logSettings(c *cli.Context) (slog.Level, string, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil || strings.ContainsAny(c.String("log-level"), "+-") {
		return 0, "", withCode(exitBadInput, fmt.Errorf("--log-level %q: use debug, info, warn or error", c.String("log-level")))
	}
	switch f := c.String("log-format"); f {
	case "text", "json":
		return level, f, nil
	default:
		return 0, "", withCode(exitBadInput, fmt.Errorf("--log-format %q: use text or json", f))
	}
}

// logger is the process's slog logger on standard error, per the flags.
func logger(c *cli.Context) (*slog.Logger, error) {
	level, format, err := logSettings(c)
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(c.App.ErrWriter, opts)), nil
	}
	return slog.New(slog.NewTextHandler(c.App.ErrWriter, opts)), nil
}
