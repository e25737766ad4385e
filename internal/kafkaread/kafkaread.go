package kafkaread

import (
	"context"
	"errors"
	"time"

	"github.com/IBM/sarama"
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

// retriable reports whether a failed request may succeed when sent again,
// possibly to another broker after a metadata refresh: leadership moves,
// replicas catching up, and network errors. Context ends and a closed
// client are final.
func retriable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, sarama.ErrClosedClient) {
		return false
	}
	var kerr sarama.KError
	if errors.As(err, &kerr) {
		switch kerr {
		case sarama.ErrNotLeaderForPartition, sarama.ErrLeaderNotAvailable,
			sarama.ErrReplicaNotAvailable, sarama.ErrFencedLeaderEpoch,
			sarama.ErrUnknownLeaderEpoch, sarama.ErrOffsetNotAvailable,
			sarama.ErrRequestTimedOut, sarama.ErrNetworkException,
			sarama.ErrKafkaStorageError, sarama.ErrNotController:
			return true
		}
		return false
	}
	// Not a Kafka error code: a broken or refused connection, or a
	// response that did not arrive in time.
	return true
}

// retryPolicy bounds how long one operation keeps retrying retriable
// errors, on top of the context: attempts, and the pause between them.
const (
	maxAttempts  = 6
	firstBackoff = 50 * time.Millisecond
	maxBackoff   = time.Second
)

func backoff(attempt int) time.Duration {
	d := firstBackoff << attempt
	if d <= 0 || d > maxBackoff {
		return maxBackoff
	}
	return d
}
