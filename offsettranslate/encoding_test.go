package offsettranslate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

var topicPool = []string{"orders", "payments.eu", "a", "_x-y.z", strings.Repeat("t", maxTopicLen)}

// randomBatch returns a valid batch with a mix of small and huge offsets,
// repeated topics, entries without runs and trailing holes.
func randomBatch(r *rand.Rand) Batch {
	b := Batch{Shard: r.Int32N(1 << uint(r.IntN(31))), CommittedAtMs: r.Int64() - r.Int64()}
	for range r.IntN(6) {
		e := Entry{Topic: topicPool[r.IntN(len(topicPool))], Partition: r.Int32N(1 << uint(r.IntN(31)))}
		limit := int64(1) << uint(4+r.IntN(56)) // room for the offsets of this entry
		var sourceEnd, targetEnd int64
		for range r.IntN(7) {
			run := Run{Source: sourceEnd + r.Int64N(limit/64+1), Target: targetEnd + r.Int64N(limit/64+1), Count: 1 + r.Int64N(limit/64+1)}
			if r.IntN(3) == 0 { // contiguous on the target, as in one transaction
				run.Target = targetEnd
			}
			e.Runs = append(e.Runs, run)
			sourceEnd, targetEnd = run.SourceEnd(), run.TargetEnd()
		}
		e.SourceNext = sourceEnd + r.Int64N(3)*r.Int64N(limit/64+1)
		b.Entries = append(b.Entries, e)
	}
	return b
}

// invalidate breaks one rule of Batch.Validate.
func invalidate(r *rand.Rand, b Batch) Batch {
	b.Entries = append([]Entry(nil), b.Entries...)
	if len(b.Entries) == 0 || r.IntN(8) == 0 {
		b.Shard = -1 - r.Int32N(10)
		return b
	}
	i := r.IntN(len(b.Entries))
	e := b.Entries[i]
	e.Runs = append([]Run(nil), e.Runs...)
	switch k := r.IntN(6); {
	case k == 0:
		e.Partition = -1 - r.Int32N(math.MaxInt32)
	case k == 1:
		e.Topic = []string{"", ".", "..", "a b", "ü", strings.Repeat("t", maxTopicLen+1)}[r.IntN(6)]
	case k == 2 && len(e.Runs) > 0:
		e.SourceNext = e.Runs[len(e.Runs)-1].SourceEnd() - 1 - r.Int64N(5)
	case k == 3 && len(e.Runs) > 0:
		e.Runs[r.IntN(len(e.Runs))].Count = -r.Int64N(3)
	case k == 4 && len(e.Runs) > 1:
		j := 1 + r.IntN(len(e.Runs)-1)
		if r.IntN(2) == 0 {
			e.Runs[j].Source = e.Runs[j-1].SourceEnd() - 1
		} else {
			e.Runs[j].Target = e.Runs[j-1].TargetEnd() - 1
		}
	case k == 5 && len(e.Runs) > 0:
		e.Runs[0].Source = -1 - r.Int64N(100)
	default:
		e.SourceNext = -1 - r.Int64N(100)
		e.Runs = nil
	}
	b.Entries[i] = e
	return b
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		b := randomBatch(r)
		if err := b.Validate(); err != nil {
			t.Fatalf("case %d: generator made an invalid batch: %v", i, err)
		}
		data := EncodeBatch(b)
		got, err := DecodeBatch(data)
		if err != nil {
			t.Fatalf("case %d: DecodeBatch(EncodeBatch(%+v)): %v", i, b, err)
		}
		if !reflect.DeepEqual(got, b) {
			t.Fatalf("case %d: round trip changed the batch:\n got %+v\nwant %+v", i, got, b)
		}
		if again := EncodeBatch(got); !bytes.Equal(again, data) {
			t.Fatalf("case %d: encoding is not stable", i)
		}
	}
}

func TestEncodeInvalidBatchNeverDecodes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 20000 {
		b := invalidate(r, randomBatch(r))
		if b.Validate() == nil {
			continue // the mutation happened to keep it valid
		}
		if got, err := DecodeBatch(EncodeBatch(b)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("case %d: invalid batch %+v decoded to %+v, %v", i, b, got, err)
		}
	}
}

func TestDecodeBatchRejects(t *testing.T) {
	valid := EncodeBatch(Batch{Shard: 1, CommittedAtMs: 5, Entries: []Entry{
		{Topic: "orders", Partition: 2, Runs: []Run{{10, 20, 3}, {15, 23, 1}}, SourceNext: 17},
		{Topic: "orders", Partition: 3, SourceNext: 4},
	}})
	// Every strict prefix is truncated.
	for n := range len(valid) {
		if _, err := DecodeBatch(valid[:n]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("prefix of %d bytes: %v, want ErrCorrupt", n, err)
		}
	}
	u := func(vs ...uint64) []byte {
		out := []byte{formatVersion}
		for _, v := range vs {
			out = binary.AppendUvarint(out, v)
		}
		return out
	}
	entryHead := func(topic string, partition, runs uint64) []uint64 {
		out := []uint64{0, uint64(len(topic))}
		for _, c := range []byte(topic) {
			out = append(out, uint64(c)) // every legal character is one varint byte
		}
		return append(out, partition, runs)
	}
	cat := func(parts ...[]uint64) []uint64 {
		var out []uint64
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"a newer version", append([]byte{2}, valid[1:]...), ErrUnsupportedVersion},
		{"version zero", []byte{0}, ErrUnsupportedVersion},
		{"trailing byte", append(append([]byte(nil), valid...), 0), ErrCorrupt},
		{"overlong varint", []byte{formatVersion, 0x81, 0x00, 0, 0}, ErrCorrupt},
		{"varint beyond 64 bits", append([]byte{formatVersion}, bytes.Repeat([]byte{0xff}, 11)...), ErrCorrupt},
		{"shard beyond int32", u(math.MaxInt32+1, 0, 0), ErrCorrupt},
		{"entry count beyond the input", u(0, 0, 1000), ErrCorrupt},
		{"topic reference beyond the table", u(cat([]uint64{0, 0, 1, 1}, []uint64{0, 0, 0})...), ErrCorrupt},
		{"empty topic name", u(cat([]uint64{0, 0, 1}, entryHead("", 0, 0), []uint64{0})...), ErrCorrupt},
		{"illegal topic name", u(cat([]uint64{0, 0, 1}, entryHead("a/b", 0, 0), []uint64{0})...), ErrCorrupt},
		{"topic name too long", u(cat([]uint64{0, 0, 1}, entryHead(strings.Repeat("t", 250), 0, 0), []uint64{0})...), ErrCorrupt},
		{"topic introduced twice", u(cat([]uint64{0, 0, 2}, entryHead("t", 0, 0), []uint64{0}, entryHead("t", 1, 0), []uint64{0})...), ErrCorrupt},
		{"partition beyond int32", u(cat([]uint64{0, 0, 1}, entryHead("t", math.MaxInt32+1, 0), []uint64{0})...), ErrCorrupt},
		{"run count beyond the input", u(cat([]uint64{0, 0, 1}, entryHead("t", 0, 100), []uint64{0})...), ErrCorrupt},
		{"empty run", u(cat([]uint64{0, 0, 1}, entryHead("t", 0, 1), []uint64{5, 5, 0, 0})...), ErrCorrupt},
		{"run source overflowing", u(cat([]uint64{0, 0, 1}, entryHead("t", 0, 1), []uint64{math.MaxInt64, 0, 1, 0})...), ErrCorrupt},
		{"run gap overflowing", u(cat([]uint64{0, 0, 1}, entryHead("t", 0, 2), []uint64{5, 5, 5, math.MaxInt64 - 5, 0, 1, 0})...), ErrCorrupt},
		{"source next overflowing", u(cat([]uint64{0, 0, 1}, entryHead("t", 0, 1), []uint64{5, 5, 5, math.MaxInt64 - 9})...), ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b, err := DecodeBatch(tt.data); !errors.Is(err, tt.want) {
				t.Errorf("DecodeBatch(%x) = %+v, %v; want %v", tt.data, b, err, tt.want)
			}
		})
	}
	if _, err := DecodeBatch(u(cat([]uint64{0, 0, 1}, entryHead("t", 0, 1), []uint64{5, 5, 5, math.MaxInt64 - 10})...)); err != nil {
		t.Errorf("largest SourceNext rejected: %v", err)
	}
}

// FuzzDecodeBatch checks that no input panics, that whatever decodes is
// valid and re-encodes to the very same bytes (the encoding is canonical).
func FuzzDecodeBatch(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 20 {
		f.Add(EncodeBatch(randomBatch(r)))
	}
	f.Add([]byte{})
	f.Add([]byte{formatVersion, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodeBatch(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupportedVersion) {
				t.Fatalf("error %v wraps neither ErrCorrupt nor ErrUnsupportedVersion", err)
			}
			return
		}
		if err := b.Validate(); err != nil {
			t.Fatalf("decoded an invalid batch %+v: %v", b, err)
		}
		if again := EncodeBatch(b); !bytes.Equal(again, data) {
			t.Fatalf("re-encoding %+v gave %x, not the input %x", b, again, data)
		}
	})
}

// TestEncodedSize measures the storage the map costs and holds it to the
// design budget (< 2% of mirrored bytes for 1 KiB records; ~15-30 bytes
// per one-run entry plus the topic name).
func TestEncodedSize(t *testing.T) {
	const topic = "orders"
	header := len(EncodeBatch(Batch{Shard: 3, CommittedAtMs: 1_760_000_000_000}))
	entryCost := func(e Entry) int {
		return len(EncodeBatch(Batch{Shard: 3, CommittedAtMs: 1_760_000_000_000, Entries: []Entry{e}})) - header
	}
	// Offsets around 1.2 billion: five-byte varints.
	const source, target = 1_234_567_890, 1_230_000_000
	one := Entry{Topic: topic, Partition: 7, Runs: []Run{{source, target, 1000}}, SourceNext: source + 1001}
	ten := Entry{Topic: topic, Partition: 7}
	s, tg := int64(source), int64(target)
	for range 10 {
		ten.Runs = append(ten.Runs, Run{s, tg, 100})
		s, tg = s+100+2, tg+100 // a marker and an aborted record between runs
	}
	ten.SourceNext = s
	oneCost, tenCost := entryCost(one), entryCost(ten)
	// A second entry of the same topic refers to the name.
	second := one
	second.Partition = 8
	twoCost := len(EncodeBatch(Batch{Shard: 3, CommittedAtMs: 1_760_000_000_000, Entries: []Entry{one, second}})) - header
	t.Logf("batch header: %d bytes", header)
	t.Logf("entry with 1 run: %d bytes (%d without the topic name %q); same-topic entry after it: %d bytes",
		oneCost, oneCost-len(topic), topic, twoCost-oneCost)
	t.Logf("entry with 10 runs: %d bytes (%d without the topic name)", tenCost, tenCost-len(topic))
	if oneCost-len(topic) > 30 {
		t.Errorf("a one-run entry costs %d bytes plus the topic name, over the 30-byte budget", oneCost-len(topic))
	}

	// The offsets record travels in its own Kafka record batch: 61 bytes of
	// batch header, about 8 bytes of record framing, and the key (one
	// digit). Each mirrored 1 KiB record costs its value, about 10 bytes of
	// framing and the provenance headers (not counted: the comparison is
	// with the data alone, the worst case for the ratio).
	const kafkaBatchHeader, recordFraming, keyLen = 61, 8, 1
	for _, records := range []int{1, 10, 100, 1000} {
		e := Entry{Topic: topic, Partition: 7, Runs: []Run{{source, target, int64(records)}}, SourceNext: source + int64(records)}
		value := len(EncodeBatch(Batch{Shard: 3, CommittedAtMs: 1_760_000_000_000, Entries: []Entry{e}}))
		mapBytes := kafkaBatchHeader + recordFraming + keyLen + value
		dataBytes := records * 1024
		ratio := float64(mapBytes) / float64(dataBytes)
		t.Logf("transaction of %4d x 1 KiB records: map value %d bytes, record %d bytes, %.4f%% of the data", records, value, mapBytes, 100*ratio)
		if records >= 10 && ratio >= 0.02 {
			t.Errorf("%d records per transaction: map costs %.2f%% of the data, over the 2%% budget", records, 100*ratio)
		}
	}
}
