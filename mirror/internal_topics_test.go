package mirror

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestLinkCreatesItsInternalTopicsTogether: a new link's four internal
// topics on the target (shards, offset map, ends, topic ledger) are created
// in one CreateTopics request, with the shard count and compaction each
// needs: a reseed starts its link on a wiped cluster, and the failover
// waits for it.
func TestLinkCreatesItsInternalTopicsTogether(t *testing.T) {
	p, src, dst, prod := mirroredTopic(t, "fresh", 4)
	link := p.Topology.Link("east", "west")
	internal := []string{link.ShardsTopic(), link.OffsetsTopic(), link.EndsTopic(), link.TopicsTopic()}
	var (
		mu       sync.Mutex
		requests [][]string // the internal topics named by each CreateTopics
	)
	p.West.ControlKey(int16(kmsg.CreateTopics), func(r kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		var named []string
		for _, rt := range r.(*kmsg.CreateTopicsRequest).Topics {
			if slices.Contains(internal, rt.Topic) {
				named = append(named, rt.Topic)
			}
		}
		if len(named) > 0 {
			mu.Lock()
			requests = append(requests, named)
			mu.Unlock()
		}
		return nil, nil, false
	})
	burst(t, prod, "fresh", 4, 3)
	runEngine(t, p.Topology, Options{Shards: 3})
	waitAllCopied(t, src, dst, "fresh", 4)
	mu.Lock()
	got := slices.Clone(requests)
	mu.Unlock()
	if len(got) != 1 || len(got[0]) != len(internal) {
		t.Errorf("CreateTopics requests naming the link's internal topics: %v, want one naming all four", got)
	}
	ctx := kfaketest.Ctx(t, 10*time.Second)
	for name, want := range map[string]int{link.ShardsTopic(): 3, link.OffsetsTopic(): 3, link.EndsTopic(): 1, link.TopicsTopic(): 1} {
		info, err := kafkaread.Topic(ctx, dst, name)
		if err != nil || info.Partitions != want {
			t.Errorf("%s: %d partitions (err %v), want %d", name, info.Partitions, err, want)
		}
	}
}
