package kafkaread

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Policy bounds how an operation that failed with a Transient error is
// tried again. Pauses start at First and double up to Max, each varied by
// ±20% so that processes that failed together do not retry in step.
type Policy struct {
	First, Max time.Duration
	// Tries bounds the attempts in all; 0 leaves them to Elapsed and the
	// context.
	Tries uint
	// Elapsed bounds the time after the first attempt within which a retry
	// may start; 0 leaves it to Tries and the context.
	Elapsed time.Duration
}

var (
	// Brief is for a request whose leader or controller moved: six
	// attempts, pauses from 50 ms to 1 s, about 2.5 s in all — so that a
	// cluster that is down is reported quickly.
	Brief = Policy{First: 50 * time.Millisecond, Max: time.Second, Tries: 6}
	// Patient is for group coordinators that move or load (a broker
	// restart; a new group on real Kafka answers NOT_COORDINATOR at first)
	// and topics whose partitions await a leader: pauses from 50 ms to 1 s
	// for up to 10 s.
	Patient = Policy{First: 50 * time.Millisecond, Max: time.Second, Elapsed: 10 * time.Second}
)

// Retry runs op until it succeeds, fails with an error that Classify does
// not call Transient, the policy's budget runs out, or ctx ends, and
// returns op's last result. op gets the attempt number, from 0: an attempt
// after a failure looks the leader or coordinator up anew. Which errors are
// retried is Classify's decision alone; op marks one of its own errors
// final with MarkFinal.
//
// The error is op's last error, as it returned it (MarkFinal's mark
// removed); when the budget ran out it says after how many attempts; when
// ctx ended it wraps both ctx's error and op's last one.
//
// The pauses come from github.com/cenkalti/backoff/v5 (exponential, with
// jitter, cancelled by ctx): one well-kept implementation instead of a
// loop of its own at each call site.
func Retry[T any](ctx context.Context, p Policy, op func(attempt int) (T, error)) (T, error) {
	attempt := 0
	var last error
	final := false
	start := time.Now()
	v, err := backoff.Retry(ctx, func() (T, error) {
		v, err := op(attempt)
		attempt++
		if err == nil {
			return v, nil
		}
		last = err
		if Classify(err) != Transient {
			final = true
			return v, backoff.Permanent(err)
		}
		return v, err
	}, backoff.WithBackOff(p.backOff()), backoff.WithMaxTries(p.Tries), backoff.WithMaxElapsedTime(p.Elapsed))
	if err == nil {
		return v, nil
	}
	err, last = unmark(err), unmark(last)
	switch {
	case ctx.Err() != nil && last != nil && !errors.Is(last, ctx.Err()):
		return v, fmt.Errorf("%w (last error: %w)", ctx.Err(), last)
	case !final && ctx.Err() == nil:
		return v, fmt.Errorf("gave up after %d attempts in %v: %w", attempt, time.Since(start).Round(time.Millisecond), err)
	}
	return v, err
}

// Do is Retry for an operation without a result.
func Do(ctx context.Context, p Policy, op func(attempt int) error) error {
	_, err := Retry(ctx, p, func(attempt int) (struct{}, error) { return struct{}{}, op(attempt) })
	return err
}

// unmark removes MarkFinal's mark from the top of err.
func unmark(err error) error {
	if fe, ok := err.(finalError); ok { //nolint:errorlint // only the mark an op put on top
		return fe.err
	}
	return err
}

func (p Policy) backOff() *backoff.ExponentialBackOff {
	return &backoff.ExponentialBackOff{
		InitialInterval:     p.First,
		RandomizationFactor: 0.2,
		Multiplier:          2,
		MaxInterval:         p.Max,
	}
}

// Pause is the policy's pause before attempt n+1 (n from 0), without
// jitter: for waits that are not retries of an error, such as a read that
// made no progress, and for loops that go on after an error rather than
// give up (the mirror's fetcher backs a failing partition off by it).
func (p Policy) Pause(n int) time.Duration {
	d := p.First
	for range n {
		d *= 2
		if d <= 0 || d >= p.Max {
			return p.Max
		}
	}
	return min(d, p.Max)
}
