package offsettranslate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"testing"

	"github.com/drctl/drctl/internal/testkit/fuzzseed"
)

// FuzzDecodeBatch (encoding_test.go) starts from the corpus in
// testdata/fuzz/FuzzDecodeBatch: these batches' encodings and hugeCounts.

// fuzzBatches are valid batches at the edges of the format.
func fuzzBatches() []Batch {
	return []Batch{
		{},
		{Shard: 3, CommittedAtMs: 1_760_000_000_000, Entries: []Entry{{Topic: "orders", Partition: 0, SourceNext: 0}}},
		{Shard: 1, CommittedAtMs: -5, Entries: []Entry{
			{Topic: "orders", Partition: 2, Runs: []Run{{Source: 10, Target: 0, Count: 5}, {Source: 16, Target: 6, Count: 1}}, SourceNext: 20},
			{Topic: "payments.eu", Partition: 11, Runs: []Run{{Source: 0, Target: 0, Count: 1}}, SourceNext: 1},
			{Topic: "orders", Partition: 3, SourceNext: 7},
		}},
		{Shard: math.MaxInt32, CommittedAtMs: math.MinInt64, Entries: []Entry{
			{Topic: string(bytes.Repeat([]byte("t"), maxTopicLen)), Partition: math.MaxInt32,
				Runs: []Run{{Source: math.MaxInt64 - 2, Target: 0, Count: 1}}, SourceNext: math.MaxInt64},
		}},
	}
}

// hugeCounts are inputs whose length prefixes claim far more items than
// they hold: each must be refused, not allocated.
func hugeCounts() [][]byte {
	with := func(prefix []byte, v uint64) []byte { return binary.AppendUvarint(append([]byte(nil), prefix...), v) }
	header := []byte{formatVersion, 0, 0} // version, shard 0, committed at 0
	entry := append(with(header, 1), 0, 1, 't', 0)
	return [][]byte{
		with(header, 1<<31),                              // 2^31 entries
		with(header, math.MaxUint64),                     // 2^64-1 entries
		with(entry, 1<<31),                               // 2^31 runs in the one entry
		with(append(with(header, 1), 0), math.MaxUint32), // a topic name of 2^32-1 bytes
	}
}

// TestDecodeBatchSeeds checks the seed corpus's inputs and writes it
// (DRCTL_WRITE_FUZZ_SEEDS=1): valid batches round-trip, and length prefixes
// claiming 2^31 and more items are refused with a few KiB
// allocated, not gigabytes.
func TestDecodeBatchSeeds(t *testing.T) {
	var seeds [][]byte
	for _, b := range fuzzBatches() {
		data := EncodeBatch(b)
		got, err := DecodeBatch(data)
		if err != nil || !bytes.Equal(EncodeBatch(got), data) {
			t.Errorf("batch %+v: decode = %+v, %v", b, got, err)
		}
		seeds = append(seeds, data)
	}
	for _, data := range hugeCounts() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := DecodeBatch(data)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeBatch(%x) = %v, want ErrCorrupt", data, err)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
			t.Errorf("DecodeBatch(%x) allocated %d bytes", data, n)
		}
		seeds = append(seeds, data)
	}
	seeds = append(seeds, []byte{2}, []byte{formatVersion}, []byte{formatVersion, 0x80, 0x00, 0, 0})
	fuzzseed.Write(t, "FuzzDecodeBatch", seeds...)
}
