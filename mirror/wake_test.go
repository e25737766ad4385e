package mirror

import (
	"fmt"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestShardStartsNewPartitionsAtOnce: a shard that found no partitions
// (its link started before the first topic sync, or the topic is new)
// starts them as soon as a topic sync publishes them, not at its next
// idle check: here 30 s, against a copy that must come within 10 s.
// Before, every link's start waited up to a second (the default idle
// check) for this.
func TestShardStartsNewPartitionsAtOnce(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: `  topics: {include: ["fresh"]}`})
	e := runEngine(t, p.Topology, Options{Shards: 1, IdleCheck: 30 * time.Second})
	waitFor(t, 30*time.Second, "the engine ready with no topic to copy", func() error {
		if !e.Ready() {
			return fmt.Errorf("not ready")
		}
		return nil
	})
	// Two more topic syncs (200 ms apart): the shard has long been waiting.
	gen := e.partsGen.Load()
	waitFor(t, 30*time.Second, "two more topic syncs", func() error {
		if now := e.partsGen.Load(); now < gen+2 {
			return fmt.Errorf("partition generation %d, want %d", now, gen+2)
		}
		return nil
	})
	src := kfaketest.DialCluster(t, p.Topology.Clusters["east"])
	dst := kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, "fresh", 1, nil)
	kfaketest.ProduceEach(t, p.Topology, "east", "fresh", 1, 5)
	began := time.Now()
	waitFor(t, 10*time.Second, "fresh copied before the shard's idle check", func() error {
		d, err := readAll(dst, "fresh", 0)
		if err != nil {
			return err
		}
		if len(d) != 5 {
			return fmt.Errorf("%d of 5 records on west", len(d))
		}
		return nil
	})
	waitCopied(t, src, dst, "fresh", "kfake-east")
	t.Logf("copied %v after the records were written", time.Since(began).Round(time.Millisecond))
}
