package mirror

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestShardClientsAskOnlyForTheirTopics: a shard's clients on the target
// (the one it reads progress and role state with, and its producer's) ask
// for the metadata of the topics they use, never for every topic of the
// cluster. With sarama's default each shard's clients held, and refreshed,
// the metadata of every topic of the target, so that a mirror's memory
// grew with the size of the cluster, not with what it mirrors. Measured as
// the Metadata requests for every topic that reach the target until every
// shard's producer is open: they must not grow with the shard count.
func TestShardClientsAskOnlyForTheirTopics(t *testing.T) {
	full := map[int]int64{}
	for _, shards := range []int{1, 8} {
		p := kfaketest.NewPair(t, kfaketest.Options{Mirror: `  topics: {include: ["meta"]}`})
		src := kfaketest.DialCluster(t, p.Topology.Clusters["east"])
		kfaketest.CreateTopicOn(t, src, "meta", 8, nil)
		var all, inits atomic.Int64
		p.West.ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
			p.West.KeepControl()
			if req.(*kmsg.MetadataRequest).Topics == nil {
				all.Add(1)
			}
			return nil, nil, false
		})
		p.West.ControlKey(int16(kmsg.InitProducerID), func(req kmsg.Request) (kmsg.Response, error, bool) {
			p.West.KeepControl()
			if id := req.(*kmsg.InitProducerIDRequest).TransactionalID; id != nil && len(*id) > 0 {
				inits.Add(1)
			}
			return nil, nil, false
		})
		runEngine(t, p.Topology, Options{Shards: int32(shards), TopicSyncInterval: time.Hour})
		waitFor(t, 30*time.Second, "every shard's producer open", func() error {
			if n := inits.Load(); n < int64(shards) {
				return fmt.Errorf("%d of %d shards' producers open", n, shards)
			}
			return nil
		})
		full[shards] = all.Load()
	}
	t.Logf("Metadata requests for every topic: %d with 1 shard, %d with 8", full[1], full[8])
	if full[8]-full[1] >= 7 {
		t.Fatalf("Metadata requests for every topic grew with the shard count: %d with 1 shard, %d with 8", full[1], full[8])
	}
}
