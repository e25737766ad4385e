package mirror

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/mirror/groupsync"
	"github.com/drctl/drctl/topology"
)

// TestOldEpochOfSameDirectionIsRetired (#8 known race): after a failover
// and a failback the link east -> west runs again, under a higher epoch. A
// hung shard of the old epoch that wakes up must not pass the role check
// just because the direction matches: it stops, having copied nothing.
func TestOldEpochOfSameDirectionIsRetired(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"orders\"]}"})
	east, west := p.Topology.Clusters["east"], p.Topology.Clusters["west"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, west)
	kfaketest.CreateTopicOn(t, src, "orders", 1, nil)
	sendN(t, kfaketest.IdempotentProducer(t, east, ""), "orders", 10, "a")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg, err := west.SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	// Failover (epoch 2) and failback (epoch 3): east -> west again.
	next := rolestate.Initial(p.Topology)
	next.Epoch = 3
	if err := rolestate.CompareAndSet(ctx, dst, cfg, 0, next); err != nil {
		t.Fatal(err)
	}
	d := NewDaemon(p.Topology, DaemonOptions{Engine: Options{Shards: 1, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond}})
	old, err := d.start(linkKey{link: p.Topology.Link("east", "west"), epoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- old.Run(ctx) }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrLinkRetired) {
			t.Fatalf("the epoch-1 link stopped with %v, want ErrLinkRetired", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the epoch-1 link is still running under epoch 3")
	}
	if err := dst.RefreshMetadata("orders"); err == nil {
		if d, err := readAll(dst, "orders", 0); err == nil && len(d) > 0 {
			t.Errorf("the epoch-1 link copied %d records under epoch 3", len(d))
		}
	}
}

// TestRPOSecondsSurviveRestart (#8 known race): the source timestamp of
// the last record mirrored is kept with the progress, so the ends the
// mirror records after a restart still carry it (the RPO's seconds).
func TestRPOSecondsSurviveRestart(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"orders\"]}"})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, "orders", 1, nil)
	sendN(t, kfaketest.IdempotentProducer(t, east, ""), "orders", 10, "a")
	last := kfaketest.Records(t, src, "orders", 0, 0)[9].Timestamp.UnixMilli()
	link := p.Topology.Link("east", "west")
	for run := 1; run <= 2; run++ {
		ctx, cancel := context.WithCancel(context.Background())
		e, err := NewEngine(p.Topology, "east", "west", Options{Epoch: -1, Shards: 1, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		since := time.Now().UnixMilli()
		waitFor(t, 30*time.Second, "the ends recorded after this start", func() error {
			obs, err := linkstate.LastObserved(context.Background(), dst, link)
			if err != nil {
				return err
			}
			o := obs[topology.TopicPartition{Topic: "orders", Partition: 0}]
			if o.ObservedAtMs < since || o.Mirrored != 10 {
				return errors.New("not yet")
			}
			if o.LastMirroredMs != last {
				t.Fatalf("run %d: last mirrored timestamp %d, want %d (the last record's)", run, o.LastMirroredMs, last)
			}
			return nil
		})
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestHungGroupSyncCannotCommitAfterFence (#8 known race): a group sync
// that passed its role check, then hung while a failover fenced the link,
// must not commit an older translation when it wakes up.
func TestHungGroupSyncCannotCommitAfterFence(t *testing.T) {
	p := groupSyncPair(t, `"orders"`, time.Hour) // the engine's own loop stays idle
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, "orders", 1, nil)
	sendN(t, kfaketest.IdempotentProducer(t, east, ""), "orders", 50, "a")
	e, _ := startEngine(t, p.Topology, Options{Epoch: -1, Shards: 1, TopicSyncInterval: 200 * time.Millisecond, IdleCheck: 100 * time.Millisecond})
	waitCopied(t, src, dst, "orders", "kfake-east")
	const group = "g-hung"
	orders0 := topology.TopicPartition{Topic: "orders", Partition: 0}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	committedAt := func() int64 {
		t.Helper()
		now, err := groupsync.FetchCommitted(ctx, dst, group, false)
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := now[orders0]; ok {
			return o.Offset
		}
		return -1
	}

	commitSource(t, src, group, map[topology.TopicPartition]int64{orders0: 10})
	g := groupsync.NewSyncer(e.groupSyncConfig(src, dst))
	defer g.Close()
	waitFor(t, 20*time.Second, "the group synced", func() error {
		if _, err := g.Round(ctx); err != nil {
			return err
		}
		if at := committedAt(); at != 10 {
			return fmt.Errorf("standby at %d, want 10", at)
		}
		return nil
	})

	// The failover fences the link while this group sync is "hung" past
	// its role check; then the source group moves on and the sync wakes.
	if _, err := linkstate.Fence(ctx, kfaketest.Session(t, p.Topology), e.Link()); err != nil {
		t.Fatal(err)
	}
	commitSource(t, src, group, map[topology.TopicPartition]int64{orders0: 30})
	_, _ = g.Round(ctx)
	if at := committedAt(); at != 10 {
		t.Fatalf("the fenced group sync committed %d on the standby after the failover's fence", at)
	}
}
