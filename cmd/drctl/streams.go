package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v2"
)

// Streams are a command line's standard streams, and whether a person sits
// at them. main takes the process's (processStreams); tests pass buffers.
// Every command reads and writes through these alone.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// IsTerminal says that input and output are a terminal: a person can
	// be asked a question (a destructive command's confirmation) or given
	// a screen (tui, sandbox --tui).
	IsTerminal bool

	// lines reads In a line at a time, one reader for the whole command
	// line so that no answer is lost in a discarded buffer.
	lines *bufio.Reader
}

// processStreams are the process's standard streams.
func processStreams() Streams {
	return Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, IsTerminal: isTTY(os.Stdin) && isTTY(os.Stdout)}
}

func isTTY(f *os.File) bool {
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

const streamsKey = "drctl.streams"

// attach makes s the streams of app's commands.
func (s Streams) attach(app *cli.App) {
	if s.In == nil {
		s.In = strings.NewReader("") // no input: every question is a no
	}
	s.lines = bufio.NewReader(s.In)
	app.Reader, app.Writer, app.ErrWriter = s.In, s.Out, s.Err
	if app.Metadata == nil {
		app.Metadata = map[string]any{}
	}
	app.Metadata[streamsKey] = s
}

// streams returns the streams of the command line c runs in.
func streams(c *cli.Context) Streams {
	if s, ok := c.App.Metadata[streamsKey].(Streams); ok {
		return s
	}
	s := Streams{In: c.App.Reader, Out: c.App.Writer, Err: c.App.ErrWriter}
	s.attach(c.App)
	return s
}

// errNotConfirmed is the answer to a question that was not a yes.
var errNotConfirmed = errors.New("not confirmed; nothing was changed")

// Consent is how every destructive command gets its operator's consent
// before it changes anything: given up front with --yes, or typed on the
// terminal. With neither possible the command refuses (exit 2) before it
// contacts anything; an answer that is not a yes changes nothing (exit 2).
type Consent struct {
	s   Streams
	yes bool
}

// confirmOf is the consent of command c: its --yes flag and its streams.
func confirmOf(c *cli.Context) Consent {
	return Consent{s: streams(c), yes: c.Bool("yes")}
}

// Given reports whether consent was given up front (--yes).
func (cf Consent) Given() bool { return cf.yes }

// CanAsk reports whether a question can be put to a person.
func (cf Consent) CanAsk() bool { return !cf.yes && cf.s.IsTerminal }

// Require refuses a command that will need consent it cannot get: no --yes
// and nobody at a terminal. refusal says what the command changes and
// names the fix (--yes). Commands call it before they contact anything.
func (cf Consent) Require(refusal string) error {
	if cf.yes || cf.s.IsTerminal {
		return nil
	}
	return withCode(exitBadInput, errors.New(refusal))
}

// YesNo asks question on w ("question [y/N] "): only y or yes, in any
// case, is consent; anything else, or the end of input, is errNotConfirmed.
// With --yes it asks nothing.
func (cf Consent) YesNo(w io.Writer, question string) error {
	if cf.yes {
		return nil
	}
	answer, err := cf.ask(w, question+" [y/N] ")
	if err != nil {
		return err
	}
	switch strings.ToLower(answer) {
	case "y", "yes":
		return nil
	}
	return withCode(exitBadInput, errNotConfirmed)
}

// Typed asks for want to be typed exactly (a cluster's name): prompt is
// shown on w as it is. With --yes it asks nothing.
func (cf Consent) Typed(w io.Writer, prompt, want string) error {
	if cf.yes {
		return nil
	}
	answer, err := cf.ask(w, prompt)
	if err != nil {
		return err
	}
	if answer != want {
		return withCode(exitBadInput, errNotConfirmed)
	}
	return nil
}

// ask shows prompt and returns the trimmed line typed; the end of input
// is an empty answer. Ctrl-C (or SIGTERM) while it waits is a "no" at once
// (exit 2): every question comes before a change, so there is nothing to
// finish.
func (cf Consent) ask(w io.Writer, prompt string) (string, error) {
	if !cf.s.IsTerminal {
		return "", withCode(exitBadInput, errors.New("there is no terminal to confirm on: pass --yes"))
	}
	if cf.s.lines == nil {
		cf.s.lines = bufio.NewReader(cf.s.In)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	fmt.Fprint(w, prompt)
	// The read cannot be cancelled; after an interrupt the command ends,
	// and the reader with it.
	go func() {
		line, err := cf.s.lines.ReadString('\n')
		got <- answer{line, err}
	}()
	select {
	case a := <-got:
		if a.err != nil && !errors.Is(a.err, io.EOF) {
			return "", fmt.Errorf("read the answer: %w", a.err)
		}
		return strings.TrimSpace(a.line), nil
	case s := <-sig:
		fmt.Fprintln(w)
		return "", withCode(exitBadInput, fmt.Errorf("%s at the question: %w", signalName(s), errNotConfirmed))
	}
}

func signalName(s os.Signal) string {
	if s == os.Interrupt {
		return "interrupted (Ctrl-C)"
	}
	return "stopped by " + s.String()
}
