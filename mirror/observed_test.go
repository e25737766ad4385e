package mirror

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

// TestCopyLearnsSourceEndsFromItsFetches: while records flow, the shard
// knows the source's ends from its fetch responses and asks the source for
// them with no request of its own (on a distant source each such request
// stalled the copy for a round trip), and its observations still follow
// the source's ends.
func TestCopyLearnsSourceEndsFromItsFetches(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"flow\"]}"})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, "flow", 3, nil)
	keepWriting(t, kfaketest.IdempotentProducer(t, east, ""), "flow", 3)
	// One topic sync pass (it measures the link's lag with requests of its
	// own, off the copy path), then none during the test.
	runEngine(t, p.Topology, Options{Shards: 1, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: time.Hour})
	link := p.Topology.Link("east", "west")
	ctx := kfaketest.Ctx(t, 60e9)
	observedPast := func(ends map[topology.TopicPartition]int64) func() error {
		return func() error {
			seen, err := linkstate.LastObserved(ctx, dst, link)
			if err != nil {
				return err
			}
			for tp, end := range ends {
				if o := seen[tp]; o.End < end {
					return fmt.Errorf("%s observed end %d, want %d or more", tp, o.End, end)
				}
			}
			return nil
		}
	}
	tps := []topology.TopicPartition{{Topic: "flow", Partition: 0}, {Topic: "flow", Partition: 1}, {Topic: "flow", Partition: 2}}
	// The copy under way for a while (past its start, where the
	// partitions' start reads the ends): 30 records of each partition.
	waitFor(t, 30*time.Second, "the copy under way", observedPast(map[topology.TopicPartition]int64{tps[0]: 30, tps[1]: 30, tps[2]: 30}))

	var asked atomic.Int64
	p.East.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		p.East.KeepControl()
		for _, tp := range req.(*kmsg.ListOffsetsRequest).Topics {
			if tp.Topic == "flow" {
				asked.Add(1)
			}
		}
		return nil, nil, false
	})
	// Fifteen IdleChecks of copying: each used to read the ends once.
	window, err := kafkaread.StableOffsets(ctx, src, tps)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the ends observed past the window's start", observedPast(window))
	asked.Store(0)
	time.Sleep(1500 * time.Millisecond) // the window itself: the shard copies a record every 10 ms
	later, err := kafkaread.StableOffsets(ctx, src, tps)
	if err != nil {
		t.Fatal(err)
	}
	n := asked.Load() - 1 // the read just above
	waitFor(t, 30*time.Second, "the ends observed past the window's end", observedPast(later))
	if n > 0 {
		t.Errorf("the shard read the source's ends %d time(s) in 1.5 s of copying, want none (the fetch responses carry them)", n)
	}
}

// TestTrailingMarkerSkippedWhileCopying: a partition whose last offset is a
// transaction's commit marker shows no lag while its shard keeps copying
// another partition: the copying shard moves its progress past the marker
// from what its fetcher saw, without waiting to be idle (it never is here).
func TestTrailingMarkerSkippedWhileCopying(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"mix\"]}"})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, "mix", 2, nil)
	flowing := keepWriting(t, kfaketest.IdempotentProducer(t, east, ""), "mix", 1) // mix/0 only
	runEngine(t, p.Topology, Options{Shards: 1, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: time.Hour})
	txp := kfaketest.IdempotentProducer(t, east, "mix-writer")
	if err := txp.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, _, err := txp.SendMessage(&sarama.ProducerMessage{Topic: "mix", Partition: 1, Value: sarama.StringEncoder(fmt.Sprint("t", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := txp.CommitTxn(); err != nil {
		t.Fatal(err)
	}
	ctx := kfaketest.Ctx(t, 60e9)
	tp := topology.TopicPartition{Topic: "mix", Partition: 1}
	ends, err := kafkaread.StableOffsets(ctx, src, []topology.TopicPartition{tp})
	if err != nil {
		t.Fatal(err)
	}
	if ends[tp] != 4 {
		t.Fatalf("mix/1 ends at %d, want 4 (three records and the commit marker)", ends[tp])
	}
	link := p.Topology.Link("east", "west")
	waitFor(t, 30*time.Second, "mix/1 mirrored to its end past the marker", func() error {
		seen, err := linkstate.LastObserved(ctx, dst, link)
		if err != nil {
			return err
		}
		if o := seen[tp]; o.Mirrored != 4 {
			return fmt.Errorf("mix/1 mirrored to %d, want 4", o.Mirrored)
		}
		return nil
	})
	if flowing.Load() == 0 {
		t.Fatal("mix/0 was not written to: the shard was not copying")
	}
}

// keepWriting writes a record every 10 ms into partitions 0 to n-1 of
// topic, in turn, until the test ends; it returns the count written. prod
// must place records in the partition they name.
func keepWriting(t *testing.T, prod sarama.SyncProducer, topic string, n int32) *atomic.Int64 {
	t.Helper()
	var written atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			m := &sarama.ProducerMessage{Topic: topic, Partition: int32(i) % n, Value: sarama.StringEncoder(strconv.Itoa(i))}
			if _, _, err := prod.SendMessage(m); err != nil {
				t.Error(err)
				return
			}
			written.Add(1)
		}
	})
	t.Cleanup(func() { close(stop); wg.Wait() })
	return &written
}
