package poll

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestUntilHoldsAtOnce(t *testing.T) {
	calls := 0
	err := Until(context.Background(), Wait{What: "x", Every: time.Hour, Within: time.Hour}, func(context.Context) (bool, string, error) {
		calls++
		return true, "", nil
	})
	if err != nil || calls != 1 {
		t.Fatalf("Until = %v after %d checks; want nil after 1 (checked at once)", err, calls)
	}
}

func TestUntilTimesOutNamingWhatIsMissing(t *testing.T) {
	var heard []string
	start := time.Now()
	err := Until(context.Background(), Wait{What: "the mirror to drain", Every: 5 * time.Millisecond, Within: 50 * time.Millisecond,
		Progress: func(why string, _ time.Duration) { heard = append(heard, why) }}, func(context.Context) (bool, string, error) {
		return false, "orders/0 is 3 records behind", nil
	})
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "the mirror to drain: orders/0 is 3 records behind") {
		t.Fatalf("Until = %v; want a timeout naming what and why", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the timeout of 50 ms took %v", d)
	}
	if len(heard) != 1 {
		t.Errorf("progress heard %q; want the one why once", heard)
	}
}

func TestUntilEndsWithItsContextAndTheCheck(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := Until(ctx, Wait{What: "x", Every: time.Millisecond}, func(context.Context) (bool, string, error) {
		n++
		if n == 3 {
			cancel()
		}
		return false, "", nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Until with its context canceled = %v", err)
	}
	boom := errors.New("boom")
	if err := Until(context.Background(), Wait{What: "x", Every: time.Millisecond}, func(context.Context) (bool, string, error) { return false, "", boom }); !errors.Is(err, boom) {
		t.Errorf("Until with a failing check = %v; want its error", err)
	}
	stop := make(chan struct{})
	close(stop)
	if err := Until(context.Background(), Wait{What: "x", Every: time.Hour, Stop: stop}, func(context.Context) (bool, string, error) { return false, "", nil }); !errors.Is(err, ErrStopped) {
		t.Errorf("Until with its stop closed = %v; want ErrStopped", err)
	}
}

func TestBackoffDoublesToItsMaxAndResets(t *testing.T) {
	b := Backoff{Initial: 100 * time.Millisecond, Max: 400 * time.Millisecond}
	for i, ms := range []int{100, 200, 400, 400} {
		want := time.Duration(ms) * time.Millisecond
		if d := b.Next(); d < want || d > want+want/5 {
			t.Errorf("wait %d = %v; want %v plus at most a fifth", i+1, d, want)
		}
	}
	b.Reset()
	if d := b.Next(); d > 120*time.Millisecond {
		t.Errorf("after Reset the wait is %v; want Initial again", d)
	}
	var zero Backoff
	if d := zero.Next(); d < time.Second || d > 1200*time.Millisecond {
		t.Errorf("the zero Backoff's first wait is %v; want 1 s", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if (&Backoff{Initial: time.Hour}).Wait(ctx) {
		t.Error("Wait with its context ended waited")
	}
}
