package mirror

import (
	"fmt"
	"time"

	"github.com/drctl/drctl/topology"
)

// targetReset handles a target that lost its data (restarted empty on the
// same address: a new cluster id, or drctl's internal topics gone). The
// link restarts from scratch: its internal topics are created again and,
// the progress being gone with them, every partition is copied again from
// the source's earliest offset. It is logged, counted, kept for Troubles
// and written to the ends topic for status, never silent.
//
// id is the target's cluster id the reset is for: the link's restart that
// follows finds the new id again and must not count the same loss twice.
func (e *Engine) targetReset(why, id string) {
	note := fmt.Sprintf("%s at %s: internal topics rebuilt, every partition re-seeded from the source's earliest offset",
		why, time.Now().UTC().Format(time.RFC3339))
	e.mu.Lock()
	e.resetNote = note
	e.resetFor = id
	for tp := range e.blocked {
		e.setBlockedGaugeLocked(tp)
	}
	e.blocked = map[topology.TopicPartition]blockedPart{}
	e.trouble, e.warnedTopics = map[topology.TopicPartition]string{}, map[string]string{}
	e.progress = map[topology.TopicPartition]int64{}
	e.stable = map[topology.TopicPartition]int64{}
	e.byShard, e.synced = map[int32][]topology.TopicPartition{}, false
	e.mu.Unlock()
	e.metrics.Safety.TargetResets.WithLabelValues(e.link.String()).Inc()
	e.log.Error("the target lost its data; rebuilding the link and re-seeding from the source's earliest offsets", "why", why)
}

// resetAlready reports whether the target's loss seen as cluster id id was
// handled already (see targetReset).
func (e *Engine) resetAlready(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.resetFor == id
}

// ResetNote says when and why the link was last rebuilt because its target
// lost its data ("" when never, in this process).
func (e *Engine) ResetNote() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.resetNote
}
