package poll

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// ErrTimeout wraps the error of an Until whose deadline passed first.
var ErrTimeout = errors.New("timed out")

// ErrStopped wraps the error of an Until whose Stop channel closed first.
var ErrStopped = errors.New("stopped waiting")

// Check is one look at the awaited condition: done when it holds; why,
// when it does not, says what is still missing (for progress and for the
// timeout's error); a non-nil err ends the wait at once with it.
type Check func(ctx context.Context) (done bool, why string, err error)

// Wait says what Until waits for and how.
type Wait struct {
	// What is awaited, for errors: "the mirror to drain".
	What string
	// Every is the pause between two checks (100 ms when zero).
	Every time.Duration
	// Within bounds the wait (none when zero: as long as ctx allows).
	Within time.Duration
	// Stop, when it closes, ends the wait (an operator's first Ctrl-C).
	Stop <-chan struct{}
	// Progress, when set, hears every why that differs from the one
	// before, and how long the wait has lasted.
	Progress func(why string, waited time.Duration)
}

// Until checks c at once and then every w.Every until it holds (nil), c
// fails (its error), ctx ends (ctx's error), w.Stop closes (ErrStopped) or
// w.Within passes (an error wrapping ErrTimeout that names w.What and c's
// last why).
func Until(ctx context.Context, w Wait, c Check) error {
	var deadline <-chan time.Time
	if w.Within > 0 {
		t := time.NewTimer(w.Within)
		defer t.Stop()
		deadline = t.C
	}
	every := w.Every
	if every <= 0 {
		every = 100 * time.Millisecond
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	start := time.Now()
	last := ""
	for {
		done, why, err := c(ctx)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if why != last && w.Progress != nil {
			w.Progress(why, time.Since(start))
		}
		last = why
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", w.What, ctx.Err())
		case <-w.Stop:
			return fmt.Errorf("%w for %s", ErrStopped, w.What)
		case <-deadline:
			if last == "" {
				return fmt.Errorf("%w after %s waiting for %s", ErrTimeout, w.Within, w.What)
			}
			return fmt.Errorf("%w after %s waiting for %s: %s", ErrTimeout, w.Within, w.What, last)
		case <-tick.C:
		}
	}
}

// Backoff spaces the attempts of a supervisor: each Wait waits longer
// than the one before, from Initial up to Max. The zero value waits 1 s
// doubling to 10 s.
type Backoff struct {
	Initial, Max time.Duration
	next         time.Duration
}

// Next returns the wait before the next attempt and lengthens the one
// after it.
func (b *Backoff) Next() time.Duration {
	initial, maxWait := b.Initial, b.Max
	if initial <= 0 {
		initial = time.Second
	}
	if maxWait <= 0 {
		maxWait = 10 * time.Second
	}
	if b.next < initial {
		b.next = initial
	}
	d := b.next
	b.next = min(2*b.next, maxWait)
	return d + time.Duration(rand.Int64N(int64(d)/5+1))
}

// Reset makes the next wait Initial again.
func (b *Backoff) Reset() { b.next = 0 }

// Wait waits Next, or until ctx ends (false then).
func (b *Backoff) Wait(ctx context.Context) bool {
	t := time.NewTimer(b.Next())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
