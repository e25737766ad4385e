package offsettranslate

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/drctl/drctl/topology"
)

func run(source, target, count int64) Run { return Run{Source: source, Target: target, Count: count} }

func entry(sourceNext int64, runs ...Run) Entry {
	return Entry{Topic: "orders", Partition: 3, Runs: runs, SourceNext: sourceNext}
}

func mapOf(t *testing.T, entries ...Entry) *PartitionMap {
	t.Helper()
	var m PartitionMap
	for i, e := range entries {
		if err := m.Add(e); err != nil {
			t.Fatalf("Add(entry %d %+v): %v", i, e, err)
		}
	}
	return &m
}

// workedExample is PartitionMap.Translate's doc example: source records at
// 0-2 and 7-9, a marker at 3, an aborted transaction at 4-6 (records and
// marker), a marker at 10; two mirror transactions.
var workedExample = []Entry{
	entry(8, run(0, 0, 3), run(7, 3, 1)),
	entry(11, run(8, 5, 2)),
}

func TestTranslate(t *testing.T) {
	type probe struct {
		pos  int64
		want Result
	}
	exact := func(pos, source, target int64) probe { return probe{pos, Result{source, target, Exact}} }
	clamped := func(pos, source, target int64) probe { return probe{pos, Result{source, target, ClampedToEnd}} }
	before := func(pos, source, target int64) probe { return probe{pos, Result{source, target, BeforeStart}} }
	tests := []struct {
		name    string
		entries []Entry
		probes  []probe
	}{
		{
			name:    "worked example: markers and an aborted transaction on the source",
			entries: workedExample,
			probes: []probe{
				exact(0, 0, 0), exact(1, 1, 1), exact(2, 2, 2), // inside the first run
				exact(3, 7, 3), exact(4, 7, 3), exact(6, 7, 3), // holes: the next record is 7
				exact(7, 7, 3),                 // a run of one
				exact(8, 8, 5), exact(9, 9, 6), // start of a run, and inside it
				clamped(10, 11, 7), // past the last record, before SourceNext
				clamped(11, 11, 7), // exactly at SourceNext
				clamped(15, 11, 7), // beyond SourceNext: the group is ahead of the mirror
				before(-1, 0, 0),   // "no offset": the caller's to leave out
			},
		},
		{
			name: "compaction gaps inside one transaction",
			// One transaction copied 0, 1, 5, 9, 10, 11 to contiguous
			// target offsets 20-25; 2-4 and 6-8 were compacted away.
			entries: []Entry{entry(12, run(0, 20, 2), run(5, 22, 1), run(9, 23, 3))},
			probes: []probe{
				exact(1, 1, 21), exact(2, 5, 22), exact(4, 5, 22), exact(5, 5, 22),
				exact(6, 9, 23), exact(8, 9, 23), exact(11, 11, 25),
				clamped(12, 12, 26), clamped(13, 12, 26),
			},
		},
		{
			name: "a hole between two transactions, trailing holes in SourceNext",
			// The first transaction read up to 10 (8 and 9 were an
			// aborted source transaction's records); its commit marker
			// took target 5, an aborted mirror transaction 6-9.
			entries: []Entry{entry(10, run(0, 0, 5)), entry(15, run(10, 10, 3))},
			probes: []probe{
				exact(4, 4, 4), exact(5, 10, 10), exact(9, 10, 10), exact(10, 10, 10),
				exact(12, 12, 12), clamped(13, 15, 13), clamped(15, 15, 13), clamped(16, 15, 13),
			},
		},
		{
			name: "entries without runs",
			entries: []Entry{
				entry(5, run(0, 0, 5)),
				entry(9),  // 5-8 held only markers and aborted records
				entry(12), // and 9-11 too
				entry(15, run(12, 7, 3)),
				entry(20),
			},
			probes: []probe{
				exact(4, 4, 4), exact(5, 12, 7), exact(9, 12, 7), exact(11, 12, 7), exact(12, 12, 7),
				exact(14, 14, 9), clamped(15, 20, 10), clamped(20, 20, 10), clamped(21, 20, 10),
			},
		},
		{
			name: "a head removed by retention before it was mirrored",
			// The mirror read up to 10; retention then removed 10-49 on
			// the source before the mirror read them.
			entries: []Entry{entry(10, run(0, 0, 10)), entry(55, run(50, 12, 5))},
			probes: []probe{
				exact(9, 9, 9), exact(10, 50, 12), exact(20, 50, 12), exact(49, 50, 12),
				exact(50, 50, 12), exact(54, 54, 16), clamped(55, 55, 17),
			},
		},
		{
			name:    "the mirror started after the log start",
			entries: []Entry{entry(110, run(100, 40, 10))},
			probes: []probe{
				before(0, 100, 40), before(99, 100, 40), exact(100, 100, 40), exact(105, 105, 45),
				clamped(110, 110, 50),
			},
		},
		{
			name: "several entries per partition",
			entries: []Entry{
				entry(3, run(0, 0, 3)),
				entry(6, run(3, 4, 3)),
				entry(10, run(6, 8, 2), run(9, 10, 1)),
				entry(11),
				entry(14, run(12, 12, 2)),
			},
			probes: []probe{
				exact(0, 0, 0), exact(2, 2, 2), exact(3, 3, 4), exact(5, 5, 6), exact(6, 6, 8),
				exact(8, 9, 10), exact(9, 9, 10), exact(10, 12, 12), exact(11, 12, 12), exact(13, 13, 13),
				clamped(14, 14, 14), clamped(99, 14, 14),
			},
		},
		{
			name:    "unmapped: only entries without runs",
			entries: []Entry{entry(4), entry(9)},
			probes:  []probe{{0, Result{9, -1, Unmapped}}, {9, Result{9, -1, Unmapped}}, {20, Result{9, -1, Unmapped}}},
		},
		{
			name:   "unmapped: empty",
			probes: []probe{{0, Result{-1, -1, Unmapped}}, {7, Result{-1, -1, Unmapped}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mapOf(t, tt.entries...)
			for _, p := range tt.probes {
				if got := m.Translate(p.pos); got != p.want {
					t.Errorf("Translate(%d) = %+v, want %+v", p.pos, got, p.want)
				}
			}
			checkAgainstBruteForce(t, m, tt.entries)
		})
	}
}

// checkAgainstBruteForce compares Translate at every position around the
// entries with a linear scan of their records.
func checkAgainstBruteForce(t *testing.T, m *PartitionMap, entries []Entry) {
	t.Helper()
	var pairs []Pair
	sourceNext := int64(-1)
	for _, e := range entries {
		for _, r := range e.Runs {
			for i := range r.Count {
				pairs = append(pairs, Pair{r.Source + i, r.Target + i})
			}
		}
		sourceNext = e.SourceNext
	}
	for pos := int64(-2); pos <= sourceNext+3; pos++ {
		got := m.Translate(pos)
		want := Result{Source: sourceNext, Target: -1, Status: Unmapped}
		switch {
		case len(pairs) == 0:
		case pos < pairs[0].Source:
			want = Result{pairs[0].Source, pairs[0].Target, BeforeStart}
		default:
			last := pairs[len(pairs)-1]
			want = Result{sourceNext, last.Target + 1, ClampedToEnd}
			for _, p := range pairs {
				if p.Source >= pos {
					want = Result{p.Source, p.Target, Exact}
					break
				}
			}
		}
		if got != want {
			t.Errorf("Translate(%d) = %+v, brute force says %+v", pos, got, want)
		}
	}
}

func TestIsExact(t *testing.T) {
	m := mapOf(t, workedExample...)
	for pos, want := range map[int64]bool{0: true, 3: true, 9: true, 10: true, 11: true, 12: false, 15: false} {
		if got := m.Translate(pos).IsExact(pos); got != want {
			t.Errorf("Translate(%d).IsExact = %v, want %v", pos, got, want)
		}
	}
	if (Result{Source: 5, Target: 5, Status: BeforeStart}).IsExact(1) || (Result{Source: 1, Target: -1}).IsExact(0) {
		t.Error("BeforeStart or Unmapped counted as exact")
	}
}

func TestPartitionMapMergesContiguousRuns(t *testing.T) {
	m := mapOf(t,
		entry(3, run(0, 0, 3)),
		entry(5, run(3, 3, 2)),               // contiguous in both: merged
		entry(9, run(5, 6, 2), run(8, 8, 1)), // a target gap, then a source gap
	)
	want := []Run{run(0, 0, 5), run(5, 6, 2), run(8, 8, 1)}
	if got := m.Runs(); !slices.Equal(got, want) {
		t.Errorf("Runs() = %v, want %v", got, want)
	}
	if m.SourceNext() != 9 || m.TargetEnd() != 9 {
		t.Errorf("SourceNext, TargetEnd = %d, %d; want 9, 9", m.SourceNext(), m.TargetEnd())
	}
}

func TestPartitionMapRejects(t *testing.T) {
	base := []Entry{entry(10, run(0, 0, 8))} // 8 and 9 were holes; target end 8
	tests := []struct {
		name string
		e    Entry
	}{
		{"run before the previous run's end", entry(12, run(5, 9, 2))},
		{"run in the holes the mirror already passed", entry(12, run(9, 9, 2))},
		{"target going backwards", entry(13, run(10, 7, 3))},
		{"SourceNext going backwards", entry(9)},
		{"empty run", entry(12, run(10, 10, 0))},
		{"negative count", entry(12, run(10, 10, -1))},
		{"overlapping runs within the entry", entry(20, run(10, 10, 5), run(12, 15, 1))},
		{"target overlap within the entry", entry(20, run(10, 10, 5), run(16, 14, 1))},
		{"SourceNext before the end of its runs", entry(11, run(10, 10, 2))},
		{"offsets overflowing", entry(1<<62, run(1<<62-1, 1<<63-2, 4))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mapOf(t, base...)
			if err := m.Add(tt.e); !errors.Is(err, ErrInconsistent) {
				t.Fatalf("Add(%+v) = %v, want ErrInconsistent", tt.e, err)
			}
			if m.Err() == nil {
				t.Error("Err() = nil after a rejected entry")
			}
			if got := m.Translate(3); got.Status != Unmapped || got.Target != -1 {
				t.Errorf("Translate after a rejected entry = %+v, want Unmapped", got)
			}
			if err := m.Add(entry(20, run(12, 12, 1))); err == nil {
				t.Error("an inconsistent map accepted a later entry")
			}
			if m.SourceNext() != -1 || m.TargetEnd() != -1 {
				t.Errorf("inconsistent map: SourceNext %d, TargetEnd %d; want -1, -1", m.SourceNext(), m.TargetEnd())
			}
		})
	}

	t.Run("an illegal first entry", func(t *testing.T) {
		var m PartitionMap
		if err := m.Add(Entry{Topic: "a/b", Partition: 3, SourceNext: 11}); !errors.Is(err, ErrInconsistent) {
			t.Fatalf("Add(illegal topic) = %v, want ErrInconsistent", err)
		}
		if got := m.Translate(0); got != (Result{-1, -1, Unmapped}) {
			t.Errorf("Translate = %+v", got)
		}
	})

	t.Run("another partition's entry changes nothing", func(t *testing.T) {
		m := mapOf(t, base...)
		other := entry(20, run(12, 12, 1))
		other.Partition = 4
		if err := m.Add(other); err == nil || errors.Is(err, ErrInconsistent) {
			t.Fatalf("Add(other partition) = %v, want a plain error", err)
		}
		if m.Err() != nil || m.Translate(3) != (Result{3, 3, Exact}) {
			t.Errorf("map changed: err %v, Translate(3) = %+v", m.Err(), m.Translate(3))
		}
	})

	t.Run("a run at the previous SourceNext and a later target is fine", func(t *testing.T) {
		m := mapOf(t, append(base, entry(12, run(10, 9, 2)))...)
		if got := m.Translate(8); got != (Result{10, 9, Exact}) {
			t.Errorf("Translate(8) = %+v", got)
		}
	})
}

func TestRunsFrom(t *testing.T) {
	p := func(s, t int64) Pair { return Pair{s, t} }
	tests := []struct {
		name  string
		pairs []Pair
		want  []Run
	}{
		{"no pairs", nil, nil},
		{"one record", []Pair{p(7, 3)}, []Run{run(7, 3, 1)}},
		{"contiguous", []Pair{p(7, 3), p(8, 4), p(9, 5)}, []Run{run(7, 3, 3)}},
		{"source holes", []Pair{p(0, 10), p(1, 11), p(4, 12), p(9, 13), p(10, 14)}, []Run{run(0, 10, 2), run(4, 12, 1), run(9, 13, 2)}},
		{"target jump", []Pair{p(0, 10), p(1, 12)}, []Run{run(0, 10, 1), run(1, 12, 1)}},
		{"out of order stays visible", []Pair{p(5, 5), p(4, 6)}, []Run{run(5, 5, 1), run(4, 6, 1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RunsFrom(tt.pairs); !slices.Equal(got, tt.want) {
				t.Errorf("RunsFrom(%v) = %v, want %v", tt.pairs, got, tt.want)
			}
		})
	}
	if err := (Entry{Topic: "t", Runs: RunsFrom([]Pair{p(5, 5), p(4, 6)}), SourceNext: 6}).Validate(); !errors.Is(err, ErrInconsistent) {
		t.Errorf("runs of out-of-order pairs validated: %v", err)
	}
}

func TestStatusText(t *testing.T) {
	for _, s := range []Status{Unmapped, Exact, ClampedToEnd, BeforeStart} {
		text, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Status
		if err := back.UnmarshalText(text); err != nil || back != s {
			t.Errorf("%v: round trip gave %v, %v", s, back, err)
		}
	}
	if _, err := Status(9).MarshalText(); err == nil {
		t.Error("unknown status marshalled")
	}
	if Exact.String() != "exact" || ClampedToEnd.String() != "clamped-to-end" || BeforeStart.String() != "before-start" || Unmapped.String() != "unmapped" {
		t.Error("status names changed: they are part of the JSON output")
	}
}

func TestIndex(t *testing.T) {
	var x Index
	other := func(e Entry) Entry { e.Topic = "payments"; return e }
	err := x.Add(Batch{Shard: 1, Entries: []Entry{workedExample[0], other(entry(4, run(0, 0, 4)))}})
	if err != nil {
		t.Fatal(err)
	}
	// A batch with one bad entry: the other entries still count.
	err = x.Add(Batch{Shard: 1, Entries: []Entry{other(entry(3, run(1, 9, 1))), workedExample[1]}})
	if !errors.Is(err, ErrInconsistent) {
		t.Fatalf("Add = %v, want ErrInconsistent", err)
	}
	if err := x.Add(Batch{Entries: []Entry{other(entry(9, run(5, 9, 1)))}}); err != nil {
		t.Errorf("later entry of an inconsistent partition: %v, want it dropped silently", err)
	}
	if got := x.Translate("orders", 3, 8); got != (Result{8, 5, Exact}) {
		t.Errorf("Translate(orders/3, 8) = %+v", got)
	}
	if got := x.Translate("payments", 3, 0); got.Status != Unmapped {
		t.Errorf("inconsistent partition translated: %+v", got)
	}
	if got := x.Translate("orders", 0, 0); got != (Result{-1, -1, Unmapped}) {
		t.Errorf("unknown partition: %+v", got)
	}
	states := x.Partitions()
	if len(states) != 2 || states[0].Topic != "orders" || states[1].Topic != "payments" {
		t.Fatalf("Partitions() = %+v", states)
	}
	if s := states[0]; s.SourceNext != 11 || s.TargetEnd != 7 || s.Runs != 3 || s.Err != nil {
		t.Errorf("orders/3: %+v", s)
	}
	if s := states[1]; s.Err == nil || s.SourceNext != -1 {
		t.Errorf("payments/3: %+v, want inconsistent", s)
	}
}

func TestIndexOrdersEntriesAcrossBatches(t *testing.T) {
	// After a change of shard count, one partition's entries may sit in
	// two partitions of the offsets topic, read one after the other.
	var x Index
	var s staging
	s.add(1, Batch{Shard: 2, Entries: []Entry{workedExample[1]}}) // the new shard's partition is read first
	s.add(0, Batch{Shard: 0, Entries: []Entry{workedExample[0]}})
	if err := x.merge(&s); err != nil {
		t.Fatal(err)
	}
	want := mapOf(t, workedExample...)
	for pos := range int64(12) {
		if got := x.Translate("orders", 3, pos); got != want.Translate(pos) {
			t.Errorf("Translate(%d) = %+v, want %+v", pos, got, want.Translate(pos))
		}
	}
}

// randomHistory returns the entries a mirror would write for one partition
// over many transactions: holes, trailing holes, entries without runs,
// jumps in source offsets (retention) and target offsets (markers, aborted
// mirror transactions).
func randomHistory(r *rand.Rand, n int) []Entry {
	var out []Entry
	source, target := r.Int64N(100), r.Int64N(100)
	for range n {
		e := entry(0)
		source += r.Int64N(3) * r.Int64N(20) // retention or leading holes
		for range r.IntN(4) {
			c := 1 + r.Int64N(10)
			e.Runs = append(e.Runs, run(source, target, c))
			source, target = source+c+r.Int64N(3), target+c
		}
		source += r.Int64N(3)
		e.SourceNext = source
		target += 1 + r.Int64N(2)*r.Int64N(10) // commit marker, aborted transactions
		out = append(out, e)
	}
	return out
}

// TestMergeEqualsAdd reads random histories as Follower polls would (in
// consecutive chunks), with the entries of some chunks split between two
// partitions of the offsets topic at a change of shard count (the old
// shard's prefix in one, the new shard's suffix in another, in either read
// order), and checks the index against adding every entry in order.
func TestMergeEqualsAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for i := range 300 {
		history := randomHistory(r, 1+r.IntN(40))
		want := mapOf(t, history...)
		var x Index
		for rest := history; len(rest) > 0; {
			chunk := rest[:1+r.IntN(len(rest))]
			rest = rest[len(chunk):]
			split := r.IntN(len(chunk) + 1)
			oldPart, newPart := int32(r.IntN(3)), int32(r.IntN(3))
			var s staging
			for _, e := range chunk[split:] { // order of reading partitions must not matter
				s.add(newPart+10, Batch{Entries: []Entry{e}})
			}
			for _, e := range chunk[:split] {
				s.add(oldPart, Batch{Entries: []Entry{e}})
			}
			if err := x.merge(&s); err != nil {
				t.Fatalf("case %d: merge: %v", i, err)
			}
		}
		got := x.maps[topology.TopicPartition{Topic: "orders", Partition: 3}]
		if !slices.Equal(got.Runs(), want.Runs()) || got.SourceNext() != want.SourceNext() || got.entries != want.entries {
			t.Fatalf("case %d: merged map %v next %d, want %v next %d", i, got.Runs(), got.SourceNext(), want.Runs(), want.SourceNext())
		}
		checkAgainstBruteForce(t, got, history)
	}
}

func TestMergeRejectsInterleavedWriters(t *testing.T) {
	history := []Entry{entry(5, run(0, 0, 5)), entry(9, run(5, 6, 4)), entry(12, run(9, 11, 3))}
	var s staging
	s.add(0, Batch{Entries: []Entry{history[0], history[2]}})
	s.add(1, Batch{Entries: []Entry{history[1]}})
	var x Index
	if err := x.merge(&s); !errors.Is(err, ErrInconsistent) {
		t.Fatalf("merge of interleaved entries: %v, want ErrInconsistent", err)
	}
	if got := x.Translate("orders", 3, 0); got.Status != Unmapped {
		t.Errorf("Translate = %+v, want Unmapped", got)
	}
	// A later read adds nothing more and reports nothing again.
	var later staging
	later.add(0, Batch{Entries: []Entry{entry(20, run(12, 15, 2))}})
	if err := x.merge(&later); err != nil {
		t.Errorf("merge into an inconsistent partition: %v, want it dropped silently", err)
	}
}
