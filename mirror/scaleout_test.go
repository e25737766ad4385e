package mirror

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// lastOwned drains the child's reports and returns the latest.
func (c *child) lastOwned(prev string) string {
	for {
		select {
		case s := <-c.owned:
			prev = s
		default:
			return prev
		}
	}
}

// TestTwoProcessesSplitAndTakeOver runs two mirror processes for one link:
// they split the shards; when one is killed the other takes all of them
// over, and the target still ends with every record exactly once.
func TestTwoProcessesSplitAndTakeOver(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	const partitions, shards, records = 8, 4, 20_000
	p := kfaketest.NewPair(t, kfaketest.Options{
		Mirror:      "  topics: {include: [\"stream\"]}",
		ClusterOpts: []kfake.Opt{kfake.GroupMinSessionTimeout(500 * time.Millisecond)},
	})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, "stream", partitions, nil)

	a, b := startChild(t, p.Path, shards), startChild(t, p.Path, shards)
	var ownA, ownB string
	waitFor(t, 30*time.Second, "both processes own shards", func() error {
		ownA, ownB = a.lastOwned(ownA), b.lastOwned(ownB)
		if ownA == "" || ownA == "[]" || ownB == "" || ownB == "[]" {
			return fmt.Errorf("a owns %s, b owns %s", ownA, ownB)
		}
		if n := len(strings.Fields(strings.Trim(ownA, "[]"))) + len(strings.Fields(strings.Trim(ownB, "[]"))); n != shards {
			return fmt.Errorf("a owns %s, b owns %s: %d of %d shards", ownA, ownB, n, shards)
		}
		return nil
	})
	t.Logf("split: a owns %s, b owns %s", ownA, ownB)

	produced := make(chan error, 1)
	go func() { produced <- produceStream(east, "stream", partitions, records, 5*time.Millisecond) }()
	// Let both copy for a while, then kill a mid-stream.
	waitFor(t, 30*time.Second, "some records mirrored", func() error {
		d, err := readAll(dst, "stream", 0)
		if err != nil {
			return err
		}
		if len(d) < 100 {
			return fmt.Errorf("%d records on the target", len(d))
		}
		return nil
	})
	killed := time.Now()
	a.kill()
	waitFor(t, 20*time.Second, "b owns every shard", func() error {
		ownB = b.lastOwned(ownB)
		if n := len(strings.Fields(strings.Trim(ownB, "[]"))); n != shards {
			return fmt.Errorf("b owns %s", ownB)
		}
		return nil
	})
	t.Logf("takeover: b owns %s, %v after the kill", ownB, time.Since(killed).Round(time.Millisecond))
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "every record mirrored exactly once", func() error {
		for part := range int32(partitions) {
			s, err := readAll(src, "stream", part)
			if err != nil {
				return err
			}
			d, err := readAll(dst, "stream", part)
			if err != nil {
				return err
			}
			if err := sameRecords(s, d, "kfake-east"); err != nil {
				return fmt.Errorf("partition %d: %w", part, err)
			}
		}
		return nil
	})
}
