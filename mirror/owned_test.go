package mirror

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// TestOwnedMessagesKeepEveryHeader: the fetcher's copy of a record
// holds every header, key and value as they were, null ones still null,
// and none of its bytes point into the fetch response.
func TestOwnedMessagesKeepEveryHeader(t *testing.T) {
	tp := topology.TopicPartition{Topic: "t", Partition: 3}
	for _, n := range []int{0, 1, 2, 3, 7} {
		t.Run(fmt.Sprintf("%d headers", n), func(t *testing.T) {
			rec := kafkaread.Record{Offset: 42, Key: []byte("key"), Value: nil, Timestamp: time.UnixMilli(1700000000000)}
			for i := range n {
				var v []byte
				if i%2 == 0 {
					v = []byte(fmt.Sprintf("value-%d", i))
				}
				rec.Headers = append(rec.Headers, &sarama.RecordHeader{Key: []byte(fmt.Sprintf("h%d", i)), Value: v})
			}
			ms := ownedMessages(tp, []kafkaread.Record{rec})
			if len(ms) != 1 {
				t.Fatalf("%d messages of one record", len(ms))
			}
			m := ms[0]
			// The fetch response's bytes are reused: scribble over them.
			for _, h := range rec.Headers {
				copy(h.Key, "XX")
				copy(h.Value, "XXXXXX")
			}
			copy(rec.Key, "XXX")
			if m.Topic != "t" || m.Partition != 3 || m.Offset != 42 || !m.Timestamp.Equal(rec.Timestamp) {
				t.Fatalf("message %s/%d@%d %v", m.Topic, m.Partition, m.Offset, m.Timestamp)
			}
			if string(m.Key) != "key" || m.Value != nil {
				t.Fatalf("key %q value %v: want \"key\" and null", m.Key, m.Value)
			}
			if len(m.Headers) != n {
				t.Fatalf("%d headers, want %d", len(m.Headers), n)
			}
			for i, h := range m.Headers {
				if string(h.Key) != fmt.Sprintf("h%d", i) {
					t.Fatalf("header %d key %q", i, h.Key)
				}
				if i%2 == 0 && string(h.Value) != fmt.Sprintf("value-%d", i) || i%2 == 1 && h.Value != nil {
					t.Fatalf("header %d value %q", i, h.Value)
				}
			}
		})
	}
}

// TestOwnedMessagesShareChunks: the records of one response are copied
// into a few shared buffers, not one allocation per record, and a copy
// keeps its own bytes whatever its neighbours' sizes: records larger
// than a chunk, empty and null keys, chunks cut at every place.
func TestOwnedMessagesShareChunks(t *testing.T) {
	tp := topology.TopicPartition{Topic: "t", Partition: 0}
	var recs []kafkaread.Record
	sizes := []int{1024, 0, 5, ownedChunkBytes - 3, 1, ownedChunkBytes + 7, 3 * ownedChunkBytes, 17}
	for i := range 200 {
		v := bytes.Repeat([]byte{byte('a' + i%26)}, sizes[i%len(sizes)])
		rec := kafkaread.Record{Offset: int64(i), Value: v, Timestamp: time.UnixMilli(int64(i))}
		switch i % 3 {
		case 0:
			rec.Key = []byte(fmt.Sprintf("key-%d", i))
		case 1:
			rec.Key = []byte{}
		}
		rec.Headers = []*sarama.RecordHeader{{Key: []byte("seq"), Value: []byte(fmt.Sprint(i))}, {Key: []byte("origin")}}
		recs = append(recs, rec)
	}
	ms := ownedMessages(tp, recs)
	for i := range recs { // the response's bytes are reused
		for j := range recs[i].Value {
			recs[i].Value[j] = 'X'
		}
		copy(recs[i].Headers[0].Value, "XXXX")
	}
	if len(ms) != len(recs) {
		t.Fatalf("%d messages of %d records", len(ms), len(recs))
	}
	for i, m := range ms {
		want := bytes.Repeat([]byte{byte('a' + i%26)}, sizes[i%len(sizes)])
		if m.Offset != int64(i) || !bytes.Equal(m.Value, want) || m.Value == nil {
			t.Fatalf("record %d: offset %d, value of %d bytes %.10q", i, m.Offset, len(m.Value), m.Value)
		}
		if cap(m.Value) != len(m.Value) {
			t.Fatalf("record %d: its value can be appended to over its neighbour's bytes", i)
		}
		switch i % 3 {
		case 0:
			if string(m.Key) != fmt.Sprintf("key-%d", i) {
				t.Fatalf("record %d key %q", i, m.Key)
			}
		case 1:
			if m.Key == nil || len(m.Key) != 0 {
				t.Fatalf("record %d: an empty key became %v", i, m.Key)
			}
		case 2:
			if m.Key != nil {
				t.Fatalf("record %d: a null key became %q", i, m.Key)
			}
		}
		if len(m.Headers) != 2 || string(m.Headers[0].Value) != fmt.Sprint(i) || m.Headers[1].Value != nil {
			t.Fatalf("record %d headers %v", i, m.Headers)
		}
	}

	// 30 records of 1 KiB with two headers, the bench's shape: a few
	// allocations for all of them (one buffer and one array of messages
	// per chunk, and the list), where there were two per record.
	small := make([]kafkaread.Record, 30)
	for i := range small {
		small[i] = kafkaread.Record{Offset: int64(i), Key: []byte("bench-0000000001"), Value: make([]byte, 1024),
			Headers: []*sarama.RecordHeader{{Key: []byte("bench-seq"), Value: []byte("1")}, {Key: []byte("bench-origin"), Value: []byte("east")}}}
	}
	if allocs := testing.AllocsPerRun(20, func() { ownedMessages(tp, small) }); allocs > 5 {
		t.Fatalf("%v allocations for 30 records", allocs)
	}
}

// TestCopyCarriesEveryHeader: a copy keeps the source's headers in order
// (more than its built-in room for four included), drops the source
// offset of an earlier hop, keeps that hop's origin, and ends with the
// origin and this hop's source offset.
func TestCopyCarriesEveryHeader(t *testing.T) {
	s := &shard{e: &Engine{srcID: []byte("east-id"), dstID: []byte("west-id")}}
	m := &sarama.ConsumerMessage{Topic: "t", Offset: 0x0102030405060708}
	for i := range 5 {
		m.Headers = append(m.Headers, &sarama.RecordHeader{Key: []byte(fmt.Sprintf("h%d", i)), Value: []byte{byte(i)}})
	}
	m.Headers = append(m.Headers,
		&sarama.RecordHeader{Key: []byte(topology.HeaderOrigin), Value: []byte("north-id")},
		&sarama.RecordHeader{Key: []byte(topology.HeaderSourceOffset), Value: []byte{9, 9, 9, 9, 9, 9, 9, 9}})
	c := new(copyRecord)
	hs, own := s.provenance(m, c.headers[:0], &c.offset)
	if own {
		t.Fatal("a record from north taken as the target's own")
	}
	var got []string
	for _, h := range hs {
		got = append(got, fmt.Sprintf("%s=%x", h.Key, h.Value))
	}
	want := []string{"h0=00", "h1=01", "h2=02", "h3=03", "h4=04",
		fmt.Sprintf("%s=%x", topology.HeaderOrigin, "north-id"), topology.HeaderSourceOffset + "=0102030405060708"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("headers\n got %v\nwant %v", got, want)
	}
	// Two copies never share their offset's bytes.
	c2 := new(copyRecord)
	m.Offset = 7
	hs2, _ := s.provenance(m, c2.headers[:0], &c2.offset)
	if bytes.Equal(hs[len(hs)-1].Value, hs2[len(hs2)-1].Value) {
		t.Fatal("the second copy's source offset overwrote the first's")
	}
	m.Headers[5].Value = []byte("west-id")
	if _, own := s.provenance(m, new(copyRecord).headers[:0], new([8]byte)); !own {
		t.Fatal("a record whose origin is the target is copied back")
	}
}
