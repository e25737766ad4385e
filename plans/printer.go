package plans

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Printer is the hook that writes progress lines for people:
//
//	Run r1: failover, 9 steps
//	[1/9] Check both clusters ... done (0.4s)
//	[2/9] Drain the mirror ...
//	      12,345 records, 3.2 s left (40%)
//	[2/9] Drain the mirror ... done (5.1s): 0 records left
//	[3/9] Fence east against writes ... failed (1.2s): ...
//	Run r1 failed at step 3/9 (fence-active).
//	To finish the run later: drctl resume r1
//
// It writes plain lines (no cursor movement), so the same output reads well
// on a terminal, in a log and in CI.
type Printer struct {
	// Every is the least time between two progress lines of one step;
	// 0 means 2s, a negative value prints every one.
	Every time.Duration
	// Resume, if set, is printed when a run stops before its end, e.g.
	// "drctl resume r1".
	Resume string
	// ChangesNothing, if set, names the steps that only read or ask: a
	// run that stopped before any other step started changed nothing, and
	// the Resume line is replaced by saying so.
	ChangesNothing func(step string) bool

	mu       sync.Mutex
	changed  bool // a step that changes something started (or the run resumed)
	w        io.Writer
	open     bool // a "[i/n] title ..." line waits for its result
	runStart time.Time
	progStep int
	progAt   time.Time
}

// NewPrinter returns a Printer writing to w.
func NewPrinter(w io.Writer) *Printer { return &Printer{w: w, progStep: -1} }

// Handle prints e.
func (p *Printer) Handle(_ context.Context, e Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	head := fmt.Sprintf("[%d/%d] %s", e.Index+1, e.Total, e.Title)
	if e.Rerun {
		head += " (again)"
	}
	head += " ..."
	switch e.Type {
	case EventRunStarted:
		p.runStart = e.Time
		fmt.Fprintf(&b, "Run %s: %s, %d %s", e.RunID, e.Kind, e.Total, plural(e.Total, "step", "steps"))
		if e.Index > 0 {
			p.changed = true // an earlier drctl may have changed something
			fmt.Fprintf(&b, ", resuming at step %d", e.Index+1)
		}
		b.WriteString("\n")
	case EventStepStarted:
		if p.ChangesNothing == nil || !p.ChangesNothing(e.Name) {
			p.changed = true
		}
		b.WriteString(p.closeLine())
		b.WriteString(head)
		p.open = true
	case EventStepProgress:
		every := p.Every
		if every == 0 {
			every = 2 * time.Second
		}
		if e.Index == p.progStep && every > 0 && e.Time.Sub(p.progAt) < every {
			return nil
		}
		p.progStep, p.progAt = e.Index, e.Time
		b.WriteString(p.closeLine())
		indent := strings.Repeat(" ", len(fmt.Sprintf("[%d/%d] ", e.Index+1, e.Total)))
		b.WriteString(indent + e.Message)
		if e.Fraction != nil {
			fmt.Fprintf(&b, " (%.0f%%)", *e.Fraction*100)
		}
		b.WriteString("\n")
	case EventStepDone, EventStepFailed:
		if !p.open {
			b.WriteString(head)
		}
		p.open = false
		result := "done"
		if e.Type == EventStepFailed {
			result = "failed"
		}
		fmt.Fprintf(&b, " %s (%s)", result, formatElapsed(e.ElapsedMS))
		if detail := e.Summary + e.Error; detail != "" {
			b.WriteString(": " + detail)
		}
		b.WriteString("\n")
	case EventRunDone:
		b.WriteString(p.closeLine())
		at := fmt.Sprintf("step %d/%d", e.Index+1, e.Total)
		if e.Name != "" {
			at += " (" + e.Name + ")"
		}
		switch e.Outcome {
		case OutcomeSucceeded:
			fmt.Fprintf(&b, "Run %s finished in %s.\n", e.RunID, formatElapsed(e.Time.Sub(p.runStart).Milliseconds()))
		case OutcomeInterrupted:
			if e.Index >= e.Total {
				fmt.Fprintf(&b, "Run %s stopped after its last step (interrupted).\n", e.RunID)
			} else {
				fmt.Fprintf(&b, "Run %s stopped before %s (interrupted).\n", e.RunID, at)
			}
		case OutcomeCancelled:
			fmt.Fprintf(&b, "Run %s cancelled at %s.\n", e.RunID, at)
		case OutcomeFailed:
			fmt.Fprintf(&b, "Run %s failed at %s.\n", e.RunID, at)
		default:
			fmt.Fprintf(&b, "Run %s %s before %s: %s\n", e.RunID, e.Outcome, at, e.Error)
		}
		switch {
		case e.Outcome == OutcomeSucceeded:
		case !p.changed && p.ChangesNothing != nil:
			b.WriteString("Nothing was changed: the run stopped before its first change, and there is nothing to resume.\n")
		case e.Outcome == OutcomeStale:
			// The error says to plan again; a resume would be refused alike.
		case p.Resume != "":
			fmt.Fprintf(&b, "To finish the run later: %s\n", p.Resume)
		}
	}
	_, err := io.WriteString(p.w, b.String())
	return err
}

// closeLine ends an open step line so that another line can follow.
func (p *Printer) closeLine() string {
	if !p.open {
		return ""
	}
	p.open = false
	return "\n"
}

func formatElapsed(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}
