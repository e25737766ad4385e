package mirror

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// TestBacklogTransactionsOutgrowTheBudget: the budget bounds the source
// records in memory, not the size of a transaction. A record's share goes
// back once its copy is acknowledged, so a shard catching up on a backlog
// commits a few large transactions (each costs the target's brokers
// several requests and a marker per partition) while holding no more than
// the budget. Before, a record held its share until its transaction ended:
// with a budget of 28 records, 400 records took at least 15 transactions.
func TestBacklogTransactionsOutgrowTheBudget(t *testing.T) {
	const topic, records, size = "backlog", 400, 1024
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: fmt.Sprintf("  topics: {include: [%q]}", topic)})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, topic, 1, nil)
	prod := kfaketest.IdempotentProducer(t, east, "")
	var backlog []*sarama.ProducerMessage
	for i := range records {
		v := bytes.Repeat([]byte{byte('a' + i%26)}, size)
		backlog = append(backlog, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprint(i)), Value: sarama.ByteEncoder(v)})
	}
	if err := prod.SendMessages(backlog); err != nil {
		t.Fatal(err)
	}

	txnID := p.Topology.Link("east", "west").TransactionalID(0)
	var commits atomic.Int64
	p.West.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		if r := req.(*kmsg.EndTxnRequest); r.TransactionalID == txnID && r.Commit {
			commits.Add(1)
		}
		return nil, nil, false
	})
	budget := 28 * heldBytes(&sarama.ConsumerMessage{Key: []byte("100"), Value: make([]byte, size)})
	runEngine(t, p.Topology, Options{Shards: 1, MaxBufferedBytes: budget, MaxInflightBytes: 8 * size, ChannelBuffer: 16})
	waitCopied(t, src, dst, topic, "kfake-east")

	n := commits.Load()
	t.Logf("%d records copied in %d transactions, with a budget of 28 records", records, n)
	if n*28 >= records {
		t.Fatalf("%d transactions for %d records: none took more records than the budget holds (28)", n, records)
	}
}

// TestInflightBytesBounded: a transaction sends a shard's copies to the
// producer only while the bytes sent and not yet acknowledged stay within
// MaxInflightBytes (the producer queues whatever it is given), and a
// single record larger than the bound still goes when nothing is in
// flight.
func TestInflightBytesBounded(t *testing.T) {
	e := &Engine{opts: Options{MaxInflightBytes: 3000}, buf: newBudget(1 << 20)}
	s := &shard{e: e, prodLimit: 1 << 20}
	tx := s.newTxn()
	tp := topology.TopicPartition{Topic: "t", Partition: 0}
	rec := func(n int) *sarama.ProducerMessage {
		return &sarama.ProducerMessage{Topic: "t", Value: sarama.ByteEncoder(make([]byte, n)), Metadata: &txnMeta{tp: tp, bytes: n, target: -1}}
	}
	big := rec(5000)
	if !tx.mayQueue(big) {
		t.Fatal("a record larger than the bound is refused with nothing in flight: it could never go")
	}
	first := rec(1000)
	tx.queued(first)
	if !tx.mayQueue(rec(2000)) {
		t.Error("1,000 + 2,000 bytes within a bound of 3,000 refused")
	}
	second := rec(2000)
	tx.queued(second)
	if tx.mayQueue(rec(1)) {
		t.Error("3,001 bytes in flight allowed with a bound of 3,000")
	}
	tx.ack(first)
	if !tx.mayQueue(rec(1000)) {
		t.Error("after the acknowledgement of 1,000 bytes, 1,000 more refused")
	}
	if tx.mayQueue(big) {
		t.Error("a record larger than the bound allowed while others are in flight")
	}
	offsetMap := &sarama.ProducerMessage{Metadata: offsetMapMeta{}}
	if !tx.mayQueue(offsetMap) {
		t.Error("the offset map's record waits for the bound: it must always go")
	}
}
