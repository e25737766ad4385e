package mirror

import (
	"math"
	"slices"
	"time"

	"github.com/drctl/drctl/internal/offsetcommit"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

// Progress checkpoints: when a shard writes them. What a checkpoint holds
// and how a read of the progress replays the offset map's batches after
// it are the link's state: linkstate/progress.go.
//
// An exactly-once shard adds its progress to a transaction
// (AddOffsetsToTxn and TxnOffsetCommit, two more round trips, and the
// group's commit marker) only when a checkpoint is due: at most every
// Options.ProgressEvery, in the first transaction that copies a partition
// the shard started, in a transaction that only moves progress, and in one
// more transaction once the shard goes idle. A shard that stops writes
// none: a stop must not wait for the target, and the next reader replays
// what the last checkpoint does not hold.
//
// A checkpoint includes every partition the shard owns whose progress
// moved since its last checkpoint, and, every checkpointRefresh, every
// partition it owns: so a report's replay stays short (linkstate replays
// a bounded window).
//
// A checkpoint is one commit request, which the group coordinator writes
// as one batch and Kafka refuses above __consumer_offsets'
// max.message.bytes (internal/offsetcommit): a shard of thousands of
// partitions could never commit one, and would restart for ever. So a
// checkpoint holds at most Options.MaxCheckpointBytes of estimated entries
// (ckptEntryBytes). The partitions a transaction touched must all be in
// it (the first copy of a partition since the shard started it must be
// checkpointed: a replay only follows partitions it has a checkpoint of),
// so a transaction stops taking records of further partitions when their
// entries would not fit (txn.ckptFull) and the next one starts with the
// record that did not fit. The other partitions fill the room left, those
// with the oldest checkpoints first; the rest wait for a later checkpoint,
// which a resume's replay makes up for meanwhile. A progress-only
// transaction takes as many partitions as fit (boundedCheckpoint).

// checkpointRefresh is how often a shard's checkpoint includes every
// partition it owns, moved or not (at least 10 checkpoint intervals).
func checkpointRefresh(every time.Duration) time.Duration {
	return max(10*every, 10*time.Second)
}

// checkpointDue reports whether t's commit writes a checkpoint. A
// transaction without records (progressOnly) always does.
func (s *shard) checkpointDue(t *txn, progressOnly bool) bool {
	o := s.e.opts
	if o.Delivery != topology.ExactlyOnce || o.ProgressEvery <= 0 || progressOnly {
		return true
	}
	if time.Since(s.ckptAt) >= o.ProgressEvery {
		return true
	}
	for tp := range t.next {
		if p, ok := s.parts[tp]; !ok || p.ckptAt.IsZero() {
			return true
		}
	}
	return false
}

// maxTopicName is the longest topic name Kafka allows.
const maxTopicName = 249

// ckptEntryBytes bounds what a checkpoint entry of a partition of topic
// takes in the coordinator's batch.
func (s *shard) ckptEntryBytes(topic string) int {
	return offsetcommit.RecordBytes(s.progressGroup, topic, linkstate.MaxProgressMetadata)
}

// boundedCheckpoint returns cands, or those of them whose entries fit
// room bytes, the partitions with the oldest checkpoints (none first)
// before the others.
func (s *shard) boundedCheckpoint(cands []topology.TopicPartition, room int) []topology.TopicPartition {
	total := 0
	for _, tp := range cands {
		total += s.ckptEntryBytes(tp.Topic)
	}
	if total <= room {
		return cands
	}
	ckptAt := func(tp topology.TopicPartition) time.Time {
		if p, ok := s.parts[tp]; ok {
			return p.ckptAt
		}
		return time.Time{}
	}
	slices.SortFunc(cands, func(a, b topology.TopicPartition) int { return ckptAt(a).Compare(ckptAt(b)) })
	for i, tp := range cands {
		if room -= s.ckptEntryBytes(tp.Topic); room < 0 {
			return cands[:i]
		}
	}
	return cands
}

// checkpoint is the progress a commit writes: t's partitions with the
// progress t commits, and every other partition the shard owns whose
// committed progress its last checkpoint does not hold (or, every
// checkpointRefresh, with any progress), exactly-once as many of them as
// fit MaxCheckpointBytes. mapPos is the offset just after t's batch in the
// offset map (-1: unknown).
func (s *shard) checkpoint(t *txn, mapPos int64) map[topology.TopicPartition]linkstate.Progress {
	out := make(map[topology.TopicPartition]linkstate.Progress, len(t.next))
	for tp, n := range t.next {
		lastTs := t.tsOf[tp]
		if p, ok := s.parts[tp]; ok {
			lastTs = max(lastTs, p.lastTs)
		}
		out[tp] = linkstate.Progress{Next: n, LastTs: lastTs, MapPart: s.offPar, MapPos: mapPos, TopicID: s.e.topicID(tp.Topic)}
	}
	refresh := time.Since(s.refreshedCkpt) >= checkpointRefresh(s.e.opts.ProgressEvery)
	var others []topology.TopicPartition
	for tp, p := range s.parts {
		if _, ok := out[tp]; ok || p.next < 0 {
			continue
		}
		if refresh || p.ckptAt.IsZero() || p.ckptNext != p.next {
			others = append(others, tp)
		}
	}
	room := math.MaxInt // at-least-once commits progress in as many requests as it takes
	if s.e.opts.Delivery == topology.ExactlyOnce {
		room = s.e.opts.MaxCheckpointBytes - t.ckptBytes
	}
	for _, tp := range s.boundedCheckpoint(others, room) {
		p := s.parts[tp]
		out[tp] = linkstate.Progress{Next: p.next, LastTs: p.lastTs, MapPart: s.offPar, MapPos: mapPos, TopicID: s.e.topicID(tp.Topic)}
	}
	return out
}

// checkpointed records what a committed checkpoint wrote. A refresh is
// done once every partition with progress was checkpointed since it fell
// due: at once when one checkpoint holds them all, over several (oldest
// first) when they do not fit one.
func (s *shard) checkpointed(ck map[topology.TopicPartition]linkstate.Progress, at time.Time) {
	s.ckptAt = at
	due := s.refreshedCkpt.Add(checkpointRefresh(s.e.opts.ProgressEvery))
	full := !at.Before(due)
	for tp, p := range s.parts {
		if pe, ok := ck[tp]; ok {
			p.ckptNext, p.ckptAt = pe.Next, at
		}
		full = full && (p.next < 0 || !p.ckptAt.Before(due))
	}
	if full {
		s.refreshedCkpt = at
	}
}

// owed returns, when a checkpoint is due for an idle shard, the committed
// progress of the partitions its last checkpoint does not hold (nil when
// none, or not due yet).
func (s *shard) owed() map[topology.TopicPartition]int64 {
	o := s.e.opts
	if o.Delivery != topology.ExactlyOnce || o.ProgressEvery <= 0 || time.Since(s.ckptAt) < o.ProgressEvery {
		return nil
	}
	var cands []topology.TopicPartition
	for tp, p := range s.parts {
		if p.next >= 0 && !p.ckptAt.IsZero() && p.ckptNext != p.next {
			cands = append(cands, tp)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	out := map[topology.TopicPartition]int64{}
	for _, tp := range s.boundedCheckpoint(cands, o.MaxCheckpointBytes) {
		out[tp] = s.parts[tp].next
	}
	return out
}
