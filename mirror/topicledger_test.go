package mirror

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
)

// TestLedgerRecordsCreatedTopicsTogether: the topics a pass created are
// recorded in the link's topic ledger in a batch, not one produce round
// trip after another (a reseed creates every topic at once: 100 records
// took 100 round trips before the shards could start), and each is
// recorded with its source topic id.
func TestLedgerRecordsCreatedTopicsTogether(t *testing.T) {
	const n = 30
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: `  topics: {include: ["t.*"]}`})
	src := kfaketest.DialCluster(t, p.Topology.Clusters["east"])
	dst := kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	for i := range n {
		kfaketest.CreateTopicOn(t, src, fmt.Sprintf("t%02d", i), 1, nil)
	}
	link := p.Topology.Link("east", "west")
	var requests atomic.Int32
	p.West.ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		for _, tp := range r.(*kmsg.ProduceRequest).Topics {
			if tp.Topic == link.TopicsTopic() {
				requests.Add(1)
			}
		}
		return nil, nil, false
	})

	runEngine(t, p.Topology, Options{Shards: 2})
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("t%02d", i))
	}
	ids, err := kafkaread.TopicIDs(context.Background(), src, names)
	if err != nil || len(ids) != n {
		t.Fatalf("source topic ids: %v, %v", ids, err)
	}
	waitFor(t, 20*time.Second, "every topic in the ledger", func() error {
		ledger, err := linkstate.ReadTopicLedger(context.Background(), dst, link)
		if err != nil {
			return err
		}
		for name, id := range ids {
			rec, ok := ledger[name]
			if !ok {
				return fmt.Errorf("%s not recorded (%d of %d)", name, len(ledger), n)
			}
			if rec.SourceID != id || !rec.Created {
				return fmt.Errorf("%s recorded as %+v, want created from source id %s", name, rec, id)
			}
		}
		return nil
	})
	// One write of the pass's records: sarama sends the first record at
	// once and the others behind each request in flight, so how many
	// requests they make depends on how fast they are queued against the
	// broker's answers (2, and up to 4 on a loaded machine); a round trip
	// per topic, the fault this guards against, makes n.
	if got := requests.Load(); got > n/3 {
		t.Errorf("%d produce requests to %s for %d topics created in one pass, want a batch (at most %d)", got, link.TopicsTopic(), n, n/3)
	}
}
