package mirror

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// TestPartitionsJoiningDuringATransactionArePreparedMeanwhile: a topic that
// joins the shard while its transaction waits on the target has its
// progress read during that transaction, not after the commit, and is
// then copied record for record, as is the topic the transaction held.
// With the reads in the shard's loop the progress read came only after
// the commit, which a 10,000-partition launch paid for at every batch of
// topics the target created (bench/results/diary.md).
func TestPartitionsJoiningDuringATransactionArePreparedMeanwhile(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"orders\", \"late\"]}"})
	east, west := p.Topology.Clusters["east"], p.Topology.Clusters["west"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, west)
	kfaketest.CreateTopicOn(t, src, "orders", 1, nil)
	prod := kfaketest.IdempotentProducer(t, east, "")
	sendN(t, prod, "orders", 20, "a")
	e := runEngine(t, p.Topology, Options{Shards: 1})
	waitCopied(t, src, dst, "orders", "kfake-east")

	// The shard's next commit (EndTxn) waits on west until released.
	held, release := holdNextCommit(t, p.West)
	// The progress read of late: an OffsetFetch of the progress group
	// that waits for transactions in doubt (RequireStable).
	var mu sync.Mutex
	readLate := make(chan struct{})
	p.West.ControlKey(int16(kmsg.OffsetFetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		r := req.(*kmsg.OffsetFetchRequest)
		if r.Group != e.link.ProgressGroup() || !r.RequireStable {
			return nil, nil, false
		}
		if slices.ContainsFunc(r.Topics, func(t kmsg.OffsetFetchRequestTopic) bool { return t.Topic == "late" }) {
			mu.Lock()
			select {
			case <-readLate:
			default:
				close(readLate)
			}
			mu.Unlock()
		}
		return nil, nil, false
	})

	sendN(t, prod, "orders", 20, "b")
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the shard never committed the records of orders")
	}
	kfaketest.CreateTopicOn(t, src, "late", 1, nil)
	sendN(t, prod, "late", 30, "c")
	select {
	case <-readLate:
	case <-time.After(20 * time.Second):
		t.Fatal("the progress of late was not read while the shard's commit waited")
	}
	release()
	waitCopied(t, src, dst, "orders", "kfake-east")
	waitCopied(t, src, dst, "late", "kfake-east")
}

// TestAShardCountsAsCopyingJustAfterAStart: for IdleCheck after partitions
// started, a shard with no record in hand yet counts as copying, so that it
// does not read the source's ends itself (on the connection its fetcher
// uses) while the new partitions' first records are on their way; once
// IdleCheck passed with nothing copied it is idle again.
func TestAShardCountsAsCopyingJustAfterAStart(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{})
	src := kfaketest.DialCluster(t, p.Topology.Clusters["east"])
	kfaketest.CreateTopicOn(t, src, "orders", 1, nil)
	f, err := newFetcher(src, 1<<20, 1<<20, 1<<20, fetchWaits{idle: time.Second}, fetchSink{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	const idle = 300 * time.Millisecond
	s := &shard{e: &Engine{opts: Options{IdleCheck: idle}}, log: slog.New(slog.DiscardHandler),
		parts: map[topology.TopicPartition]*partState{}, fetch: f}
	s.starts = newStarter(t.Context(), s)
	if s.copying(false, false) {
		t.Fatal("a shard that never copied nor started anything counts as copying")
	}
	tp := topology.TopicPartition{Topic: "orders", Partition: 0}
	r := &prepared{began: time.Now(), parts: []*partState{{tp: tp, next: 0, stable: -1}}, ids: []string{""}, errs: []error{nil}}
	if n, err := s.install(t.Context(), r, map[topology.TopicPartition]bool{tp: true}); n != 1 || err != nil {
		t.Fatalf("install: %d, %v", n, err)
	}
	if !s.copying(false, false) {
		t.Error("just after its partitions started, the shard counts as idle: it would read the source's ends before their first records")
	}
	waitFor(t, 5*time.Second, "idle again after IdleCheck", func() error {
		if s.copying(false, false) {
			return fmt.Errorf("still copying")
		}
		return nil
	})
	if !s.copying(true, false) || !s.copying(false, true) {
		t.Error("a record in hand, or offsets passed, do not count as copying")
	}
}
