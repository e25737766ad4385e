package mirror

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// openTxns counts, as the target's transaction coordinator sees them, the
// transactions open at once: a transactional id opens one with an
// AddPartitionsToTxn after its last EndTxn, and EndTxn closes it.
type openTxns struct {
	mu   sync.Mutex
	open map[string]bool
	most int
}

func watchTxns(c *kfake.Cluster) *openTxns {
	o := &openTxns{open: map[string]bool{}}
	c.ControlKey(int16(kmsg.AddPartitionsToTxn), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.AddPartitionsToTxnRequest)
		o.mu.Lock()
		defer o.mu.Unlock()
		ids := []string{req.TransactionalID}
		for _, t := range req.Transactions {
			ids = append(ids, t.TransactionalID)
		}
		for _, id := range ids {
			if id != "" {
				o.open[id] = true
			}
		}
		o.most = max(o.most, len(o.open))
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.EndTxn), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		o.mu.Lock()
		defer o.mu.Unlock()
		delete(o.open, r.(*kmsg.EndTxnRequest).TransactionalID)
		return nil, nil, false
	})
	return o
}

func (o *openTxns) max() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.most
}

// burstParts is the partition count of the topics these tests mirror: twice
// the shards, so that every shard copies some.
const burstParts = 16

// mirroredTopic is a pair of clusters mirroring topic, created on east
// with n partitions, the clients of both and a producer on east.
func mirroredTopic(t *testing.T, topic string, n int32) (*kfaketest.Pair, sarama.Client, sarama.Client, sarama.SyncProducer) {
	t.Helper()
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: fmt.Sprintf("  topics: {include: [%q]}", topic)})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, topic, n, nil)
	return p, src, dst, kfaketest.IdempotentProducer(t, east, "")
}

// burst writes rounds records into every partition of topic at once.
func burst(t *testing.T, prod sarama.SyncProducer, topic string, partitions int32, rounds int) {
	t.Helper()
	var msgs []*sarama.ProducerMessage
	for r := range rounds {
		for p := range partitions {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: p, Value: sarama.StringEncoder(fmt.Sprintf("r%d-p%d", r, p))})
		}
	}
	if err := prod.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
}

func waitAllCopied(t *testing.T, src, dst sarama.Client, topic string, partitions int32) {
	t.Helper()
	waitFor(t, 60*time.Second, topic+" copied record by record", func() error {
		for p := range partitions {
			s, err := readAll(src, topic, p)
			if err != nil {
				return err
			}
			d, err := readAll(dst, topic, p)
			if err != nil {
				return err
			}
			if err := sameRecords(s, d, "kfake-east"); err != nil {
				return fmt.Errorf("partition %d: %w", p, err)
			}
		}
		return nil
	})
}

// TestTxnConcurrencyBoundsTransactionsInFlight: with TxnConcurrency 2, eight
// shards that keep up never have more than two transactions open on the
// target at once, and the copy is exact; without it, the same bursts open
// more (which shows that the count sees the overlap).
func TestTxnConcurrencyBoundsTransactionsInFlight(t *testing.T) {
	for _, c := range []struct {
		limit      int
		wantAtMost int
	}{{2, 2}, {0, 0}} {
		t.Run(fmt.Sprintf("limit %d", c.limit), func(t *testing.T) {
			p, src, dst, prod := mirroredTopic(t, "busy", burstParts)
			burst(t, prod, "busy", burstParts, 1)
			runEngine(t, p.Topology, Options{Shards: 8, TxnConcurrency: c.limit})
			waitAllCopied(t, src, dst, "busy", burstParts)
			open := watchTxns(p.West)
			for range 15 {
				burst(t, prod, "busy", burstParts, 5)
			}
			waitAllCopied(t, src, dst, "busy", burstParts)
			got := open.max()
			t.Logf("at most %d transactions open at once", got)
			switch {
			case c.wantAtMost > 0 && got > c.wantAtMost:
				t.Errorf("%d transactions open at once, want at most %d", got, c.wantAtMost)
			case c.wantAtMost == 0 && got <= 2:
				t.Errorf("without a limit only %d transactions were open at once: the bursts do not make the shards overlap, so the limit's test proves nothing", got)
			}
		})
	}
}

// TestTxnConcurrencyLetsABacklogThrough: a shard whose buffer holds a
// backlog does not wait for a token, so a catch-up (a reseed, a restart
// after an outage) runs on every shard at once even with TxnConcurrency 1,
// and stays exact.
func TestTxnConcurrencyLetsABacklogThrough(t *testing.T) {
	p, src, dst, prod := mirroredTopic(t, "backlog", burstParts)
	burst(t, prod, "backlog", burstParts, 250)
	open := watchTxns(p.West)
	runEngine(t, p.Topology, Options{Shards: 8, TxnConcurrency: 1, ChannelBuffer: 32, MaxBatchRecords: 64})
	waitAllCopied(t, src, dst, "backlog", burstParts)
	if got := open.max(); got < 2 {
		t.Errorf("at most %d transaction open at once during a backlog of 4,000 records on 8 shards: the backlog waited for the token", got)
	}
}
