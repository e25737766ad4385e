//go:build e2e

package e2e

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// TestMirrorCompareCatches checks the checker the mirror tests rely on:
// faithfulCopy accepts a faithful copy and names each kind of damage.
func TestMirrorCompareCatches(t *testing.T) {
	const origin = "east-cluster-id"
	ts := time.UnixMilli(1_700_000_000_000)
	src := []kafkaread.Record{
		{Offset: 0, Key: nil, Value: []byte("a"), Timestamp: ts, Headers: []*sarama.RecordHeader{{Key: []byte("h"), Value: nil}}},
		{Offset: 2, Key: []byte{}, Value: []byte("b"), Timestamp: ts.Add(time.Millisecond)},
		{Offset: 3, Key: []byte("k"), Value: nil, Timestamp: ts.Add(2 * time.Millisecond),
			Headers: []*sarama.RecordHeader{{Key: []byte("d"), Value: []byte("1")}, {Key: []byte("d"), Value: []byte("2")}}},
	}
	copyOf := func(r kafkaread.Record, at int64) kafkaread.Record {
		var off [8]byte
		binary.BigEndian.PutUint64(off[:], uint64(r.Offset))
		c := r
		c.Offset = at
		c.Headers = append(append([]*sarama.RecordHeader(nil), r.Headers...),
			&sarama.RecordHeader{Key: []byte(topology.HeaderOrigin), Value: []byte(origin)},
			&sarama.RecordHeader{Key: []byte(topology.HeaderSourceOffset), Value: off[:]})
		return c
	}
	good := func() []kafkaread.Record {
		var out []kafkaread.Record
		for i, r := range src {
			out = append(out, copyOf(r, int64(i)))
		}
		return out
	}
	if err := faithfulCopy(src, good(), origin, false); err != nil {
		t.Fatalf("a faithful copy was refused: %v", err)
	}
	if err := faithfulCopy(src, good()[:2], origin, true); err != nil {
		t.Fatalf("a faithful prefix was refused: %v", err)
	}
	for _, c := range []struct {
		name   string
		damage func([]kafkaread.Record) []kafkaread.Record
		want   string
	}{
		{"missing record", func(d []kafkaread.Record) []kafkaread.Record { return d[:2] }, "target 2"},
		{"duplicate", func(d []kafkaread.Record) []kafkaread.Record {
			return append(d[:2], copyOf(src[1], 2), copyOf(src[2], 3))
		}, "duplicated"},
		{"gap", func(d []kafkaread.Record) []kafkaread.Record { return append(d[:1:1], d[2], copyOf(src[2], 3)) }, "source offset header 3, want 2"},
		{"null key made empty", func(d []kafkaread.Record) []kafkaread.Record { d[0].Key = []byte{}; return d }, "key"},
		{"empty key made null", func(d []kafkaread.Record) []kafkaread.Record { d[1].Key = nil; return d }, "key"},
		{"tombstone made empty", func(d []kafkaread.Record) []kafkaread.Record { d[2].Value = []byte{}; return d }, "value"},
		{"timestamp", func(d []kafkaread.Record) []kafkaread.Record { d[1].Timestamp = ts; return d }, "timestamp"},
		{"null header value made empty", func(d []kafkaread.Record) []kafkaread.Record {
			d[0].Headers[0] = &sarama.RecordHeader{Key: []byte("h"), Value: []byte{}}
			return d
		}, "header 0"},
		{"header order", func(d []kafkaread.Record) []kafkaread.Record {
			d[2].Headers[0], d[2].Headers[1] = d[2].Headers[1], d[2].Headers[0]
			return d
		}, "header 0"},
		{"origin", func(d []kafkaread.Record) []kafkaread.Record {
			d[1].Headers[0] = &sarama.RecordHeader{Key: []byte(topology.HeaderOrigin), Value: []byte("west")}
			return d
		}, "origin"},
		{"no provenance", func(d []kafkaread.Record) []kafkaread.Record { d[1].Headers = nil; return d }, "0 origin"},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			err := faithfulCopy(src, c.damage(good()), origin, false)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error mentioning %q", err, c.want)
			}
		})
	}
}
