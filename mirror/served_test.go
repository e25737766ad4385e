package mirror

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/kfaketest"
)

// TestANewPartitionIsCopiedOnceTheTargetServesIt: a KRaft broker lists
// the partitions it leads before it has created their logs and refuses
// writes to them until then; in a 10,000-partition launch on Kafka 4.1.1,
// 2,804 partitions were produced to that early, with thousands of retries,
// and a shard's transaction waited seconds on them (issue 14). A partition
// the mirror has no progress for is fetched, but its records go into a
// transaction only once the target's leader serves it (answers ListOffsets
// for it); the shard copies its other partitions meanwhile, and the held
// one is copied whole, exactly once, once served.
func TestANewPartitionIsCopiedOnceTheTargetServesIt(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: `  topics: {include: ["slow", "quick"]}`})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	prod := kfaketest.IdempotentProducer(t, east, "")
	for _, topic := range []string{"slow", "quick"} {
		kfaketest.CreateTopicOn(t, src, topic, 1, nil)
		sendN(t, prod, topic, 20, "before")
	}
	unserved := p.West.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Topic: "slow",
		Err: kerr.NotLeaderForPartition, Count: -1})
	var holding atomic.Bool
	holding.Store(true)
	var early atomic.Int32 // produce requests for slow while west did not serve it
	p.West.ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		for _, rt := range r.(*kmsg.ProduceRequest).Topics {
			if rt.Topic == "slow" && holding.Load() {
				early.Add(1)
			}
		}
		return nil, nil, false
	})

	runEngine(t, p.Topology, Options{Shards: 1})
	waitCopied(t, src, dst, "quick", "kfake-east")
	sendN(t, prod, "slow", 10, "held")
	waitFor(t, 10*time.Second, "the shard asking west about slow again, or writing to it", func() error {
		if n := unserved.Hits(); n < 5 && early.Load() == 0 {
			return fmt.Errorf("asked %d time(s)", n)
		}
		return nil
	})
	if n := early.Load(); n > 0 {
		t.Fatalf("%d produce request(s) for slow before west served it", n)
	}
	if recs, err := readAll(dst, "slow", 0); err != nil || len(recs) != 0 {
		t.Fatalf("slow on west before it was served: %d record(s), %v", len(recs), err)
	}

	holding.Store(false)
	unserved.Remove()
	waitCopied(t, src, dst, "slow", "kfake-east")
}
