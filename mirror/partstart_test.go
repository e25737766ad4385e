package mirror

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/kfaketest"
)

// TestPartitionsJoiningDuringATransactionArePreparedMeanwhile: a topic that
// joins the shard while its transaction waits on the target has its
// progress read during that transaction, not after the commit, and is
// then copied record for record, as is the topic the transaction held.
// With the reads in the shard's loop the progress read came only after
// the commit, which a 10,000-partition launch paid for at every batch of
// topics the target created (bench/README.md, issue 14).
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
	released := make(chan struct{})
	release := sync.OnceFunc(func() { close(released) })
	t.Cleanup(release)
	held := make(chan struct{})
	p.West.ControlKey(int16(kmsg.EndTxn), func(kmsg.Request) (kmsg.Response, error, bool) {
		p.West.DropControl()
		close(held)
		p.West.SleepControl(func() { <-released })
		return nil, nil, false
	})
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
