package mirror

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
)

// TestFencedMirrorCannotWrite: once a failover has recorded a newer epoch on
// the target and fenced the link, the running mirror writes no further
// record and stops with ErrLinkRetired.
func TestFencedMirrorCannotWrite(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"orders\"]}"})
	east, west := p.Topology.Clusters["east"], p.Topology.Clusters["west"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, west)
	kfaketest.CreateTopicOn(t, src, "orders", 2, nil)
	prod := kfaketest.IdempotentProducer(t, east, "")
	send := func(n int) {
		for i := range n {
			if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "orders", Partition: int32(i % 2), Value: sarama.StringEncoder("x")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	count := func() int {
		n := 0
		for part := range int32(2) {
			d, err := readAll(dst, "orders", part)
			if err != nil {
				return -1 // not created yet
			}
			n += len(d)
		}
		return n
	}
	send(100)

	ctx := t.Context()
	e, err := NewEngine(p.Topology, "east", "west", Options{Epoch: 0, Shards: 2, IdleCheck: 100 * time.Millisecond,
		TopicSyncInterval: 200 * time.Millisecond,
		Allowed:           func(st rolestate.State) bool { return st.Active == "east" && st.Standby == "west" }})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	waitFor(t, 20*time.Second, "first records mirrored", func() error {
		if n := count(); n != 100 {
			return fmt.Errorf("%d of 100", n)
		}
		return nil
	})

	// The failover's order: the new epoch on the target first, then fence.
	cfg, err := west.SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	next := rolestate.Initial(p.Topology)
	next.Epoch, next.Active, next.Standby = 1, "west", "east"
	if err := rolestate.CompareAndSet(ctx, dst, cfg, 0, next); err != nil {
		t.Fatal(err)
	}
	n, err := linkstate.Fence(ctx, kfaketest.Session(t, p.Topology), e.Link())
	if err != nil || n != 2 {
		t.Fatalf("Fence = %d, %v; want 2 shards fenced", n, err)
	}
	before := count()
	send(100)

	select {
	case err := <-done:
		if !errors.Is(err, ErrLinkRetired) {
			t.Fatalf("engine stopped with %v, want ErrLinkRetired", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the fenced mirror did not stop")
	}
	if after := count(); after != before {
		t.Errorf("the fenced mirror wrote %d more records", after-before)
	}
}
