package aclsync

import (
	"testing"
	"time"
)

// TestLatenessWarnsOnceAfterItsTime: of consecutive rounds whose fence the
// standby does not show yet, the first is told, the rest are quiet until
// they have lasted the warning's time, which is warned about once.
func TestLatenessWarnsOnceAfterItsTime(t *testing.T) {
	var l lateness
	at := time.Date(2026, 12, 4, 22, 0, 0, 0, time.UTC)
	for i, c := range []struct {
		after time.Duration
		want  int
	}{
		{0, lateFirst},
		{17 * time.Second, lateQuiet},
		{59 * time.Second, lateQuiet},
		{time.Minute, lateTooLong},
		{2 * time.Minute, lateQuiet},
	} {
		if got := l.note(at.Add(c.after), time.Minute); got != c.want {
			t.Errorf("round %d, %v after the first: %d, want %d", i, c.after, got, c.want)
		}
	}
	l = lateness{} // a round that did not meet it starts afresh
	if got := l.note(at.Add(time.Hour), time.Minute); got != lateFirst {
		t.Errorf("after a reset: %d, want %d (the first)", got, lateFirst)
	}
}
