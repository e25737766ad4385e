package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kfaketest"
	"github.com/drctl/drctl/topology"
)

// TestTrailingMarkersSkippedWithoutProbes: every partition of a shard ends
// in a transaction marker (its producer writes in transactions). The copy
// is drained (zero lag) once the progress of every partition has moved past
// its marker. The fetcher already passed those markers, so an idle pass
// moves all partitions at once; probing the source instead makes at most
// maxProbes reads a pass (one pass per IdleCheck), which for 400 partitions
// takes 25 passes.
func TestTrailingMarkersSkippedWithoutProbes(t *testing.T) {
	const parts = 400
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"tx\"]}"})
	src, dst := kfaketest.Dial(t, p.Topology, "east"), kfaketest.Dial(t, p.Topology, "west")
	kfaketest.CreateTopicOn(t, src, "tx", parts, nil)
	txn := kfaketest.IdempotentProducer(t, p.Topology.Clusters["east"], "trailing")
	if err := txn.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	for part := range int32(parts) {
		if _, _, err := txn.SendMessage(&sarama.ProducerMessage{Topic: "tx", Partition: part, Value: sarama.StringEncoder("v")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.CommitTxn(); err != nil {
		t.Fatal(err)
	}

	idle := time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := NewEngine(p.Topology, "east", "west", Options{Epoch: -1, Shards: 1, TopicSyncInterval: 300 * time.Millisecond, IdleCheck: idle})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("engine: %v", err)
		}
	}()
	link := topology.Link{Topology: p.Topology.Name, Source: "east", Target: "west"}
	var copied time.Time
	waitFor(t, 2*time.Minute, "every record copied", func() error {
		for part := range int32(parts) {
			if d, err := readAll(dst, "tx", part); err != nil || len(d) != 1 {
				return fmt.Errorf("tx/%d: %d records (%v)", part, len(d), err)
			}
		}
		copied = time.Now()
		return nil
	})
	waitFor(t, 2*time.Minute, "zero lag", func() error {
		rep, err := MeasureLag(context.Background(), p.Topology, link)
		if err != nil {
			return err
		}
		if rep.TotalRecords != 0 {
			return fmt.Errorf("%d behind", rep.TotalRecords)
		}
		return nil
	})
	// Without the fetcher's positions: at least parts/maxProbes passes.
	if took := time.Since(copied); took > 10*idle {
		t.Fatalf("zero lag %v after the copy: the trailing markers were probed a few at a time (%d a pass), not skipped", took, maxProbes)
	}
}
