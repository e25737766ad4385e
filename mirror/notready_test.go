package mirror

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/kafkaconn"
)

// TestShardWaitsForAPartitionNotReady: the target refuses a shard's writes
// with NOT_LEADER_OR_FOLLOWER for longer than kafkaconn's second of
// retries, as a broker does for a while after it created hundreds of
// partitions (it names itself their leader in metadata before it takes
// writes). The shard keeps retrying and copies on once the partition is
// ready, without stopping: a stopped shard aborted its transaction, whose
// markers then waited for the same partitions, and its producer could not
// be opened again for tens of seconds (seen in the 1,000-partition memory
// scenario: a copy of 13-20 s took 46 s).
func TestShardWaitsForAPartitionNotReady(t *testing.T) {
	e, p, src, dst, prod := copyingOneTopic(t, "notready", 3, Options{Shards: 1})

	notReadyFor := time.Duration(kafkaconn.ProducerRetries+10) * kafkaconn.ProducerRetryBackoff
	var until atomic.Int64
	var refused atomic.Int64
	p.West.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		r := req.(*kmsg.ProduceRequest)
		if time.Now().UnixNano() >= until.Load() {
			return nil, nil, false
		}
		resp := r.ResponseKind().(*kmsg.ProduceResponse)
		resp.Version = r.Version
		for _, rt := range r.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic = rt.Topic
			st.TopicID = rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = 6 // NOT_LEADER_OR_FOLLOWER
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		refused.Add(1)
		return resp, nil, true
	})
	until.Store(time.Now().Add(notReadyFor).UnixNano())
	sendN(t, prod, "notready", 5, "later")
	waitCopied(t, src, dst, "notready", "kfake-east")

	if refused.Load() == 0 {
		t.Fatal("no write was refused: the test did not test anything")
	}
	link := e.link.String()
	if n := testutil.ToFloat64(e.metrics.Transactions.WithLabelValues(link, "aborted")); n != 0 {
		t.Errorf("%v aborted transaction(s): the shard gave up on a partition not ready for %v and restarted", n, notReadyFor)
	}
	if n := testutil.ToFloat64(e.metrics.Errors.WithLabelValues(link, "target")); n != 0 {
		t.Errorf("%v target error(s) counted while a partition was not ready for %v", n, notReadyFor)
	}
}

// TestShardRetriesRideOutTenSeconds: a shard's producer retries a refused
// write for about 10 s, the first second as often as drctl's other
// producers, and with few retry levels: sarama keeps a slot per level in
// the producer of every target partition (100 levels were 35 MB of a
// 10,000-partition link's heap).
func TestShardRetriesRideOutTenSeconds(t *testing.T) {
	cfg := sarama.NewConfig()
	shardRetries(cfg)
	r := cfg.Producer.Retry
	if r.BackoffFunc == nil {
		t.Fatal("no backoff function: every retry would wait Retry.Backoff")
	}
	var total time.Duration
	for n := 1; n <= r.Max; n++ {
		d := r.BackoffFunc(n, r.Max)
		if n <= kafkaconn.ProducerRetries && d != kafkaconn.ProducerRetryBackoff {
			t.Fatalf("retry %d waits %v: the first %d wait %v, as other producers", n, d, kafkaconn.ProducerRetries, kafkaconn.ProducerRetryBackoff)
		}
		if d > 250*time.Millisecond {
			t.Fatalf("retry %d waits %v: a partition that becomes writable waits for it", n, d)
		}
		total += d
	}
	if total < 9500*time.Millisecond || total > 10500*time.Millisecond {
		t.Fatalf("%d retries wait %v in all, want about 10 s", r.Max, total)
	}
	if r.Max > 50 {
		t.Fatalf("%d retry levels: each costs every target partition's producer a slot", r.Max)
	}
}
