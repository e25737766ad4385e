package offsettranslate

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// ErrInconsistent is wrapped by every error about map content that breaks
// the mirror's ordering guarantees: a run that is empty, negative or
// overflowing, or that goes backwards in source or target offsets.
var ErrInconsistent = errors.New("offset map is inconsistent")

// Run says that source offsets [Source, Source+Count) were copied to target
// offsets [Target, Target+Count), one to one and in order. Count is at
// least 1.
type Run struct {
	Source, Target, Count int64
}

// SourceEnd is the source offset just after the run.
func (r Run) SourceEnd() int64 { return r.Source + r.Count }

// TargetEnd is the target offset just after the run.
func (r Run) TargetEnd() int64 { return r.Target + r.Count }

// Pair is one copied record: its offset on the source and the offset the
// target gave it.
type Pair struct {
	Source, Target int64
}

// RunsFrom builds the maximal runs of pairs, taken in the given order: a
// pair extends the current run when both its offsets follow the run's last
// ones by exactly one, and starts a new run otherwise. The mirror calls it
// with the (source offset, target offset) of every record of one partition
// that a transaction copied, in target order, as the producer's
// acknowledgements returned them. Pairs out of order yield runs that
// Entry.Validate rejects; RunsFrom itself never fails. It returns nil for
// no pairs.
func RunsFrom(pairs []Pair) []Run {
	var runs []Run
	for _, p := range pairs {
		if n := len(runs); n > 0 {
			last := &runs[n-1]
			if p.Source == last.SourceEnd() && p.Target == last.TargetEnd() {
				last.Count++
				continue
			}
		}
		runs = append(runs, Run{Source: p.Source, Target: p.Target, Count: 1})
	}
	return runs
}

// Entry is what one mirror transaction wrote for one source partition.
type Entry struct {
	Topic     string
	Partition int32
	// Runs are the records copied, in source and target order. It may be
	// empty: the transaction only moved past source offsets that hold no
	// record to copy (transaction markers, aborted records, compacted
	// records).
	Runs []Run
	// SourceNext is the next source offset the mirror reads after this
	// transaction. It is at least the end of the last run, and past it when
	// the source offsets after the last copied record were holes.
	SourceNext int64
}

// Validate checks the entry on its own: a legal topic name, a partition,
// runs that are non-empty, non-negative, free of overflow and in increasing
// order of both source and target offsets without overlap (a run starts at
// or after the end of the previous one), and a SourceNext at or after the
// end of the last run. Errors wrap ErrInconsistent.
func (e Entry) Validate() error {
	if err := validTopic(e.Topic); err != nil {
		return fmt.Errorf("entry: %w: %w", ErrInconsistent, err)
	}
	if e.Partition < 0 {
		return fmt.Errorf("entry %s/%d: %w: negative partition", e.Topic, e.Partition, ErrInconsistent)
	}
	var sourceEnd, targetEnd int64
	for i, r := range e.Runs {
		switch {
		case r.Count < 1:
			return fmt.Errorf("entry %s/%d: run %d %+v: %w: count below 1", e.Topic, e.Partition, i, r, ErrInconsistent)
		case r.Source < sourceEnd || r.Target < targetEnd:
			return fmt.Errorf("entry %s/%d: run %d %+v: %w: starts before the end of the previous run (source %d, target %d)",
				e.Topic, e.Partition, i, r, ErrInconsistent, sourceEnd, targetEnd)
		case r.Count > math.MaxInt64-r.Source || r.Count > math.MaxInt64-r.Target:
			return fmt.Errorf("entry %s/%d: run %d %+v: %w: offsets overflow", e.Topic, e.Partition, i, r, ErrInconsistent)
		}
		sourceEnd, targetEnd = r.SourceEnd(), r.TargetEnd()
	}
	if e.SourceNext < sourceEnd {
		return fmt.Errorf("entry %s/%d: %w: next source offset %d is before the end of the last run %d",
			e.Topic, e.Partition, ErrInconsistent, e.SourceNext, sourceEnd)
	}
	return nil
}

// Batch is the content of one record of the offsets topic: what one shard's
// transaction copied, per source partition.
type Batch struct {
	// Shard is the mirror shard that wrote the batch (not negative).
	Shard int32
	// Entries hold at most one entry per partition in practice; the
	// readers accept several and apply them in order.
	Entries []Entry
	// CommittedAtMs is the writer's clock, in Unix milliseconds, just
	// before it committed. It is informational only.
	CommittedAtMs int64
}

// Validate checks every entry (see Entry.Validate) and the shard number.
// EncodeBatch expects a valid batch; DecodeBatch only returns valid ones.
func (b Batch) Validate() error {
	if b.Shard < 0 {
		return fmt.Errorf("batch of shard %d: %w: negative shard", b.Shard, ErrInconsistent)
	}
	for i, e := range b.Entries {
		if err := e.Validate(); err != nil {
			return fmt.Errorf("batch of shard %d: entry %d: %w", b.Shard, i, err)
		}
	}
	return nil
}

// The offsets topic of a link (topology.Link.OffsetsTopic) lives on the
// target and is drctl's own, so it is never mirrored. Its records carry the
// shard number as a decimal string for key (ShardKey) and EncodeBatch's
// output for value. The readers rely on the value alone and read every
// partition of the topic.
//
// Retention decides how far back translation stays exact: a source position
// whose batches were deleted translates as BeforeStart. Keep the topic at
// least as long as the source keeps its data, and never compact it (the
// key names a shard, not a state).
//
// Entries of one source partition are read in order when all of them sit in
// one partition of the topic, which holds as long as the partition→shard
// mapping does not change. After a change of shard count they may sit in two
// partitions, one after the other (the old shards are fenced before the new
// ones start); Load puts the two stretches in order by source offset and
// treats stretches that interleave as an inconsistent map. See Follower
// for a long-running reader.

// ShardKey is the record key of shard's batches in the offsets topic.
func ShardKey(shard int32) []byte {
	return strconv.AppendInt(nil, int64(shard), 10)
}

// maxTopicLen is Kafka's limit on a topic name's length.
const maxTopicLen = 249

// validTopic accepts what Kafka accepts as a topic name: 1 to 249
// characters from [a-zA-Z0-9._-], and neither "." nor "..".
func validTopic(name string) error {
	if name == "" || len(name) > maxTopicLen || name == "." || name == ".." {
		return fmt.Errorf("illegal topic name %q", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("illegal topic name %q", name)
		}
	}
	return nil
}
