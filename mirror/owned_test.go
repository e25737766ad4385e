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

// TestOwnedMessageKeepsEveryHeader: the fetcher's copy of a record (one
// allocation for the message and two headers, more when there are more)
// holds every header, key and value as they were, null ones still null,
// and none of its bytes point into the fetch response.
func TestOwnedMessageKeepsEveryHeader(t *testing.T) {
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
			m := ownedMessage(tp, rec)
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
		&sarama.RecordHeader{Key: []byte(HeaderOrigin), Value: []byte("north-id")},
		&sarama.RecordHeader{Key: []byte(HeaderSourceOffset), Value: []byte{9, 9, 9, 9, 9, 9, 9, 9}})
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
		fmt.Sprintf("%s=%x", HeaderOrigin, "north-id"), HeaderSourceOffset + "=0102030405060708"}
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
