package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestLargeTransactions: a backlog of 1 KiB records, copied in large
// transactions, goes through brokers that refuse batches over the default
// message.max.bytes (kfake enforces it as Kafka does).
func TestLargeTransactions(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"big\"]}"})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, "big", 2, nil)
	cfg, _ := east.SaramaConfig()
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	// Idempotent: a retried produce under load must not put a record
	// twice into the source (the target once read 20,001 of 20,000 with a
	// plain producer here).
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Net.MaxOpenRequests = 1
	prod, err := sarama.NewAsyncProducer(east.Bootstrap, cfg)
	if err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 1024)
	const n = 20000
	go func() {
		for i := range n {
			prod.Input() <- &sarama.ProducerMessage{Topic: "big", Partition: int32(i % 2), Value: sarama.ByteEncoder(value)}
		}
	}()
	for range n {
		select {
		case <-prod.Successes():
		case perr := <-prod.Errors():
			t.Fatal(perr.Err)
		}
	}
	prod.Close()
	written := 0
	for part := range int32(2) {
		d, err := readAll(src, "big", part)
		if err != nil {
			t.Fatal(err)
		}
		written += len(d)
	}
	if written != n {
		t.Fatalf("the source holds %d records, want %d: the test's producer wrote some twice", written, n)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := NewEngine(p.Topology, "east", "west", Options{Epoch: -1, Shards: 1, TopicSyncInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	waitFor(t, 60*time.Second, "the backlog copied", func() error {
		total := 0
		for part := range int32(2) {
			d, err := readAll(dst, "big", part)
			if err != nil {
				return err
			}
			total += len(d)
		}
		if total != n {
			if total > n {
				for part := range int32(2) {
					d, _ := readAll(dst, "big", part)
					seen := map[int64]int{}
					for _, r := range d {
						seen[sourceOffset(r)]++
						if seen[sourceOffset(r)] > 1 {
							t.Logf("DUP p%d src %d at target %d", part, sourceOffset(r), r.Offset)
						}
					}
				}
			}
			return fmt.Errorf("%d of %d records on the target", total, n)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
