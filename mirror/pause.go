package mirror

import (
	"context"
	"time"
)

// SetPaused makes the engine hold the pause id (stop copying, go on
// observing the source's ends), or copy again with "". The daemon calls it
// with what it reads from the clusters (linkstate.Pauses).
func (e *Engine) SetPaused(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.paused = id
}

// PausedBy returns the pause the engine holds ("": none).
func (e *Engine) PausedBy() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.paused
}

// holdPaused is one pass of a paused shard: it copies nothing (records
// already fetched wait in its buffer, and the source consumer stops
// fetching once that is full) but reads the source's ends and records
// them, marked with the pause, until the next tick. It reports whether ctx
// ended.
func (s *shard) holdPaused(ctx context.Context, tick <-chan time.Time) bool {
	if id := s.e.PausedBy(); id != s.holding {
		s.holding = id
		s.lastObserved = time.Time{} // record the pause at once
		s.log.Info("copying paused", "pause", id)
	}
	if time.Since(s.lastStable) >= s.e.opts.IdleCheck {
		if _, err := s.refreshStable(ctx); err != nil {
			warn(ctx, s.log, "cannot read source end offsets", "err", err)
		}
	}
	s.observe(ctx)
	select {
	case <-ctx.Done():
		return true
	case <-tick:
		if s.e.PausedBy() == "" {
			s.holding = ""
			s.lastObserved = time.Time{}
			s.log.Info("copying resumed")
		}
		return false
	}
}
