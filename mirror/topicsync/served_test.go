package topicsync

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/kfaketest"
)

// TestWaitsForTheLeaderToServeWhatItLists: a KRaft broker lists the
// partitions it leads before it has created their logs, and refuses writes
// to them with NOT_LEADER_OR_FOLLOWER until then, seconds while it creates
// thousands (on Kafka 4.1.1, 2,804 of a 10,000-partition launch's
// partitions cost the mirror's producers retries, and a shard's
// transaction waited up to 4.7 s on them; issue 14). A created topic is
// told ready only once its leaders serve all its partitions, in the same
// pass; a topic served at once is told without waiting for it.
func TestWaitsForTheLeaderToServeWhatItLists(t *testing.T) {
	const settle = 200 * time.Millisecond
	e := newEnv(t, kfaketest.Options{}, Options{SettleTimeout: settle})
	e.syncer.listWait = 10 * time.Second
	west := kfaketest.Dial(t, e.pair.Topology, "west")
	e.syncer.served = func(ctx context.Context, leaders map[string]map[int32]int32) (map[string]int, error) {
		return kafkaread.Unserved(ctx, west, leaders)
	}
	var mu sync.Mutex
	readyAt := map[string]time.Time{}
	e.syncer.ready = func(rs []TopicResult) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range rs {
			readyAt[r.Name] = time.Now()
		}
	}
	createTopic(t, e.src, "slow", 3, 1, nil)
	createTopic(t, e.src, "quick", 1, 1, nil)
	// west's leader does not serve slow's partition 1 until 4 settle
	// timeouts after the pass starts.
	unserved := e.pair.West.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Topic: "slow", Partitions: []int32{1},
		Err: kerr.NotLeaderForPartition, Count: -1})
	began := time.Now()
	time.AfterFunc(4*settle, unserved.Remove)

	rep, _ := sync1(t, e.syncer)
	for _, name := range []string{"slow", "quick"} {
		if r := result(t, rep, name); !r.Created || !r.Ready() {
			t.Fatalf("%s: %+v, want created and ready in the same pass", name, r)
		}
	}
	if unserved.Hits() == 0 {
		t.Error("the pass never asked west's leader about slow")
	}
	mu.Lock()
	slowAt, quickAt := readyAt["slow"], readyAt["quick"]
	mu.Unlock()
	if got := slowAt.Sub(began); got < 4*settle {
		t.Errorf("slow was told ready %v after the pass began, before its leader served every partition (%v)", got, 4*settle)
	}
	if got := quickAt.Sub(began); got >= 4*settle {
		t.Errorf("quick was told ready %v after the pass began: it waited for slow", got)
	}

	// A leader that never serves it: the pass gives up listWait after its
	// last progress, and says why.
	e.syncer.listWait = 4 * settle
	createTopic(t, e.src, "stuck", 1, 1, nil)
	e.pair.West.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Topic: "stuck", Err: kerr.NotLeaderForPartition, Count: -1})
	rep, _ = sync1(t, e.syncer)
	r := result(t, rep, "stuck")
	if !r.Created || !errors.Is(r.Err, ErrNotSettled) || !strings.Contains(r.Err.Error(), "1 partition(s) not served by their leader yet") {
		t.Errorf("stuck: %+v, want created and ErrNotSettled (not served by their leader yet)", r)
	}
}
