package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

// everyRecordOnce checks that every committed source record of topic is on
// the target exactly once, in order, and nothing else.
func everyRecordOnce(t *testing.T, p *kfaketest.Pair, topic string, partitions int32) func() error {
	src, dst := kfaketest.DialCluster(t, p.Topology.Clusters["east"]), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	return func() error {
		for part := range partitions {
			s, err := readAll(src, topic, part)
			if err != nil {
				return err
			}
			d, err := readAll(dst, topic, part)
			if err != nil {
				return err
			}
			if err := sameRecords(s, d, "kfake-east"); err != nil {
				return fmt.Errorf("partition %d: %w", part, err)
			}
		}
		return nil
	}
}

// shardsOf returns the partition count of the link's shards topic.
func shardsOf(t *testing.T, p *kfaketest.Pair, link topology.Link) int {
	t.Helper()
	info, err := kafkaread.Topic(context.Background(), kfaketest.DialCluster(t, p.Topology.Clusters["west"]), link.ShardsTopic())
	if err != nil || !info.Exists {
		t.Fatalf("%s on west: exists %v, %v", link.ShardsTopic(), info.Exists, err)
	}
	return info.Partitions
}

// reshardOnceStopped reshards link to n as soon as the worker group of a
// killed process is empty.
func reshardOnceStopped(t *testing.T, p *kfaketest.Pair, link topology.Link, n int32) linkstate.ReshardResult {
	t.Helper()
	var res linkstate.ReshardResult
	waitFor(t, 30*time.Second, "the killed process's session to end", func() error {
		var err error
		res, err = linkstate.Reshard(t.Context(), kfaketest.Session(t, p.Topology), link, n)
		if errors.Is(err, linkstate.ErrLinkRunning) {
			return err
		}
		if err != nil {
			t.Fatalf("reshard to %d: %v", n, err)
		}
		return nil
	})
	return res
}

// TestReshardAcrossAKill: a 4-shard mirror process is killed with SIGKILL
// while a stream of plain and transactional records flows, its shards'
// transactions left open. Reshard refuses while the process is alive and
// changes nothing; once its session ended it takes the link to 2 shards, a
// process started without a count copies on with 2, then the link grows to
// 6; a process still asked for the old count stops without writing. Every
// committed source record is on the target exactly once, in order.
func TestReshardAcrossAKill(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	const partitions, records = 12, 24_000
	p := kfaketest.NewPair(t, kfaketest.Options{
		Mirror:      "  topics: {include: [\"stream\"]}",
		ClusterOpts: []kfake.Opt{kfake.GroupMinSessionTimeout(500 * time.Millisecond)},
	})
	east := p.Topology.Clusters["east"]
	link := p.Topology.Link("east", "west")
	kfaketest.CreateTopicOn(t, kfaketest.DialCluster(t, east), "stream", partitions, nil)
	dst := kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	ctx := t.Context()

	a := startChild(t, p.Path, 4)
	a.waitOwning(t, 30*time.Second)
	produced := make(chan error, 1)
	go func() { produced <- produceStream(east, "stream", partitions, records, 10*time.Millisecond) }()
	waitFor(t, 30*time.Second, "some records mirrored", func() error {
		d, err := readAll(dst, "stream", 0)
		if err != nil {
			return err
		}
		if len(d) < 50 {
			return fmt.Errorf("%d records on the target", len(d))
		}
		return nil
	})
	if _, err := linkstate.Reshard(ctx, kfaketest.Session(t, p.Topology), link, 2); !errors.Is(err, linkstate.ErrLinkRunning) || !strings.Contains(err.Error(), "stop every drctl mirror run") {
		t.Fatalf("reshard with a mirror process running: got %v, want linkstate.ErrLinkRunning naming the fix", err)
	}
	if n := shardsOf(t, p, link); n != 4 {
		t.Fatalf("a refused reshard left %d shards, want 4", n)
	}
	a.kill()
	select {
	case err := <-produced:
		t.Logf("the stream ended before the kill (%v): the kill left no stream to resume", err)
		produced <- err
	default:
	}
	res := reshardOnceStopped(t, p, link, 2)
	if res.From != 4 || res.To != 2 || res.Fenced != 4 {
		t.Fatalf("reshard to 2: %+v, want from 4 to 2 with 4 ids fenced", res)
	}
	if n := shardsOf(t, p, link); n != 2 {
		t.Fatalf("after the reshard the link has %d shards, want 2", n)
	}

	b := startChild(t, p.Path, 0)
	if owned := b.waitOwning(t, 30*time.Second); owned != "[0 1]" {
		t.Fatalf("the process started without a count owns %s, want [0 1]", owned)
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "every record mirrored exactly once with 2 shards", everyRecordOnce(t, p, "stream", partitions))

	b.kill()
	res = reshardOnceStopped(t, p, link, 6)
	// The offset map still has the first count's 4 partitions; growing the
	// link grows it, and every id any count used is fenced.
	if res.From != 2 || res.To != 6 || res.Fenced != 6 {
		t.Fatalf("reshard to 6: %+v, want from 2 to 6 with 6 ids fenced", res)
	}
	old := startChild(t, p.Path, 4)
	select {
	case <-old.done:
		if code := old.cmd.ProcessState.ExitCode(); code != 1 {
			t.Fatalf("a process asked for the old count exited %d, want 1 (the shard count error)", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a process asked for 4 shards still runs on a link of 6")
	}
	c := startChild(t, p.Path, 6)
	c.waitOwning(t, 30*time.Second)
	go func() { produced <- produceStream(east, "stream", partitions, records/2, time.Millisecond) }()
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "every record mirrored exactly once with 6 shards", everyRecordOnce(t, p, "stream", partitions))
	rep, err := linkstate.MeasureLag(ctx, kfaketest.Session(t, p.Topology), link)
	if err != nil {
		t.Fatal(err)
	}
	if rep.TotalRecords != 0 || len(rep.Partitions) != partitions {
		t.Fatalf("lag after the reshards: %d records over %d partitions, want 0 over %d", rep.TotalRecords, len(rep.Partitions), partitions)
	}
}

// TestShardChecksTheCountAfterItsFence: an engine that settled on the
// count of a new link (2 shards for 4 partitions) is not asked again by
// the group before its shards open; a reshard to 3 meanwhile makes each of
// its shards stop right after initialising its transactional id, before
// it reads or writes anything, and the engine itself stops with the shard
// count error naming the restart.
func TestShardChecksTheCountAfterItsFence(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: `  topics: {include: ["orders"]}`})
	kfaketest.CreateTopic(t, p.Topology, "east", "orders", 4, nil)
	kfaketest.Produce(t, p.Topology, "east", "orders", 40)
	e, err := NewEngine(p.Topology, "east", "west", Options{Epoch: -1, TopicSyncInterval: 200 * time.Millisecond, IdleCheck: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	waitFor(t, 30*time.Second, "the copy", everyRecordOnce(t, p, "orders", 4))
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("a new link's engine: %v", err)
	}
	if e.opts.Shards != MinShards || !e.adopted {
		t.Fatalf("an engine asked for no count of a new link of 4 partitions runs %d shards (adopted %v), want %d", e.opts.Shards, e.adopted, MinShards)
	}
	link := e.Link()
	if _, err := linkstate.Reshard(t.Context(), kfaketest.Session(t, p.Topology), link, 3); err != nil {
		t.Fatal(err)
	}
	kfaketest.Produce(t, p.Topology, "east", "orders", 40)
	for _, id := range []int32{0, 1} {
		s := &shard{id: id, e: e, log: e.log}
		sctx, scancel := context.WithTimeout(t.Context(), 20*time.Second)
		err := s.run(sctx)
		scancel()
		var sc *ShardCountError
		if !errors.As(err, &sc) || sc.Ran != 3 || sc.Asked != MinShards || !strings.Contains(err.Error(), "start drctl mirror run again") {
			t.Fatalf("shard %d of an engine of %d shards after a reshard to 3: got %v, want the shard count error", id, MinShards, err)
		}
	}
	dst := kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	n := 0
	for part := range int32(4) {
		recs, err := readAll(dst, "orders", part)
		if err != nil {
			t.Fatal(err)
		}
		n += len(recs)
	}
	if n != 40 {
		t.Fatalf("the target has %d records of orders after the refused shards, want the first 40 only", n)
	}
	err = e.Run(t.Context())
	var sc *ShardCountError
	if !errors.As(err, &sc) || !sc.Adopted || !strings.Contains(err.Error(), "now has 3 shards, this process started with 2") {
		t.Fatalf("the engine run again: got %v, want the shard count error of a changed link", err)
	}
	// A new engine without a count takes the 3 and copies the rest.
	e2, err := NewEngine(p.Topology, "east", "west", Options{Epoch: -1, TopicSyncInterval: 200 * time.Millisecond, IdleCheck: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(t.Context())
	go func() { done <- e2.Run(ctx) }()
	waitFor(t, 30*time.Second, "the copy with 3 shards", everyRecordOnce(t, p, "orders", 4))
	waitFor(t, 10*time.Second, "the shards owned", func() error {
		if got := e2.OwnedShards(); !slices.Equal(got, []int32{0, 1, 2}) {
			return fmt.Errorf("owns %v", got)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestNewLinkShards: a new link not given a count gets one shard per 100
// selected source partitions, 2 to 8, counting only the topics the
// topology mirrors; each shard's fetch response and copies in flight are
// its part of the link's 16 MiB, never under 2 MiB.
func TestNewLinkShards(t *testing.T) {
	for _, c := range []struct {
		partitions int
		want       int32
	}{{0, 2}, {12, 2}, {200, 2}, {201, 3}, {450, 5}, {800, 8}, {10_000, 8}} {
		if got := NewLinkShards(c.partitions); got != c.want {
			t.Errorf("NewLinkShards(%d) = %d, want %d", c.partitions, got, c.want)
		}
	}
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: `  topics: {include: ["orders.*"]}`})
	kfaketest.CreateTopic(t, p.Topology, "east", "orders.a", 150, nil)
	kfaketest.CreateTopic(t, p.Topology, "east", "orders.b", 100, nil)
	kfaketest.CreateTopic(t, p.Topology, "east", "payments", 900, nil)
	e, err := NewEngine(p.Topology, "east", "west", Options{Epoch: -1, TopicSyncInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	waitFor(t, 30*time.Second, "the link's shards claimed", ownsShards(e, 3))
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if e.opts.Shards != 3 || e.opts.FetchResponseBytes != 16<<20/3 || e.opts.MaxInflightBytes != 16<<20/3 {
		t.Fatalf("250 selected partitions (900 not selected): %d shards, responses %d, in flight %d; want 3 and 16 MiB / 3",
			e.opts.Shards, e.opts.FetchResponseBytes, e.opts.MaxInflightBytes)
	}
	o := Options{Shards: 16}
	o.defaults()
	if o.FetchResponseBytes != 2<<20 || o.MaxInflightBytes != 2<<20 {
		t.Fatalf("16 shards: responses %d, in flight %d; want the floor of 2 MiB", o.FetchResponseBytes, o.MaxInflightBytes)
	}
}

// TestReshardRefusals: a link that never ran changes nothing; the count
// it has fences its ids again when no process runs (the rerun an
// interrupted reshard asks for) and does nothing while one does.
func TestReshardRefusals(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: `  topics: {include: ["orders"]}`})
	link := p.Topology.Link("east", "west")
	if _, err := linkstate.Reshard(t.Context(), kfaketest.Session(t, p.Topology), link, 2); !errors.Is(err, linkstate.ErrNeverRan) || !strings.Contains(err.Error(), "--shards 2") {
		t.Fatalf("reshard of a link that never ran: got %v, want linkstate.ErrNeverRan naming its first run", err)
	}
	kfaketest.CreateTopic(t, p.Topology, "east", "orders", 2, nil)
	e, err := NewEngine(p.Topology, "east", "west", Options{Epoch: -1, Shards: 3, TopicSyncInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	waitFor(t, 30*time.Second, "the link's shards claimed", ownsShards(e, 3))
	cancel()
	<-done
	res, err := linkstate.Reshard(t.Context(), kfaketest.Session(t, p.Topology), link, 3)
	if err != nil || res.From != 3 || res.To != 3 || res.Fenced != 3 {
		t.Fatalf("reshard to the count the link has, no process running: %+v, %v; want its 3 ids fenced again (completing an interrupted reshard)", res, err)
	}
	// With a process running at that count there is nothing to do, and
	// nothing is fenced under it.
	ctx, cancel = context.WithCancel(t.Context())
	go func() { done <- e.Run(ctx) }()
	waitFor(t, 30*time.Second, "the link's shards claimed again", ownsShards(e, 3))
	res, err = linkstate.Reshard(t.Context(), kfaketest.Session(t, p.Topology), link, 3)
	if err != nil || res.Fenced != 0 {
		t.Fatalf("reshard to the running count: %+v, %v; want nothing done", res, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestReshardFencesAZombie: a process of the old count that left the
// worker group (hung, its session over) but still holds a shard's
// transactional id with a transaction open must never commit it: a
// shrink to 2 shards fences the ids above the new count too, and the
// record the zombie sent is never read.
func TestReshardFencesAZombie(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: `  topics: {include: ["orders"]}`})
	kfaketest.CreateTopic(t, p.Topology, "east", "orders", 4, nil)
	kfaketest.Produce(t, p.Topology, "east", "orders", 20)
	e, err := NewEngine(p.Topology, "east", "west", Options{Epoch: -1, Shards: 4, TopicSyncInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	waitFor(t, 30*time.Second, "the copy", everyRecordOnce(t, p, "orders", 4))
	cancel()
	<-done
	link := e.Link()
	west := p.Topology.Clusters["west"]
	zombie := func(id int32) sarama.SyncProducer {
		cfg, err := west.SaramaConfig()
		if err != nil {
			t.Fatal(err)
		}
		kafkaconn.CopyProducer(cfg)
		cfg.Producer.Return.Successes = true
		cfg.Producer.Transaction.ID = link.TransactionalID(id)
		prod, err := sarama.NewSyncProducer(west.Bootstrap, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = prod.Close() })
		if err := prod.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "orders", Partition: 1, Value: sarama.StringEncoder("zombie")}); err != nil {
			t.Fatal(err)
		}
		return prod
	}
	below, above := zombie(1), zombie(3)
	if _, err := linkstate.Reshard(t.Context(), kfaketest.Session(t, p.Topology), link, 2); err != nil {
		t.Fatal(err)
	}
	for id, prod := range map[int32]sarama.SyncProducer{1: below, 3: above} {
		if err := prod.CommitTxn(); err == nil {
			t.Fatalf("the zombie holding shard %d's id committed after the reshard", id)
		}
	}
	recs, err := readAll(kfaketest.DialCluster(t, west), "orders", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if string(r.Value) == "zombie" {
			t.Fatalf("a zombie's record is on the target after the reshard")
		}
	}
}

// ownsShards is a waitFor condition: e owns n shards.
func ownsShards(e *Engine, n int) func() error {
	return func() error {
		if got := e.OwnedShards(); len(got) != n {
			return fmt.Errorf("owns %v, want %d shards", got, n)
		}
		return nil
	}
}
