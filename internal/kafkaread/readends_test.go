package kafkaread

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// countListOffsets counts the ListOffsets requests c receives from now on.
func countListOffsets(c interface {
	ControlKey(int16, func(kmsg.Request) (kmsg.Response, error, bool))
	KeepControl()
}) *atomic.Int64 {
	var n atomic.Int64
	c.ControlKey(int16(kmsg.ListOffsets), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		n.Add(1)
		return nil, nil, false
	})
	return &n
}

// TestReadCommittedTakesItsEndFromTheFirstFetch: a read from within the log
// asks for no offsets (each ListOffsets is a round trip, a WAN's when the
// cluster is far: three of them went before every read), and still stops at
// the last stable offset as it stood when the read began: a transaction left
// open is not read into, and an empty partition is done at once.
func TestReadCommittedTakesItsEndFromTheFirstFetch(t *testing.T) {
	c, client := newCluster(t)
	asked := countListOffsets(c)
	began := time.Now()
	values, _, next := readAll(t, client, 0)
	if len(values) != 0 || next != 0 {
		t.Fatalf("empty partition: read %v, next %d; want nothing and 0", values, next)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("reading an empty partition took %v", d)
	}
	plain := producer(t, c, "")
	for _, v := range []string{"a", "b", "c"} {
		send(t, plain, v)
	}
	open := producer(t, c, "open-txn")
	must(t, open.BeginTxn())
	send(t, open, "uncommitted")
	send(t, plain, "after-open") // past the open transaction: above the last stable offset
	values, offsets, next := readAll(t, client, 0)
	if !slices.Equal(values, []string{"a", "b", "c"}) || next != 3 {
		t.Fatalf("read %v at %v, next %d; want a, b, c and 3 (stopped at the open transaction)", values, offsets, next)
	}
	values, _, next = readAll(t, client, 1)
	if !slices.Equal(values, []string{"b", "c"}) || next != 3 {
		t.Fatalf("from 1: read %v, next %d; want b, c and 3", values, next)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("%d ListOffsets requests for reads within the log, want none", n)
	}
}

// TestReadCommittedOutsideTheLog: a from below the log start reads from the
// start; one past the high-water mark is an error wrapping
// sarama.ErrOffsetOutOfRange (the log was truncated or recreated).
func TestReadCommittedOutsideTheLog(t *testing.T) {
	c, client := newCluster(t)
	plain := producer(t, c, "")
	for _, v := range []string{"a", "b", "c", "d"} {
		send(t, plain, v)
	}
	acfg := baseConfig()
	acfg.Metadata.Full = true // sarama's admin needs it to find the leaders
	admin, err := sarama.NewClusterAdmin(c.ListenAddrs(), acfg)
	must(t, err)
	defer admin.Close()
	must(t, admin.DeleteRecords(topic, map[int32]int64{0: 2}))
	values, offsets, next := readAll(t, client, 0)
	if !slices.Equal(values, []string{"c", "d"}) || offsets[0] != 2 || next != 4 {
		t.Fatalf("from 0 after the head was deleted: read %v at %v, next %d; want c, d from offset 2 and 4", values, offsets, next)
	}
	values, _, _ = readAll(t, client, -1)
	if !slices.Equal(values, []string{"c", "d"}) {
		t.Fatalf("from -1: read %v, want c, d", values)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = ReadCommitted(ctx, client, topic, 0, 9, func(Record) error { return nil })
	if !errors.Is(err, sarama.ErrOffsetOutOfRange) {
		t.Fatalf("from 9 with the log ending at 4: err %v, want offset out of range", err)
	}
}
