package mirror

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/offsettranslate"
	"github.com/drctl/drctl/topology"
)

// TestOffsetMapTravelsWithTheRecords: once a shard knows where its records
// land on the target, a transaction adds the offset map's partition with
// the records' (one AddPartitionsToTxn), and a transaction that stops
// taking records with records still in flight sends its offset map with
// them instead of after their acknowledgements. A backlog copied three
// records per transaction: before, each transaction took two
// AddPartitionsToTxn and two produce requests (the records, then the
// offset map).
func TestOffsetMapTravelsWithTheRecords(t *testing.T) {
	_, p, src, dst, prod := copyingOneTopic(t, "backlog", 5, Options{Shards: 1, MaxBatchRecords: 3})

	txnID := p.Topology.Link("east", "west").TransactionalID(0)
	var adds, produces, ends atomic.Int64
	p.West.ControlKey(int16(kmsg.AddPartitionsToTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		r := req.(*kmsg.AddPartitionsToTxnRequest)
		for _, tx := range r.Transactions {
			if tx.TransactionalID == txnID {
				adds.Add(1)
			}
		}
		if r.TransactionalID == txnID {
			adds.Add(1)
		}
		return nil, nil, false
	})
	p.West.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		if id := req.(*kmsg.ProduceRequest).TransactionID; id != nil && *id == txnID {
			produces.Add(1)
		}
		return nil, nil, false
	})
	p.West.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		if r := req.(*kmsg.EndTxnRequest); r.TransactionalID == txnID && r.Commit {
			ends.Add(1)
		}
		return nil, nil, false
	})
	var backlog []*sarama.ProducerMessage
	for i := range 300 {
		backlog = append(backlog, &sarama.ProducerMessage{Topic: "backlog", Value: sarama.StringEncoder(fmt.Sprint("b-", i))})
	}
	if err := prod.SendMessages(backlog); err != nil {
		t.Fatal(err)
	}
	waitCopied(t, src, dst, "backlog", "kfake-east")
	n := ends.Load()
	t.Logf("%d transactions: %d AddPartitionsToTxn, %d produce requests", n, adds.Load(), produces.Load())
	if n < 50 {
		t.Fatalf("%d transactions committed for 300 records at 3 a transaction, want 50 or more", n)
	}
	if a := adds.Load(); float64(a) > 1.2*float64(n) {
		t.Errorf("%d AddPartitionsToTxn for %d transactions, want one each", a, n)
	}
	if pr := produces.Load(); float64(pr) > 1.5*float64(n) {
		t.Errorf("%d produce requests for %d transactions, want the offset map sent with the records (one each)", pr, n)
	}
}

// TestForeignWriteOnTargetKeepsTheOffsetMapExact: a record written to the
// target partition by someone else moves the offsets the shard predicted
// for its next copies. The transaction must abort instead of committing an
// offset map that is off by the foreign record, and the copy goes on with
// every copied record mapped exactly.
func TestForeignWriteOnTargetKeepsTheOffsetMapExact(t *testing.T) {
	e, p, src, dst, prod := copyingOneTopic(t, "orders", 20, Options{Shards: 1})

	foreign := kfaketest.Producer(t, p.Topology.Clusters["west"], 0)
	sendN(t, foreign, "orders", 3, "foreign")
	for i := range 20 {
		sendN(t, prod, "orders", 1, fmt.Sprint("b-", i))
		time.Sleep(5 * time.Millisecond)
	}
	var copied []int64 // west offsets of the copies
	var srcOffsets []int64
	waitFor(t, 30*time.Second, "orders copied around the foreign records", func() error {
		s, err := readAll(src, "orders", 0)
		if err != nil {
			return err
		}
		d, err := readAll(dst, "orders", 0)
		if err != nil {
			return err
		}
		var mine, theirs []int64
		var copies = d[:0:0]
		for _, r := range d {
			if strings.HasPrefix(string(r.Value), "foreign-") {
				theirs = append(theirs, r.Offset)
				continue
			}
			copies = append(copies, r)
			mine = append(mine, r.Offset)
		}
		if len(theirs) != 3 {
			return fmt.Errorf("west holds %d foreign records, want 3", len(theirs))
		}
		if err := sameRecords(s, copies, "kfake-east"); err != nil {
			return err
		}
		copied, srcOffsets = mine, nil
		for _, r := range s {
			srcOffsets = append(srcOffsets, r.Offset)
		}
		return nil
	})
	if !e.unpredictable(topology.TopicPartition{Topic: "orders", Partition: 0}) {
		t.Errorf("the foreign records did not break a prediction: was the offset map sent early at all?")
	}
	ctx := kfaketest.Ctx(t, 30*time.Second)
	x, err := offsettranslate.Load(ctx, dst, p.Topology.Link("east", "west").OffsetsTopic())
	if err != nil {
		t.Fatal(err)
	}
	for i, so := range srcOffsets {
		r := x.Translate("orders", 0, so)
		if r.Status != offsettranslate.Exact || r.Target != copied[i] {
			t.Errorf("source offset %d translates to %+v, want exactly west offset %d", so, r, copied[i])
		}
	}
}

// TestAcknowledgementTooLateAborts: a target that takes longer than
// ProduceTimeout to acknowledge makes the shard abort its transaction and
// start over, even though the late acknowledgement is still on its way:
// the producer returns it (on its unbuffered channel) before it sends the
// abort. Before, the abort waited for the producer, which waited for that
// acknowledgement to be read: the shard hung for good.
func TestAcknowledgementTooLateAborts(t *testing.T) {
	_, p, src, dst, prod := copyingOneTopic(t, "slow", 3, Options{Shards: 1, ProduceTimeout: 300 * time.Millisecond})

	txnID := p.Topology.Link("east", "west").TransactionalID(0)
	var held atomic.Bool
	released := make(chan struct{})
	p.West.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		if id := req.(*kmsg.ProduceRequest).TransactionID; id != nil && *id == txnID && held.CompareAndSwap(false, true) {
			// One produce request answered a second late: after the
			// shard gave up on it.
			p.West.SleepControl(func() {
				select {
				case <-released:
				case <-time.After(time.Second):
				}
			})
		}
		return nil, nil, false
	})
	t.Cleanup(func() { close(released) })
	sendN(t, prod, "slow", 5, "late")
	waitFor(t, 10*time.Second, "a produce request held", func() error {
		if !held.Load() {
			return fmt.Errorf("none yet")
		}
		return nil
	})
	sendN(t, prod, "slow", 5, "after")
	waitCopied(t, src, dst, "slow", "kfake-east")
}

// copyingOneTopic mirrors east's new one-partition topic with opts once n
// records of it are copied; west is the pair's target.
func copyingOneTopic(t *testing.T, topic string, n int, opts Options) (*Engine, *kfaketest.Pair, sarama.Client, sarama.Client, sarama.SyncProducer) {
	t.Helper()
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: fmt.Sprintf("  topics: {include: [%q]}", topic)})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, topic, 1, nil)
	prod := kfaketest.IdempotentProducer(t, east, "")
	sendN(t, prod, topic, n, "warm")
	e := runEngine(t, p.Topology, opts)
	waitCopied(t, src, dst, topic, "kfake-east")
	return e, p, src, dst, prod
}

// TestSlowCommitMarkersDoNotStallTheShard: the coordinator answers
// CONCURRENT_TRANSACTIONS to a transaction that starts while the previous
// one's commit markers are still being written. At 10,000 partitions that
// lasts seconds on a busy broker. The producer must keep retrying: sarama's
// default budget (50 retries, under 5 s with our backoff) gave up, and the
// records already queued then hung in the producer until ProduceTimeout
// (the restart of the 10,000-partition scale run took 82-118 s for it).
func TestSlowCommitMarkersDoNotStallTheShard(t *testing.T) {
	e, p, src, dst, prod := copyingOneTopic(t, "markers", 3, Options{Shards: 1, ProduceTimeout: 30 * time.Second})

	txnID := p.Topology.Link("east", "west").TransactionalID(0)
	const busyFor = 6 * time.Second
	var busySince atomic.Int64
	var refused atomic.Int64
	p.West.ControlKey(int16(kmsg.AddPartitionsToTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		r := req.(*kmsg.AddPartitionsToTxnRequest)
		if r.TransactionalID != txnID {
			return nil, nil, false
		}
		busySince.CompareAndSwap(0, time.Now().UnixNano())
		if time.Since(time.Unix(0, busySince.Load())) >= busyFor {
			return nil, nil, false
		}
		refused.Add(1)
		resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		resp.Version = r.Version
		for _, rt := range r.Topics {
			st := kmsg.NewAddPartitionsToTxnResponseTopic()
			st.Topic = rt.Topic
			for _, part := range rt.Partitions {
				sp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				sp.Partition = part
				sp.ErrorCode = 51 // CONCURRENT_TRANSACTIONS
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	began := time.Now()
	sendN(t, prod, "markers", 5, "while the markers are written")
	waitFor(t, 20*time.Second, "the records copied", func() error {
		s, err := readAll(src, "markers", 0)
		if err != nil {
			return err
		}
		d, err := readAll(dst, "markers", 0)
		if err != nil {
			return err
		}
		return sameRecords(s, d, "kfake-east")
	})
	took := time.Since(began)
	t.Logf("copied after %v; %d AddPartitionsToTxn refused", took, refused.Load())
	if refused.Load() == 0 {
		t.Fatal("no AddPartitionsToTxn was refused: the test did not hold the transaction")
	}
	if took < busyFor {
		t.Fatalf("copied after %v, before the coordinator let the transaction start (%v)", took, busyFor)
	}
	if took > busyFor+5*time.Second {
		t.Fatalf("copied after %v: the shard stalled or restarted instead of retrying until the coordinator was ready after %v", took, busyFor)
	}
	if n := testutil.ToFloat64(e.metrics.Errors.WithLabelValues(e.link.String(), "target")); n != 0 {
		t.Fatalf("%v target errors: the shard failed instead of retrying", n)
	}
}
