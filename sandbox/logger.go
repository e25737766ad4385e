package sandbox

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// errorEvery is how often the same warning is printed; the traffic retries
// quietly in between.
const errorEvery = 10 * time.Second

// Log formats of Options.LogFormat.
const (
	LogText = "text" // "15:04:05 sandbox: message", for a person at a terminal
	LogJSON = "json" // one slog JSON object per line, for a machine
)

// logger is the one log of a sandbox process: its own lines and the
// embedded mirror's go through the same slog handler, so they share one
// format. Repeated warnings are rate-limited, so a stopped cluster does not
// flood the terminal, and while the roles move (a failover or failback) the
// mirror's warnings, which are expected while its old direction stops, are
// held back and counted in one line afterwards.
type logger struct {
	mu   sync.Mutex
	w    io.Writer
	json bool
	last map[string]time.Time
	now  func() time.Time
	log  *slog.Logger
	base slog.Handler // without a component

	// mirrorInfo lets the mirror's info lines through (shards claimed and
	// released: detail in a sandbox); only at --log-level debug.
	mirrorInfo bool

	holding atomic.Bool
	holds   atomic.Int64 // counts hold calls, so a release acts for the latest
	held    atomic.Int64
}

func newLogger(w io.Writer, format string, level slog.Level) *logger {
	if w == nil {
		w = io.Discard
	}
	l := &logger{w: w, json: format == LogJSON, last: map[string]time.Time{}, now: time.Now, mirrorInfo: level <= slog.LevelDebug}
	var h slog.Handler
	if l.json {
		h = slog.NewJSONHandler(lockedWriter{l}, &slog.HandlerOptions{Level: level})
	} else {
		h = &textHandler{l: l, level: level}
	}
	l.base = &gate{Handler: h, l: l}
	l.log = slog.New(l.base).With("component", "sandbox")
	return l
}

// printf logs one line of the sandbox's own.
func (l *logger) printf(format string, args ...any) {
	l.log.Info(oneLine(fmt.Sprintf(format, args...)))
}

// errorf logs a warning unless one with the same key was logged within
// errorEvery.
func (l *logger) errorf(key, format string, args ...any) {
	if !l.allow("sandbox/" + key) {
		return
	}
	l.log.Warn(oneLine(fmt.Sprintf(format, args...)))
}

// allow reports whether a warning with key may be printed now.
func (l *logger) allow(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if t, ok := l.last[key]; ok && now.Sub(t) < errorEvery {
		return false
	}
	l.last[key] = now
	return true
}

// block writes text as is (the start-up instructions); in JSON it is one
// record.
func (l *logger) block(text string) {
	if l.json {
		l.log.Info(strings.TrimSpace(text))
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.w, text) // a log line that cannot be written has nowhere else to go
}

// mirrorLogger is the slog logger for the embedded mirror.
func (l *logger) mirrorLogger() *slog.Logger {
	return slog.New(l.base).With("component", "mirror")
}

// holdGrace is how long the mirror's warnings stay held after the traffic
// resumes: the mirror stops its old direction a moment after the flip, and
// that direction's last warnings ("context canceled") are part of the move.
const holdGrace = 10 * time.Second

// hold starts holding back the mirror's warnings; release ends it after
// holdGrace and then says how many there were.
func (l *logger) hold() {
	l.holding.Store(true)
	l.holds.Add(1)
}

func (l *logger) release() {
	if !l.holding.Load() {
		return
	}
	gen := l.holds.Load()
	time.AfterFunc(holdGrace, func() {
		if l.holds.Load() != gen { // held again meanwhile: that move reports
			return
		}
		l.holding.Store(false)
		if n := l.held.Swap(0); n > 0 {
			l.printf("the mirror logged %d warning(s) while the roles moved, expected while its old direction stops; not shown (drctl mirror run shows every one)", n)
		}
	})
}

// oneLine keeps one event on one line: joined errors (sarama's per-topic
// ones) span lines.
func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "; ")
}

// gate drops the mirror's warnings while the logger holds them, and
// rate-limits repeated ones, before the format handler sees them.
type gate struct {
	slog.Handler
	l         *logger
	component string
}

func (g *gate) Handle(ctx context.Context, r slog.Record) error {
	if g.component == "mirror" && r.Level < slog.LevelWarn && !g.l.mirrorInfo {
		return nil
	}
	if g.component == "mirror" && r.Level >= slog.LevelWarn {
		if g.l.holding.Load() {
			g.l.held.Add(1)
			return nil
		}
		if !g.l.allow("mirror/" + r.Message) {
			return nil
		}
	}
	return g.Handler.Handle(ctx, r)
}

func (g *gate) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := g.component
	for _, a := range attrs {
		if a.Key == "component" {
			c = a.Value.String()
		}
	}
	return &gate{Handler: g.Handler.WithAttrs(attrs), l: g.l, component: c}
}

func (g *gate) WithGroup(name string) slog.Handler {
	return &gate{Handler: g.Handler.WithGroup(name), l: g.l, component: g.component}
}

// textHandler prints "15:04:05 component: message (key=value ...)", with
// "warning: " before warnings and errors.
type textHandler struct {
	l     *logger
	level slog.Level
	attrs []slog.Attr
}

func (h *textHandler) Enabled(_ context.Context, level slog.Level) bool { return level >= h.level }

func (h *textHandler) Handle(_ context.Context, r slog.Record) error {
	component := "sandbox"
	var kv []string
	add := func(a slog.Attr) bool {
		if a.Key == "component" {
			component = a.Value.String()
		} else if !a.Equal(slog.Attr{}) {
			kv = append(kv, a.Key+"="+a.Value.String())
		}
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: ", r.Time.Format("15:04:05"), component)
	if r.Level >= slog.LevelWarn {
		b.WriteString("warning: ")
	}
	b.WriteString(oneLine(r.Message))
	if len(kv) > 0 {
		fmt.Fprintf(&b, " (%s)", oneLine(strings.Join(kv, " ")))
	}
	b.WriteByte('\n')
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	_, err := io.WriteString(h.l.w, b.String())
	return err
}

func (h *textHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &textHandler{l: h.l, level: h.level, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

// WithGroup is flat: the sandbox's lines have no groups.
func (h *textHandler) WithGroup(string) slog.Handler { return h }

type lockedWriter struct{ l *logger }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	return w.l.w.Write(p)
}

// component is a logger of the sandbox's one format for a part of it that
// logs through log/slog itself (the drill scheduler).
func (l *logger) component(name string) *slog.Logger {
	return slog.New(l.base).With("component", name)
}
