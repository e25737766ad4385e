package kafkaread

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/topology"
)

// TestFirstTimestampsSkipsAbortedAndLeavesUnknownOut: the first committed
// record at or after each position, by one fetch: aborted and control
// records are passed over; a position with nothing committed before the
// end is left out for the caller to read on its own.
func TestFirstTimestampsSkipsAbortedAndLeavesUnknownOut(t *testing.T) {
	c, client := newCluster(t)
	plain := producer(t, c, "")
	txn := producer(t, c, "first-ts")
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	at := func(p sarama.SyncProducer, value string, ts time.Time) int64 {
		t.Helper()
		_, off, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(value), Timestamp: ts})
		must(t, err)
		return off
	}
	a := at(plain, "a", base)
	must(t, txn.BeginTxn())
	x := at(txn, "x", base.Add(time.Minute))
	must(t, txn.AbortTxn())
	b := at(plain, "b", base.Add(2*time.Minute))
	big := at(plain, strings.Repeat("z", 3*firstShare), base.Add(3*time.Minute))
	ends, err := PartitionEnds(context.Background(), client, topic, 0)
	must(t, err)

	tp := topology.TopicPartition{Topic: topic, Partition: 0}
	for _, c := range []struct {
		name   string
		from   int64
		offset int64 // -1: left out
		ts     time.Time
	}{
		{"a plain record", a, a, base},
		{"past an aborted transaction and its marker", x, b, base.Add(2 * time.Minute)},
		{"a batch larger than the share, first in its request (KIP-74: it comes whole)", big, big, base.Add(3 * time.Minute)},
		{"nothing before the end", ends.Stable, -1, time.Time{}},
	} {
		got, err := FirstTimestamps(context.Background(), client, map[topology.TopicPartition]int64{tp: c.from}, map[topology.TopicPartition]int64{tp: ends.Stable})
		must(t, err)
		r, ok := got[tp]
		switch {
		case c.offset < 0 && ok:
			t.Errorf("%s: got offset %d, want it left out", c.name, r.Offset)
		case c.offset >= 0 && !ok:
			t.Errorf("%s: left out, want offset %d", c.name, c.offset)
		case ok && (r.Offset != c.offset || !r.Timestamp.Equal(c.ts)):
			t.Errorf("%s: got offset %d at %v, want %d at %v", c.name, r.Offset, r.Timestamp, c.offset, c.ts)
		}
	}
}
