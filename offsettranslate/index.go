package offsettranslate

import (
	"cmp"
	"errors"
	"slices"
	"sync"

	"github.com/drctl/drctl/topology"
)

// PartitionState summarises one partition's map.
type PartitionState struct {
	topology.TopicPartition
	// SourceNext is the mirror's read position (see
	// PartitionMap.SourceNext), -1 when unknown.
	SourceNext int64
	// TargetEnd is the target offset after the last mirrored record, -1
	// when none.
	TargetEnd int64
	// Runs is the number of merged runs the map holds.
	Runs int
	// Err is non-nil when the map is inconsistent; it then translates
	// every position as Unmapped.
	Err error
}

// Index holds the offset maps of every partition a link mirrors. Its zero
// value is empty and ready to use; it is safe for concurrent use (one
// writer adds while others translate).
type Index struct {
	mu   sync.RWMutex
	maps map[topology.TopicPartition]*PartitionMap
}

// Add adds every entry of b to its partition's map, in order (see
// PartitionMap.Add). An entry a map rejects does not stop the others: the
// error joins one error per partition that became inconsistent, each
// wrapping ErrInconsistent. Later entries of an inconsistent partition are
// dropped without a further error; Partitions reports its state.
func (x *Index) Add(b Batch) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	var errs []error
	for _, e := range b.Entries {
		errs = append(errs, x.addLocked(e))
	}
	return errors.Join(errs...)
}

// staging collects what one read of the offsets topic found, one map
// segment per source partition and partition of the offsets topic, before
// it goes into an Index all at once.
type staging struct {
	segs map[segmentKey]*PartitionMap
}

type segmentKey struct {
	offsetsPartition int32
	tp               topology.TopicPartition
}

// add records a batch read from a partition of the offsets topic, whose
// batches must be added in the order of their offsets.
func (s *staging) add(offsetsPartition int32, b Batch) {
	if s.segs == nil {
		s.segs = map[segmentKey]*PartitionMap{}
	}
	for _, e := range b.Entries {
		k := segmentKey{offsetsPartition, topology.TopicPartition{Topic: e.Topic, Partition: e.Partition}}
		seg := s.segs[k]
		if seg == nil {
			seg = &PartitionMap{}
			s.segs[k] = seg
		}
		_ = seg.Add(e) // an inconsistent segment keeps its error for merge
	}
}

// merge appends what s holds to the index. Within one partition of the
// offsets topic, a source partition's entries come in commit order. They
// sit in two partitions only after the shard count changed, and then the
// old shard's entries all precede the new one's (its transactional id was
// fenced first): the segments of one source partition go in by the source
// offset they start at (then end at), and segments that interleave make
// the partition inconsistent, as two writers of one partition would.
func (x *Index) merge(s *staging) error {
	bySource := map[topology.TopicPartition][]*PartitionMap{}
	for k, seg := range s.segs {
		bySource[k.tp] = append(bySource[k.tp], seg)
	}
	tps := make([]topology.TopicPartition, 0, len(bySource))
	for tp, segs := range bySource {
		tps = append(tps, tp)
		// Ties on the start are stretches of entries without runs at
		// the start of the next stretch: the one that ends first goes
		// first.
		slices.SortFunc(segs, func(a, b *PartitionMap) int {
			return cmp.Or(cmp.Compare(a.start(), b.start()), cmp.Compare(a.sourceNext, b.sourceNext))
		})
	}
	slices.SortFunc(tps, compareTopicPartition)
	x.mu.Lock()
	defer x.mu.Unlock()
	var errs []error
	for _, tp := range tps {
		for _, seg := range bySource[tp] {
			m := x.maps[tp]
			if m == nil {
				if x.maps == nil {
					x.maps = map[topology.TopicPartition]*PartitionMap{}
				}
				x.maps[tp] = seg
				if seg.err != nil {
					errs = append(errs, seg.err)
				}
				continue
			}
			if m.err != nil {
				continue // reported when it became inconsistent
			}
			if err := m.appendMap(seg); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func compareTopicPartition(a, b topology.TopicPartition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

func (x *Index) addLocked(e Entry) error {
	tp := topology.TopicPartition{Topic: e.Topic, Partition: e.Partition}
	m := x.maps[tp]
	if m == nil {
		if x.maps == nil {
			x.maps = map[topology.TopicPartition]*PartitionMap{}
		}
		m = &PartitionMap{}
		x.maps[tp] = m
	}
	if m.err != nil {
		return nil //nolint:nilerr // reported once, when the map became inconsistent
	}
	return m.Add(e)
}

// Translate translates a committed source position of topic/partition (see
// PartitionMap.Translate). A partition the index knows nothing of is
// Unmapped, with Source and Target -1.
func (x *Index) Translate(topic string, partition int32, sourcePos int64) Result {
	x.mu.RLock()
	defer x.mu.RUnlock()
	m := x.maps[topology.TopicPartition{Topic: topic, Partition: partition}]
	if m == nil {
		return Result{Source: -1, Target: -1, Status: Unmapped}
	}
	return m.Translate(sourcePos)
}

// Partitions returns the state of every partition the index holds, ordered
// by topic and partition.
func (x *Index) Partitions() []PartitionState {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]PartitionState, 0, len(x.maps))
	for tp, m := range x.maps {
		out = append(out, PartitionState{TopicPartition: tp, SourceNext: m.SourceNext(), TargetEnd: m.TargetEnd(), Runs: len(m.runs), Err: m.err})
	}
	slices.SortFunc(out, func(a, b PartitionState) int { return compareTopicPartition(a.TopicPartition, b.TopicPartition) })
	return out
}

// PruneBelow prunes each listed partition's map below its bound (see
// PartitionMap.PruneBelow) and returns the number of runs dropped.
func (x *Index) PruneBelow(bounds map[topology.TopicPartition]int64) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for tp, pos := range bounds {
		if m := x.maps[tp]; m != nil {
			n += m.PruneBelow(pos)
		}
	}
	return n
}

// Runs returns a copy of the merged runs of topic/partition's map and its
// state; ok is false when the index holds nothing of the partition. A
// reader that walks a partition's records beside the map (drctl verify)
// takes the runs of one partition at a time.
func (x *Index) Runs(topic string, partition int32) (runs []Run, st PartitionState, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	tp := topology.TopicPartition{Topic: topic, Partition: partition}
	m := x.maps[tp]
	if m == nil {
		return nil, PartitionState{TopicPartition: tp, SourceNext: -1, TargetEnd: -1}, false
	}
	st = PartitionState{TopicPartition: tp, SourceNext: m.SourceNext(), TargetEnd: m.TargetEnd(), Runs: len(m.runs), Err: m.err}
	if m.err != nil {
		return nil, st, true
	}
	return m.Runs(), st, true
}
