package kafkaread

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

var fast = Policy{First: time.Millisecond, Max: 2 * time.Millisecond, Tries: 4}

func TestRetryRetriesTransientErrors(t *testing.T) {
	var seen []int
	v, err := Retry(context.Background(), fast, func(attempt int) (string, error) {
		seen = append(seen, attempt)
		if attempt < 2 {
			return "", sarama.ErrNotLeaderForPartition
		}
		return "ok", nil
	})
	if err != nil || v != "ok" || len(seen) != 3 || seen[0] != 0 || seen[2] != 2 {
		t.Fatalf("got %q, %v after attempts %v; want ok after 0,1,2", v, err, seen)
	}
}

func TestRetryStopsAtAFinalError(t *testing.T) {
	for _, tc := range []struct{ returned, want error }{
		{sarama.ErrUnknownTopicOrPartition, sarama.ErrUnknownTopicOrPartition},
		{sarama.ErrProducerFenced, sarama.ErrProducerFenced},
		{MarkFinal(sarama.ErrNotLeaderForPartition), sarama.ErrNotLeaderForPartition},
	} {
		n := 0
		err := Do(context.Background(), fast, func(int) error { n++; return tc.returned })
		var fe finalError
		if n != 1 || !errors.Is(err, tc.want) || err.Error() != tc.want.Error() || errors.As(err, &fe) {
			t.Errorf("%v: %d attempts, error %v (%T); want one attempt and %v itself", tc.returned, n, err, err, tc.want)
		}
	}
}

func TestRetryGivesUpWhenTheBudgetRunsOut(t *testing.T) {
	n := 0
	err := Do(context.Background(), fast, func(int) error { n++; return sarama.ErrOffsetsLoadInProgress })
	if n != 4 || !errors.Is(err, sarama.ErrOffsetsLoadInProgress) || !strings.Contains(err.Error(), "gave up after 4 attempts") {
		t.Fatalf("%d attempts, error %v; want 4 and a gave-up error wrapping the last one", n, err)
	}

	within := Policy{First: 5 * time.Millisecond, Max: 5 * time.Millisecond, Elapsed: 60 * time.Millisecond}
	n, start := 0, time.Now()
	err = Do(context.Background(), within, func(int) error { n++; return sarama.ErrLeaderNotAvailable })
	took := time.Since(start)
	if n < 3 || took > 2*time.Second || !errors.Is(err, sarama.ErrLeaderNotAvailable) || !strings.Contains(err.Error(), "gave up") {
		t.Fatalf("%d attempts in %v, error %v; want several within about 60ms", n, took, err)
	}
}

func TestRetryEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	slow := Policy{First: time.Hour, Max: time.Hour}
	failed, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- Do(ctx, slow, func(attempt int) error {
			if attempt == 0 {
				close(failed)
			}
			return sarama.ErrNotCoordinatorForConsumer
		})
	}()
	<-failed
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !errors.Is(err, sarama.ErrNotCoordinatorForConsumer) {
			t.Fatalf("error %v; want the context's and the last one", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Retry did not return when its context ended")
	}
}

func TestPolicyPause(t *testing.T) {
	p := Policy{First: 50 * time.Millisecond, Max: time.Second}
	ms := time.Millisecond
	for n, want := range []time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second} {
		if got := p.Pause(n); got != want {
			t.Errorf("pause(%d) = %v, want %v", n, got, want)
		}
	}
	if got := p.Pause(200); got != time.Second {
		t.Errorf("pause(200) = %v, want the maximum", got)
	}
}
