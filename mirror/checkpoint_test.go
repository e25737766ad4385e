package mirror

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/offsetcommit"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

// startStoppable runs an engine until the returned stop is called (stop
// waits for it to end and fails the test on its error).
func startStoppable(t *testing.T, topo *topology.Topology, opts Options) (stop func()) {
	t.Helper()
	opts.Epoch = -1
	opts.TopicSyncInterval = 200 * time.Millisecond
	opts.IdleCheck = 100 * time.Millisecond
	e, err := NewEngine(topo, "east", "west", opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("engine: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestProgressBetweenCheckpointsComesFromTheOffsetMap: a shard checkpoints
// its progress in the progress group only now and then; the transactions
// in between carry it in the offset map alone. A shard that stops and
// starts again must resume from the last transaction, not from the last
// checkpoint: resuming from the checkpoint would copy the records after it
// a second time. And a checkpoint deleted (a topic reseeded) must not come
// back from the offset map.
func TestProgressBetweenCheckpointsComesFromTheOffsetMap(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: `  topics: {include: ["ckpt"]}`})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, "ckpt", 1, nil)
	prod := kfaketest.IdempotentProducer(t, east, "")
	link := p.Topology.Link("east", "west")
	tp := topology.TopicPartition{Topic: "ckpt", Partition: 0}

	var addOffsets, commits atomic.Int64
	txnID := link.TransactionalID(0)
	p.West.ControlKey(int16(kmsg.AddOffsetsToTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		if req.(*kmsg.AddOffsetsToTxnRequest).TransactionalID == txnID {
			addOffsets.Add(1)
		}
		return nil, nil, false
	})
	p.West.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		if r := req.(*kmsg.EndTxnRequest); r.TransactionalID == txnID && r.Commit {
			commits.Add(1)
		}
		return nil, nil, false
	})

	// A checkpoint interval longer than the test: only the partition's
	// first transaction checkpoints.
	stop := startStoppable(t, p.Topology, Options{Shards: 1, ProgressEvery: time.Hour})
	for _, tag := range []string{"a", "b", "c", "d"} {
		sendN(t, prod, "ckpt", 5, tag)
		waitCopied(t, src, dst, "ckpt", "kfake-east")
	}
	stop()
	ctx := kfaketest.Ctx(t, 10*time.Second)
	raw, err := linkstate.ReadCheckpoints(ctx, dst, link.ProgressGroup(), []topology.TopicPartition{tp}, linkstate.Settled)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d transactions committed, %d with the progress; checkpoint %+v", commits.Load(), addOffsets.Load(), raw[tp])
	if c := raw[tp]; c.Next <= 0 || c.Next >= 20 || c.MapPos < 0 {
		t.Fatalf("checkpoint %+v: want one from the first transaction (0 < next < 20, with its place in the offset map)", c)
	}
	if commits.Load() < 4 || addOffsets.Load() >= commits.Load() {
		t.Fatalf("%d of %d transactions added the progress: want fewer than all", addOffsets.Load(), commits.Load())
	}
	got, err := linkstate.ReadProgress(ctx, src, dst, link, []topology.TopicPartition{tp})
	if err != nil {
		t.Fatal(err)
	}
	if got[tp] != 20 {
		t.Fatalf("progress %d, want 20 (the checkpoint's %d and the offset map's batches after it)", got[tp], raw[tp].Next)
	}

	// Resumed, the mirror copies the new records once: no record after
	// the checkpoint is copied again (waitCopied compares record by record).
	stop = startStoppable(t, p.Topology, Options{Shards: 1, ProgressEvery: time.Hour})
	sendN(t, prod, "ckpt", 5, "e")
	waitCopied(t, src, dst, "ckpt", "kfake-east")
	stop()

	// A deleted checkpoint stays deleted: the batches after it in the
	// offset map name the partition, but a partition without a checkpoint
	// has no progress.
	admin, err := sarama.NewClusterAdminFromClient(dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.DeleteConsumerGroupOffset(link.ProgressGroup(), "ckpt", 0); err != nil {
		t.Fatal(err)
	}
	got, err = linkstate.ReadProgress(ctx, src, dst, link, []topology.TopicPartition{tp})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := got[tp]; ok {
		t.Fatalf("progress %d after its checkpoint was deleted: want none", n)
	}
}

// TestIdleShardCheckpointsWhatItOwes: once the copy goes quiet, the shard
// writes the checkpoint it owes within about ProgressEvery, so that the
// progress group alone is exact at rest (and a reader replays nothing).
func TestIdleShardCheckpointsWhatItOwes(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: `  topics: {include: ["owed"]}`})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, "owed", 1, nil)
	prod := kfaketest.IdempotentProducer(t, east, "")
	link := p.Topology.Link("east", "west")
	tp := topology.TopicPartition{Topic: "owed", Partition: 0}

	startStoppable(t, p.Topology, Options{Shards: 1, ProgressEvery: 300 * time.Millisecond})
	for _, tag := range []string{"a", "b", "c"} {
		sendN(t, prod, "owed", 5, tag)
		waitCopied(t, src, dst, "owed", "kfake-east")
	}
	waitFor(t, 10*time.Second, "the checkpoint at the end of the copy", func() error {
		raw, err := linkstate.ReadCheckpoints(kfaketest.Ctx(t, 5*time.Second), dst, link.ProgressGroup(), []topology.TopicPartition{tp}, linkstate.Settled)
		if err != nil {
			return err
		}
		if raw[tp].Next != 15 {
			return fmt.Errorf("checkpoint %+v, want next 15", raw[tp])
		}
		return nil
	})
}

// TestCheckpointsFitOneCommitRequest: a shard whose partitions' progress
// is more than a group coordinator writes at once still commits, and
// exactly once. The west cluster here refuses a progress commit above a
// bound (Options.MaxCheckpointBytes, lowered to about six partitions'
// entries) as Kafka refuses one above __consumer_offsets'
// max.message.bytes: UNKNOWN_SERVER_ERROR for every partition. A shard of
// 40 partitions, all copying at once, then resumed after a stop with more
// records, copies each partition record by record, and no progress commit
// it sends is over the bound. Before checkpoints were bounded, the shard's
// first transaction, touching all 40 partitions, could never commit.
func TestCheckpointsFitOneCommitRequest(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: `  topics: {include: ["wide"]}`})
	const parts = 40
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, "wide", parts, nil)
	group := p.Topology.Link("east", "west").ProgressGroup()
	limit := 6 * offsetcommit.RecordBytes(group, "wide", linkstate.MaxProgressMetadata)

	var commits, refused, largest atomic.Int64
	p.West.ControlKey(int16(kmsg.TxnOffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		r := req.(*kmsg.TxnOffsetCommitRequest)
		if r.Group != group {
			return nil, nil, false
		}
		size, n := 0, 0
		for _, tp := range r.Topics {
			for _, pp := range tp.Partitions {
				md := 0
				if pp.Metadata != nil {
					md = len(*pp.Metadata)
				}
				size += offsetcommit.RecordBytes(r.Group, tp.Topic, md)
				n++
			}
		}
		commits.Add(1)
		if int64(n) > largest.Load() {
			largest.Store(int64(n))
		}
		if size <= limit {
			return nil, nil, false
		}
		refused.Add(1)
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, tp := range r.Topics {
			rt := kmsg.TxnOffsetCommitResponseTopic{Topic: tp.Topic}
			for _, pp := range tp.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: pp.Partition, ErrorCode: -1})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})

	opts := Options{Shards: 1, MaxCheckpointBytes: limit}
	copied := func(per int) {
		t.Helper()
		waitFor(t, 60*time.Second, "every partition copied record by record", func() error {
			for part := range int32(parts) {
				s, err := readAll(src, "wide", part)
				if err != nil {
					return err
				}
				d, err := readAll(dst, "wide", part)
				if err != nil {
					return err
				}
				if len(s) != per {
					return fmt.Errorf("partition %d: %d source records, want %d", part, len(s), per)
				}
				if err := sameRecords(s, d, "kfake-east"); err != nil {
					return fmt.Errorf("partition %d: %w", part, err)
				}
			}
			return nil
		})
	}
	kfaketest.ProduceEach(t, p.Topology, "east", "wide", parts, 3)
	stop := startStoppable(t, p.Topology, opts)
	copied(3)
	stop()
	kfaketest.ProduceEach(t, p.Topology, "east", "wide", parts, 2)
	stop = startStoppable(t, p.Topology, opts)
	copied(5)
	stop()

	link := p.Topology.Link("east", "west")
	var tps []topology.TopicPartition
	for part := range int32(parts) {
		tps = append(tps, topology.TopicPartition{Topic: "wide", Partition: part})
	}
	got, err := linkstate.ReadProgress(kfaketest.Ctx(t, 10*time.Second), src, dst, link, tps)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range tps {
		if got[tp] != 5 {
			t.Fatalf("%s progress %d, want 5", tp, got[tp])
		}
	}
	t.Logf("%d progress commits, the largest of %d partitions; %d refused", commits.Load(), largest.Load(), refused.Load())
	if refused.Load() > 0 || largest.Load() > 6 {
		t.Fatalf("%d progress commits over the bound (the largest of %d partitions, bound 6)", refused.Load(), largest.Load())
	}
}
