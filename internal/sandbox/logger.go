package sandbox

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// errorEvery is how often the same kind of error is printed; the traffic
// retries quietly in between.
const errorEvery = 10 * time.Second

// logger serialises the sandbox's lines to one writer and rate-limits
// repeated errors, so a stopped cluster does not flood the terminal.
type logger struct {
	mu   sync.Mutex
	w    io.Writer
	last map[string]time.Time
	now  func() time.Time
}

func newLogger(w io.Writer) *logger {
	if w == nil {
		w = io.Discard
	}
	return &logger{w: w, last: map[string]time.Time{}, now: time.Now}
}

// printf writes one timestamped line.
func (l *logger) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.line(format, args...)
}

func (l *logger) line(format string, args ...any) {
	// One event, one line: joined errors (sarama's per-topic ones) span lines.
	msg := strings.ReplaceAll(strings.TrimRight(fmt.Sprintf(format, args...), "\n"), "\n", "; ")
	fmt.Fprintf(l.w, "%s sandbox: %s\n", l.now().Format("15:04:05"), msg)
}

// errorf writes a line unless a line with the same key was written within
// errorEvery.
func (l *logger) errorf(key, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if t, ok := l.last[key]; ok && now.Sub(t) < errorEvery {
		return
	}
	l.last[key] = now
	l.line(format, args...)
}

// block writes text as is, such as the start-up instructions.
func (l *logger) block(text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	io.WriteString(l.w, text)
}

// writer returns a writer whose writes are serialised with the logger's
// lines.
func (l *logger) writer() io.Writer { return lockedWriter{l} }

type lockedWriter struct{ l *logger }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	return w.l.w.Write(p)
}
