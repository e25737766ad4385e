package mirror

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
)

// TestFaithfulCopy proves the partition-faithful copy record by record on kfake: same
// topic, same partition, source order, key, value, headers and timestamp
// unchanged, aborted source records never copied, target topics created with
// the source's shape, and later topics and partitions picked up.
func TestFaithfulCopy(t *testing.T) {
	for _, delivery := range []string{"exactly-once", "at-least-once"} {
		t.Run(delivery, func(t *testing.T) { testFaithfulCopy(t, delivery) })
	}
}

func testFaithfulCopy(t *testing.T, delivery string) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: fmt.Sprintf("  topics: {include: [\"orders\", \"pay\\\\..*\", \"late\"]}\n  delivery: %s", delivery)})
	east, west := p.Topology.Clusters["east"], p.Topology.Clusters["west"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, west)
	kfaketest.CreateTopicOn(t, src, "orders", 4, map[string]string{"retention.ms": "86400000"})
	kfaketest.CreateTopicOn(t, src, "pay.eu", 2, map[string]string{"cleanup.policy": "compact"})
	kfaketest.CreateTopicOn(t, src, "skipped", 1, nil)

	plain := kfaketest.IdempotentProducer(t, east, "")
	txn := kfaketest.IdempotentProducer(t, east, "test-txn")
	base := time.UnixMilli(1_700_000_000_000)
	n := 0
	send := func(prod sarama.SyncProducer, topic string, part int32, key []byte) {
		t.Helper()
		n++
		m := &sarama.ProducerMessage{Topic: topic, Partition: part, Value: sarama.StringEncoder(fmt.Sprintf("v-%d", n)),
			Timestamp: base.Add(time.Duration(n) * time.Millisecond),
			Headers:   []sarama.RecordHeader{{Key: []byte("h1"), Value: []byte(fmt.Sprint(n))}, {Key: []byte("h2"), Value: nil}}}
		if key != nil {
			m.Key = sarama.ByteEncoder(key)
		}
		if _, _, err := prod.SendMessage(m); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 200 {
		var key []byte
		if i%7 != 0 {
			key = []byte(fmt.Sprintf("k%d", i%13)) // some null keys
		}
		send(plain, "orders", int32(i%4), key)
		send(plain, "skipped", 0, key)
	}
	// Transactions on pay.eu: every third aborted.
	for tx := range 12 {
		if err := txn.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			send(txn, "pay.eu", int32(i%2), []byte(fmt.Sprintf("c%d", i)))
		}
		var err error
		if tx%3 == 2 {
			err = txn.AbortTxn()
		} else {
			err = txn.CommitTxn()
		}
		if err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := NewEngine(p.Topology, "east", "west", Options{Epoch: -1, Shards: 3, Delivery: p.Topology.Mirror.Delivery,
		TopicSyncInterval: 300 * time.Millisecond, IdleCheck: 200 * time.Millisecond, SessionTimeout: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("engine: %v", err)
		}
	}()

	check := func(topic string, parts int32) func() error {
		return func() error {
			if err := dst.RefreshMetadata(topic); err != nil {
				return err
			}
			for part := range parts {
				s, err := readAll(src, topic, part)
				if err != nil {
					return err
				}
				d, err := readAll(dst, topic, part)
				if err != nil {
					return err
				}
				if err := sameRecords(s, d, "kfake-east"); err != nil {
					return fmt.Errorf("%s/%d: %w", topic, part, err)
				}
			}
			return nil
		}
	}
	waitFor(t, 30*time.Second, "orders copied", check("orders", 4))
	waitFor(t, 30*time.Second, "pay.eu copied", check("pay.eu", 2))

	admin, err := sarama.NewClusterAdminFromClient(dst)
	if err != nil {
		t.Fatal(err)
	}
	topics, err := admin.ListTopics()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := topics["skipped"]; ok {
		t.Error("a topic outside the selection was created on the target")
	}
	if d := topics["orders"]; d.NumPartitions != 4 || d.ConfigEntries["retention.ms"] == nil || *d.ConfigEntries["retention.ms"] != "86400000" {
		t.Errorf("orders on the target: %d partitions, configs %v", d.NumPartitions, d.ConfigEntries)
	}
	if d := topics["pay.eu"]; d.ConfigEntries["cleanup.policy"] == nil || *d.ConfigEntries["cleanup.policy"] != "compact" {
		t.Errorf("pay.eu on the target lacks cleanup.policy=compact: %v", d.ConfigEntries)
	}

	// The lag drains to zero, also past the source's trailing transaction
	// markers.
	waitFor(t, 20*time.Second, "zero lag", func() error {
		lctx, lcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer lcancel()
		rep, err := linkstate.MeasureLag(lctx, kfaketest.Session(t, p.Topology), e.Link())
		if err != nil {
			return err
		}
		if !rep.Caught() {
			return fmt.Errorf("lag %d records: %+v", rep.TotalRecords, rep.Partitions)
		}
		return nil
	})

	// A topic created later starts mirroring within seconds; a partition
	// added later is picked up too.
	start := time.Now()
	kfaketest.CreateTopicOn(t, src, "late", 2, nil)
	for i := range 10 {
		send(plain, "late", int32(i%2), []byte("x"))
	}
	waitFor(t, 10*time.Second, "late topic copied", check("late", 2))
	t.Logf("a new topic was mirrored %v after its creation", time.Since(start).Round(time.Millisecond))
	sadmin, err := sarama.NewClusterAdminFromClient(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := sadmin.CreatePartitions("orders", 6, nil, false); err != nil && !errors.Is(err, sarama.ErrNoError) {
		t.Fatal(err)
	}
	plain2 := kfaketest.IdempotentProducer(t, east, "") // a producer that knows the new partitions
	for i := range 12 {
		send(plain2, "orders", int32(4+i%2), []byte("new"))
	}
	waitFor(t, 15*time.Second, "new partitions copied", check("orders", 6))
}
