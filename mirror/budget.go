package mirror

import "sync"

// budget bounds the bytes of source records an engine holds between their
// fetch and the acknowledgement of their copy (or the end of the
// transaction that takes them, for a record not sent), over all its
// shards, whatever the number of partitions. The shards' consumers fetch
// ahead (each response is bounded on its own); a record is admitted to its
// shard's buffer only once the budget has room for it, so a slow target
// makes the consumers wait instead of piling records up in memory.
//
// A record larger than the whole budget is admitted when nothing else is
// held, so that it can never wait for ever.
type budget struct {
	mu    sync.Mutex
	total int64
	held  int64
	freed chan struct{} // closed and replaced when bytes are released and waited
	// waited: an acquire waits on freed. A release replaces freed only
	// then: a release per record copied made a channel per record.
	waited bool
}

func newBudget(total int64) *budget {
	return &budget{total: total, freed: make(chan struct{})}
}

// acquire takes n bytes, waiting until they fit. It returns false, having
// taken nothing, when stop is closed first.
func (b *budget) acquire(n int64, stop <-chan struct{}) bool {
	for {
		b.mu.Lock()
		if b.held+n <= b.total || b.held == 0 {
			b.held += n
			b.mu.Unlock()
			return true
		}
		freed := b.freed
		b.waited = true
		b.mu.Unlock()
		select {
		case <-freed:
		case <-stop:
			return false
		}
	}
}

// release gives n bytes back.
func (b *budget) release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.held -= n
	if b.waited {
		close(b.freed)
		b.freed = make(chan struct{})
		b.waited = false
	}
	b.mu.Unlock()
}
