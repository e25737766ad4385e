package offsettranslate

import (
	"fmt"
	"sort"
)

// Status says how a translation relates to what the map holds. The
// vocabulary is short and stable; its text forms appear in JSON output.
type Status uint8

const (
	// Unmapped: the map holds no mirrored record of the partition (no
	// entry, only entries without runs, or an inconsistent map). There is
	// no target position; Target is -1.
	Unmapped Status = iota
	// Exact: the position falls on or before a mirrored record. Target is
	// the target offset of the first mirrored record whose source offset is
	// at or after the position: the record a read_committed consumer at the
	// position would read next on the source, whatever holes lie between.
	Exact
	// ClampedToEnd: the position is past the last mirrored record. Target
	// is the target offset just after that record. Source is the mirror's
	// read position (the last entry's SourceNext): up to it, the offsets
	// after the last mirrored record are holes the mirror has passed, so the
	// next record it copies is the one the group reads next and the
	// translation is still exact (see Result.IsExact); past it, the group is
	// ahead of the mirror.
	ClampedToEnd
	// BeforeStart: the position is before the first source offset the map
	// covers. Target is the first mapped target offset and Source its source
	// offset. The source records in between are not in the map: never
	// mirrored (the mirror started later, or retention removed them first)
	// or their batches were deleted from the offsets topic. A source group
	// there would be reset anyway once the source no longer holds them.
	BeforeStart
)

var statusNames = [...]string{
	Unmapped:     "unmapped",
	Exact:        "exact",
	ClampedToEnd: "clamped-to-end",
	BeforeStart:  "before-start",
}

// String returns the status's stable name: "exact", "clamped-to-end",
// "before-start" or "unmapped".
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// MarshalText encodes the status by its name.
func (s Status) MarshalText() ([]byte, error) {
	if int(s) >= len(statusNames) {
		return nil, fmt.Errorf("unknown translation status %d", uint8(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText decodes a status from its name.
func (s *Status) UnmarshalText(text []byte) error {
	for i, name := range statusNames {
		if string(text) == name {
			*s = Status(i)
			return nil
		}
	}
	return fmt.Errorf("unknown translation status %q", text)
}

// Result is a translated position.
type Result struct {
	// Source is the source offset Target stands for: with Exact, the
	// source offset of the record at Target; with ClampedToEnd, the
	// mirror's read position; with BeforeStart, the first mapped source
	// offset; with Unmapped, the mirror's read position when it has passed
	// only holes, else -1.
	Source int64
	// Target is the target offset to start consuming from; -1 with
	// Unmapped.
	Target int64
	Status Status
}

// IsExact reports whether a consumer at r.Target reads next exactly the
// record a consumer at sourcePos would read next on the source (now, or
// once the mirror copies it): Status Exact, or ClampedToEnd with sourcePos
// at or before the mirror's read position. sourcePos must be the position
// r was translated from.
func (r Result) IsExact(sourcePos int64) bool {
	return r.Status == Exact || r.Status == ClampedToEnd && sourcePos <= r.Source
}

// PartitionMap is the offset map of one source partition: the runs of
// every committed mirror transaction, in order. Its zero value is an empty
// map that takes its topic and partition from the first entry added.
//
// Runs that continue each other in both source and target offsets are
// merged, so the map holds at most one run per transaction and per stretch
// of source offsets without holes (24 bytes each); Translate is a binary
// search over them.
//
// A PartitionMap is not safe for concurrent use; Index is.
type PartitionMap struct {
	topic      string
	partition  int32
	entries    int64
	runs       []Run
	sourceNext int64
	// firstSourceNext is the first entry's SourceNext: with the first
	// run, what appending this map to another one must check.
	firstSourceNext int64
	err             error
	// pruned is set once PruneBelow dropped runs: positions below the
	// first kept run are then unknown, not before the start.
	pruned bool
}

// Add appends what one mirror transaction wrote for the partition. Entries
// must come in the mirror's order: every run starts at or after the
// previous entry's SourceNext (the mirror never copies an offset it has
// passed) and at or after the target end of the previous run, and
// SourceNext never decreases.
//
// An entry for another topic or partition is an error and changes nothing.
// An entry that breaks the order or is invalid on its own
// (Entry.Validate) is an error wrapping ErrInconsistent and makes the
// whole map inconsistent: it refuses every later entry and translates
// every position as Unmapped, because a map missing one transaction would
// send positions in that transaction's range to a later record, skipping
// records silently.
func (m *PartitionMap) Add(e Entry) error {
	if m.entries > 0 && (e.Topic != m.topic || e.Partition != m.partition) {
		return fmt.Errorf("offset map of %s/%d: entry for %s/%d", m.topic, m.partition, e.Topic, e.Partition)
	}
	if m.err != nil {
		return m.err
	}
	if m.entries == 0 {
		m.topic, m.partition, m.firstSourceNext = e.Topic, e.Partition, e.SourceNext
	}
	if err := m.check(e); err != nil {
		m.err = fmt.Errorf("offset map of %s/%d: %w", m.topic, m.partition, err)
		m.runs = nil
		return m.err
	}
	m.appendRuns(e.Runs)
	m.sourceNext = e.SourceNext
	m.entries++
	return nil
}

func (m *PartitionMap) appendRuns(runs []Run) {
	for _, r := range runs {
		if n := len(m.runs); n > 0 && m.runs[n-1].SourceEnd() == r.Source && m.runs[n-1].TargetEnd() == r.Target {
			m.runs[n-1].Count += r.Count
			continue
		}
		m.runs = append(m.runs, r)
	}
}

// appendMap appends the entries seg holds, as Add would one by one: seg
// is a map of the same partition built from entries that follow m's. The
// checks of Add apply to seg's first entry; seg checked the others.
func (m *PartitionMap) appendMap(seg *PartitionMap) error {
	if m.err != nil || seg.entries == 0 && seg.err == nil {
		return nil //nolint:nilerr // m's error was reported when it became inconsistent
	}
	err := seg.err
	if err == nil {
		err = m.checkFollow(seg.firstSourceNext, seg.runs)
		if err != nil {
			err = fmt.Errorf("offset map of %s/%d: %w", m.topic, m.partition, err)
		}
	}
	if err != nil {
		m.err, m.runs = err, nil
		return err
	}
	m.appendRuns(seg.runs)
	m.sourceNext = seg.sourceNext
	m.entries += seg.entries
	return nil
}

// start is the lowest source offset the map's entries speak of: where
// the map's first entry begins, as far as it tells.
func (m *PartitionMap) start() int64 {
	if len(m.runs) > 0 {
		return min(m.runs[0].Source, m.firstSourceNext)
	}
	return m.firstSourceNext
}

// check tells whether e may follow what the map holds.
func (m *PartitionMap) check(e Entry) error {
	if err := e.Validate(); err != nil {
		return err
	}
	return m.checkFollow(e.SourceNext, e.Runs)
}

// checkFollow tells whether an entry with sourceNext and runs (valid on
// its own) may follow what the map holds.
func (m *PartitionMap) checkFollow(sourceNext int64, runs []Run) error {
	if m.entries == 0 {
		return nil
	}
	if sourceNext < m.sourceNext {
		return fmt.Errorf("%w: next source offset %d goes back from %d", ErrInconsistent, sourceNext, m.sourceNext)
	}
	if len(runs) == 0 {
		return nil
	}
	first := runs[0]
	if first.Source < m.sourceNext {
		return fmt.Errorf("%w: run %+v starts before the mirror's read position %d", ErrInconsistent, first, m.sourceNext)
	}
	if n := len(m.runs); n > 0 && first.Target < m.runs[n-1].TargetEnd() {
		return fmt.Errorf("%w: run %+v starts before the target end %d of the previous run", ErrInconsistent, first, m.runs[n-1].TargetEnd())
	}
	return nil
}

// Translate maps a committed source position of a consumer group (the
// offset of the next record it would read) to the target offset where a
// consumer reads next the same record. Positions a group has not committed
// (sarama's -1, "no offset") are the caller's to leave out: they are not
// positions, and Translate would answer BeforeStart for them.
//
// A worked example. The source partition holds committed records at 0, 1,
// 2; a transaction marker at 3; records 4 and 5 of an aborted transaction
// and its marker at 6; records at 7, 8, 9; a marker at 10. The mirror's
// first transaction copies 0, 1, 2, 7 to target offsets 0, 1, 2, 3 (its
// commit marker takes target offset 4) and has read up to 8; the second
// copies 8, 9 to target 5, 6 and has read up to 11:
//
//	Entry{Runs: []Run{{Source: 0, Target: 0, Count: 3}, {Source: 7, Target: 3, Count: 1}}, SourceNext: 8}
//	Entry{Runs: []Run{{Source: 8, Target: 5, Count: 2}}, SourceNext: 11}
//
// (The runs {7,3,1} and {8,5,2} follow each other on the source but not on
// the target, so they stay apart.) Then:
//
//	Translate(0)  = {Source: 0,  Target: 0, Exact}         inside a run
//	Translate(2)  = {Source: 2,  Target: 2, Exact}
//	Translate(3)  = {Source: 7,  Target: 3, Exact}         holes 3..6: next record is 7
//	Translate(5)  = {Source: 7,  Target: 3, Exact}
//	Translate(8)  = {Source: 8,  Target: 5, Exact}         start of a run
//	Translate(10) = {Source: 11, Target: 7, ClampedToEnd}  past the last record; exact (10 <= 11)
//	Translate(11) = {Source: 11, Target: 7, ClampedToEnd}  at SourceNext; exact
//	Translate(15) = {Source: 11, Target: 7, ClampedToEnd}  the group is 4 offsets ahead of the mirror
//
// and Translate(-1) would be BeforeStart: leave such positions out.
func (m *PartitionMap) Translate(sourcePos int64) Result {
	if m.err != nil || len(m.runs) == 0 {
		return Result{Source: m.SourceNext(), Target: -1, Status: Unmapped}
	}
	if first := m.runs[0]; sourcePos < first.Source {
		if m.pruned {
			return Result{Source: m.SourceNext(), Target: -1, Status: Unmapped}
		}
		return Result{Source: first.Source, Target: first.Target, Status: BeforeStart}
	}
	// The first run that ends after sourcePos holds it, or is the first
	// mirrored record after the holes it falls in.
	i := sort.Search(len(m.runs), func(i int) bool { return m.runs[i].SourceEnd() > sourcePos })
	if i == len(m.runs) {
		return Result{Source: m.sourceNext, Target: m.runs[i-1].TargetEnd(), Status: ClampedToEnd}
	}
	r := m.runs[i]
	if sourcePos < r.Source {
		return Result{Source: r.Source, Target: r.Target, Status: Exact}
	}
	return Result{Source: sourcePos, Target: r.Target + (sourcePos - r.Source), Status: Exact}
}

// SourceNext is the mirror's read position on the partition after the
// last entry: where a restarted mirror resumes. It is -1 before the first
// entry and while the map is inconsistent.
func (m *PartitionMap) SourceNext() int64 {
	if m.entries == 0 || m.err != nil {
		return -1
	}
	return m.sourceNext
}

// TargetEnd is the target offset just after the last mirrored record, -1
// when there is none or the map is inconsistent.
func (m *PartitionMap) TargetEnd() int64 {
	if len(m.runs) == 0 || m.err != nil {
		return -1
	}
	return m.runs[len(m.runs)-1].TargetEnd()
}

// Runs returns a copy of the map's merged runs.
func (m *PartitionMap) Runs() []Run {
	return append([]Run(nil), m.runs...)
}

// Err is the error that made the map inconsistent, or nil.
func (m *PartitionMap) Err() error { return m.err }

// PruneBelow drops the runs that end at or below source offset pos (the
// last run is always kept), bounding the memory of a long-lived reader
// whose callers only ask about positions at or above pos. Afterwards a
// position below the first kept run translates as Unmapped, never as a
// guess. It returns the number of runs dropped.
func (m *PartitionMap) PruneBelow(pos int64) int {
	if m.err != nil || len(m.runs) < 2 {
		return 0
	}
	i := sort.Search(len(m.runs)-1, func(i int) bool { return m.runs[i].SourceEnd() > pos })
	if i == 0 {
		return 0
	}
	m.runs = append(m.runs[:0:0], m.runs[i:]...)
	m.pruned = true
	return i
}
