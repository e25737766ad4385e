package verify

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/offsettranslate"
	"github.com/drctl/drctl/topology"
)

// rec is a record at offset off whose content is named by v.
func rec(off int64, v string) kafkaread.Record {
	return kafkaread.Record{Offset: off, Key: []byte("k" + v), Value: []byte(v), Timestamp: time.UnixMilli(1000 + int64(len(v)))}
}

func seq(rs ...kafkaread.Record) Records {
	return func(yield func(kafkaread.Record, error) bool) {
		for _, r := range rs {
			if !yield(r, nil) {
				return
			}
		}
	}
}

type diff struct {
	kind     Kind
	src, dst int64
}

func TestCompare(t *testing.T) {
	// The source holds records at 0, 1, 2, a marker at 3, aborted
	// records 4-5 with their marker 6, and records 7, 8, 9. The mirror
	// copied 0-2 and 7 to target 0-3 (marker at 4), 8-9 to 5-6 (marker 7).
	runs := []offsettranslate.Run{{Source: 0, Target: 0, Count: 3}, {Source: 7, Target: 3, Count: 1}, {Source: 8, Target: 5, Count: 2}}
	source := []kafkaread.Record{rec(0, "a"), rec(1, "b"), rec(2, "c"), rec(7, "d"), rec(8, "e"), rec(9, "f")}
	target := []kafkaread.Record{rec(0, "a"), rec(1, "b"), rec(2, "c"), rec(3, "d"), rec(5, "e"), rec(6, "f")}
	drop := func(rs []kafkaread.Record, offs ...int64) []kafkaread.Record {
		return slices.DeleteFunc(slices.Clone(rs), func(r kafkaread.Record) bool { return slices.Contains(offs, r.Offset) })
	}
	set := func(rs []kafkaread.Record, r kafkaread.Record) []kafkaread.Record {
		out := drop(rs, r.Offset)
		out = append(out, r)
		slices.SortFunc(out, func(a, b kafkaread.Record) int { return int(a.Offset - b.Offset) })
		return out
	}
	withHeader := func(r kafkaread.Record, k, v string) kafkaread.Record {
		r.Headers = append(slices.Clone(r.Headers), &sarama.RecordHeader{Key: []byte(k), Value: []byte(v)})
		return r
	}
	nullKey := rec(1, "b")
	nullKey.Key = nil
	emptyKey := rec(1, "b")
	emptyKey.Key = []byte{}
	for _, tc := range []struct {
		name             string
		source, target   []kafkaread.Record
		targetTo         int64 // default 8
		sample           int
		mapped           int64 // sampled: the records the map holds in the range
		want             []diff
		compared, gone   int64
		provenS, provenT int64
	}{
		{name: "identical", source: source, target: target, compared: 6, provenS: 11, provenT: 8},
		{name: "provenance headers are not content", source: source,
			target:   set(target, withHeader(withHeader(rec(1, "b"), topology.HeaderOrigin, "east"), topology.HeaderSourceOffset, "\x00\x00\x00\x00\x00\x00\x00\x01")),
			compared: 6, provenS: 11, provenT: 8},
		{name: "provenance naming another record", source: source,
			target: set(target, withHeader(rec(1, "b"), topology.HeaderSourceOffset, "\x00\x00\x00\x00\x00\x00\x00\x02")),
			want:   []diff{{ContentDiffers, 1, 1}}, compared: 6, provenS: 1, provenT: 1},
		{name: "head deleted on the standby", source: source, target: drop(target, 0, 1),
			want: []diff{{Missing, 0, 0}, {Missing, 1, 1}}, compared: 4, provenS: 0, provenT: 0},
		{name: "standby record between copies", source: source, target: set(target, rec(4, "x")),
			want: []diff{{Unexpected, -1, 4}}, compared: 6, provenS: 8, provenT: 4},
		{name: "standby record past the map's end", source: source, target: set(target, rec(8, "x")), targetTo: 9,
			compared: 6, provenS: 11, provenT: 9}, // a tail record: settleTail decides
		{name: "value differs", source: source, target: set(target, rec(5, "E")),
			want: []diff{{ContentDiffers, 8, 5}}, compared: 6, provenS: 8, provenT: 5},
		{name: "null key is not an empty key", source: set(source, nullKey), target: set(target, emptyKey),
			want: []diff{{ContentDiffers, 1, 1}}, compared: 6, provenS: 1, provenT: 1},
		{name: "header added", source: source, target: set(target, withHeader(rec(2, "c"), "trace", "1")),
			want: []diff{{ContentDiffers, 2, 2}}, compared: 6, provenS: 2, provenT: 2},
		{name: "two records swapped", source: source, target: set(set(target, rec(0, "b")), rec(1, "a")),
			want: []diff{{OrderDiffers, 0, 0}, {OrderDiffers, 1, 1}}, compared: 6, provenS: 0, provenT: 0},
		{name: "source record the map does not hold", source: set(source, rec(5, "z")), target: target,
			want: []diff{{Missing, 5, -1}}, compared: 6, provenS: 5, provenT: 3},
		{name: "source compacted since the copy", source: drop(source, 1, 7), target: target,
			compared: 4, gone: 2, provenS: 11, provenT: 8},
		{name: "standby ends early", source: source, target: drop(target, 5, 6),
			want: []diff{{Missing, 8, 5}, {Missing, 9, 6}}, compared: 4, provenS: 8, provenT: 5},
		// Sampled: every second mapped record (source 0, 2, 8) is looked
		// up on both sides; what lies between is not read.
		{name: "sampled: every second mapped record", source: source, target: set(set(target, rec(1, "B")), rec(4, "x")), sample: 2,
			mapped: 6, want: nil, compared: 3, provenS: 11, provenT: 8},
		{name: "sampled: a sampled record differs", source: source, target: set(target, rec(2, "C")), sample: 2,
			mapped: 6, want: []diff{{ContentDiffers, 2, 2}}, compared: 3, provenS: 2, provenT: 2},
		{name: "sampled: a sampled copy deleted", source: source, target: drop(target, 5), sample: 2,
			mapped: 6, want: []diff{{Missing, 8, 5}}, compared: 2, provenS: 8, provenT: 5},
		{name: "sampled: a sampled source record compacted", source: drop(source, 8), target: target, sample: 2,
			mapped: 6, compared: 2, gone: 1, provenS: 11, provenT: 8},
		{name: "sampled: unmapped source records are not seen", source: set(source, rec(5, "z")), target: target, sample: 3,
			mapped: 6, compared: 2, provenS: 11, provenT: 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			to := tc.targetTo
			if to == 0 {
				to = 8
			}
			sp := span{runs: runs, sourceFrom: 0, sourceTo: 11, targetFrom: 0, targetTo: to, mapTargetEnd: 7, sample: tc.sample, details: 10}
			var (
				got *tally
				err error
			)
			if tc.sample > 1 {
				src, dst := newStreamReader(seq(tc.source...)), newStreamReader(seq(tc.target...))
				defer src.stop()
				defer dst.stop()
				got, err = compareSampled(sp, src, dst)
			} else {
				got, err = compare(sp, seq(tc.source...), seq(tc.target...))
			}
			if err != nil {
				t.Fatal(err)
			}
			var diffs []diff
			for _, d := range got.Details {
				diffs = append(diffs, diff{d.Kind, d.SourceOffset, d.TargetOffset})
			}
			if fmt.Sprint(diffs) != fmt.Sprint(tc.want) || got.Differences() != int64(len(tc.want)) {
				t.Errorf("differences %v (%d), want %v", diffs, got.Differences(), tc.want)
			}
			records := int64(len(tc.source)) // a sampled run counts the mapped ones
			if tc.mapped > 0 {
				records = tc.mapped
			}
			if got.Compared != tc.compared || got.SourceGone != tc.gone || got.SourceRecords != records {
				t.Errorf("compared %d of %d, gone %d; want %d of %d, gone %d", got.Compared, got.SourceRecords, got.SourceGone, tc.compared, records, tc.gone)
			}
			if got.ProvenSource != tc.provenS || got.ProvenTarget != tc.provenT {
				t.Errorf("proven [0, %d) = [0, %d), want [0, %d) = [0, %d)", got.ProvenSource, got.ProvenTarget, tc.provenS, tc.provenT)
			}
		})
	}
}

// TestSamples: every n-th mapped record of the range, counted from the
// range's first, across runs and holes; the count is of mapped records.
func TestSamples(t *testing.T) {
	runs := []offsettranslate.Run{{Source: 0, Target: 0, Count: 3}, {Source: 7, Target: 4, Count: 5}, {Source: 20, Target: 10, Count: 2}}
	for _, tc := range []struct {
		from, to int64
		n        int
		want     string
		mapped   int64
	}{
		{0, 100, 1, "[{0 0} {1 1} {2 2} {7 4} {8 5} {9 6} {10 7} {11 8} {20 10} {21 11}]", 10},
		{0, 100, 3, "[{0 0} {7 4} {10 7} {21 11}]", 10},
		{1, 100, 3, "[{1 1} {8 5} {11 8}]", 9},
		{1, 11, 4, "[{1 1} {9 6}]", 6},
		{5, 9, 1, "[{7 4} {8 5}]", 2},
		{0, 100, 100, "[{0 0}]", 10},
		{12, 20, 2, "[]", 0},
	} {
		all, mapped := samples(runs, tc.from, tc.to, tc.n)
		got := fmt.Sprint(append([]sample{}, slices.Collect(all)...))
		if got != tc.want || mapped != tc.mapped {
			t.Errorf("samples [%d, %d) every %d: %s of %d, want %s of %d", tc.from, tc.to, tc.n, got, mapped, tc.want, tc.mapped)
		}
	}
}

// TestSettleTail: a tail record a later map claims is a later copy and
// ends the proven range before it; one it does not claim is Unexpected.
func TestSettleTail(t *testing.T) {
	runs := []offsettranslate.Run{{Source: 0, Target: 0, Count: 3}}
	target := []kafkaread.Record{rec(0, "a"), rec(1, "b"), rec(2, "c"), rec(4, "d"), rec(5, "x")}
	source := []kafkaread.Record{rec(0, "a"), rec(1, "b"), rec(2, "c")}
	sp := span{runs: runs, sourceTo: 3, targetTo: 6, mapTargetEnd: 3, details: 10}
	got, err := compare(sp, seq(source...), seq(target...))
	if err != nil || got.Differences() != 0 || len(got.tail) != 2 {
		t.Fatalf("compare: %v, %d differences, tail %v", err, got.Differences(), got.tail)
	}
	got.settleTail(append(runs, offsettranslate.Run{Source: 4, Target: 4, Count: 1}), 3)
	if got.Differences() != 1 || got.Details[0].Kind != Unexpected || got.Details[0].TargetOffset != 5 || got.ProvenTarget != 4 {
		t.Errorf("after settling: %+v, proven target %d", got.Details, got.ProvenTarget)
	}
}

// TestCompareReadError: a failed read is returned, with what was counted.
func TestCompareReadError(t *testing.T) {
	boom := errors.New("boom")
	src := func(yield func(kafkaread.Record, error) bool) {
		if yield(rec(0, "a"), nil) {
			yield(kafkaread.Record{}, boom)
		}
	}
	sp := span{runs: []offsettranslate.Run{{Source: 0, Target: 0, Count: 5}}, sourceTo: 5, targetTo: 5}
	got, err := compare(sp, src, seq(rec(0, "a"), rec(1, "b")))
	if !errors.Is(err, boom) || got.Compared != 1 {
		t.Errorf("err %v, compared %d", err, got.Compared)
	}
}
