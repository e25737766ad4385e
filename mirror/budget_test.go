package mirror

import (
	"testing"
	"time"
)

// TestBudgetWakesItsWaiters: an acquire that waits for room goes on when
// enough is released, over several releases (a release replaces the
// channel waiters wait on only when one waits, so a release that comes
// before the wait and one that comes during it must both count).
func TestBudgetWakesItsWaiters(t *testing.T) {
	b := newBudget(100)
	if !b.acquire(100, nil) {
		t.Fatal("the first acquire failed")
	}
	b.release(10) // no waiter yet: nothing to wake
	got := make(chan bool)
	go func() { got <- b.acquire(40, nil) }()
	select {
	case <-got:
		t.Fatal("acquired 40 with 10 free")
	case <-time.After(50 * time.Millisecond):
	}
	for range 3 {
		b.release(10)
	}
	select {
	case ok := <-got:
		if !ok {
			t.Fatal("acquire failed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter was not woken by the releases that made room")
	}
	b.mu.Lock()
	held := b.held
	b.mu.Unlock()
	if held != 100 {
		t.Fatalf("held %d, want 100", held)
	}
	stop := make(chan struct{})
	close(stop)
	if b.acquire(1, stop) {
		t.Fatal("a full budget admitted a record after stop")
	}
}
