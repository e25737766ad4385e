package kafkaread

import (
	"context"
	"time"
)

// Await runs fn and returns its result, or the context's error as soon as
// ctx ends, whichever comes first. sarama's requests cannot be cancelled:
// an abandoned fn keeps running to completion in the background, bounded
// by the client's timeouts, and its result is dropped.
func Await[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := fn()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// Sleep waits for d or until ctx ends, and reports ctx's error in that case.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
