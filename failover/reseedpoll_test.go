package failover

import (
	"testing"
	"time"
)

// TestReseedPollFollowsTheCopysEnd: the wait for a reseed looks at the lag
// again about when the copy should end, within 100 ms to 500 ms, and not
// sooner than its own look took.
func TestReseedPollFollowsTheCopysEnd(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name                string
		prevLag, lag        int64
		between, took, want time.Duration
	}{
		{"first look", -1, 120_000, 0, 50 * ms, 500 * ms},
		{"lag not moving", 5_000, 5_000, 500 * ms, 50 * ms, 500 * ms},
		{"lag growing", 5_000, 6_000, 500 * ms, 50 * ms, 500 * ms},
		{"far from the end", 100_000, 80_000, 500 * ms, 50 * ms, 500 * ms},
		{"ends in about 250 ms", 30_000, 10_000, 500 * ms, 50 * ms, 250 * ms},
		{"ends any moment", 30_000, 100, 500 * ms, 50 * ms, 100 * ms},
		{"caught up, not yet past the goal", 3_000, 0, 500 * ms, 50 * ms, 100 * ms},
		{"a slow look sets the floor", 30_000, 100, 500 * ms, 300 * ms, 300 * ms},
		{"a look slower than the ceiling", 30_000, 10_000, 500 * ms, 2 * time.Second, 500 * ms},
	} {
		if got := reseedPoll(c.prevLag, c.lag, c.between, c.took); got != c.want {
			t.Errorf("%s: reseedPoll(%d, %d, %v, %v) = %v, want %v", c.name, c.prevLag, c.lag, c.between, c.took, got, c.want)
		}
	}
}
