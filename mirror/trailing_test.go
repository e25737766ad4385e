package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/offsettranslate"
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
		rep, err := linkstate.MeasureLag(context.Background(), kfaketest.Session(t, p.Topology), link)
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

// TestCopyOfATransactionPassesItsMarker: a source whose producer writes in
// transactions ends every partition in a commit marker. The transaction
// that copies a partition's last records already knows the marker is
// there (the fetcher passed it), so it commits the progress past it: the
// copy drains in its own transactions, with no progress-only transaction
// after them (an offset-map entry without runs). Without that, every
// such copy costs the target a second round of its transaction protocol
// before the link shows zero lag (the reseed of a failover copies only
// such partitions).
func TestCopyOfATransactionPassesItsMarker(t *testing.T) {
	const parts = 24
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"tx\"]}"})
	src, dst := kfaketest.Dial(t, p.Topology, "east"), kfaketest.Dial(t, p.Topology, "west")
	kfaketest.CreateTopicOn(t, src, "tx", parts, nil)
	txn := kfaketest.IdempotentProducer(t, p.Topology.Clusters["east"], "marker")
	if err := txn.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	for part := range int32(parts) {
		for i := range 3 {
			if _, _, err := txn.SendMessage(&sarama.ProducerMessage{Topic: "tx", Partition: part, Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := txn.CommitTxn(); err != nil {
		t.Fatal(err)
	}

	// The lag alone would not tell the two apart (the idle pass moves
	// past the markers too, a moment later); the offset map does.
	runEngine(t, p.Topology, Options{Shards: 1, IdleCheck: time.Second})
	link := p.Topology.Link("east", "west")
	waitFor(t, time.Minute, "zero lag", func() error {
		rep, err := linkstate.MeasureLag(context.Background(), kfaketest.Session(t, p.Topology), link)
		if err != nil {
			return err
		}
		if rep.TotalRecords != 0 || len(rep.Partitions) != parts {
			return fmt.Errorf("%d behind over %d partitions", rep.TotalRecords, len(rep.Partitions))
		}
		return nil
	})
	ids, err := dst.Partitions(link.OffsetsTopic())
	if err != nil {
		t.Fatal(err)
	}
	last := map[topology.TopicPartition]offsettranslate.Entry{}
	for _, id := range ids {
		recs, err := readAll(dst, link.OffsetsTopic(), id)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			b, err := offsettranslate.DecodeBatch(r.Value)
			if err != nil {
				t.Fatalf("offset map %d@%d: %v", id, r.Offset, err)
			}
			for _, en := range b.Entries {
				if len(en.Runs) == 0 {
					t.Errorf("offset map %d@%d: %s/%d moved to %d without copying: a progress-only transaction after the copy", id, r.Offset, en.Topic, en.Partition, en.SourceNext)
					continue
				}
				last[topology.TopicPartition{Topic: en.Topic, Partition: en.Partition}] = en
			}
		}
	}
	if len(last) != parts {
		t.Errorf("%d partitions in the offset map, want %d", len(last), parts)
	}
	for tp, en := range last {
		// 3 records at 0..2, the marker at 3.
		if end := en.Runs[len(en.Runs)-1].SourceEnd(); end != 3 || en.SourceNext != 4 {
			t.Errorf("%s: the last copy ends at %d and moves the progress to %d, want 3 and 4 (past the marker)", tp, end, en.SourceNext)
		}
	}
}

// TestAbortedTailPassedAtOnce: after a copy, the source's producer aborts a
// transaction: its records and the abort marker are offsets with nothing
// to copy, which the fetcher passes in a response without records. The
// shard moves its progress past them as soon as the fetcher has (a wake),
// not at its next IdleCheck (a minute here), so the lag reads zero again
// within seconds.
func TestAbortedTailPassedAtOnce(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"tx\"]}"})
	src, dst := kfaketest.Dial(t, p.Topology, "east"), kfaketest.Dial(t, p.Topology, "west")
	kfaketest.CreateTopicOn(t, src, "tx", 1, nil)
	txn := kfaketest.IdempotentProducer(t, p.Topology.Clusters["east"], "aborter")
	send := func(commit bool) {
		t.Helper()
		if err := txn.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, _, err := txn.SendMessage(&sarama.ProducerMessage{Topic: "tx", Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
				t.Fatal(err)
			}
		}
		end := txn.AbortTxn
		if commit {
			end = txn.CommitTxn
		}
		if err := end(); err != nil {
			t.Fatal(err)
		}
	}
	send(true) // offsets 0-2, the commit marker at 3

	runEngine(t, p.Topology, Options{Shards: 1, IdleCheck: time.Minute})
	link := p.Topology.Link("east", "west")
	behind := func() (int64, error) {
		rep, err := linkstate.MeasureLag(context.Background(), kfaketest.Session(t, p.Topology), link)
		if err != nil {
			return 0, err
		}
		if len(rep.Partitions) != 1 {
			return 0, fmt.Errorf("%d partitions in the lag", len(rep.Partitions))
		}
		return rep.TotalRecords, nil
	}
	zero := func() error {
		n, err := behind()
		if err == nil && n != 0 {
			err = fmt.Errorf("%d behind", n)
		}
		return err
	}
	waitFor(t, 30*time.Second, "the committed records copied", zero)
	send(false) // offsets 4-6 aborted, the abort marker at 7
	aborted := time.Now()
	waitFor(t, 5*time.Second, "zero lag past the aborted transaction, well within IdleCheck", zero)
	t.Logf("zero lag %v after the abort", time.Since(aborted).Round(time.Millisecond))
	if d, err := readAll(dst, "tx", 0); err != nil || len(d) != 3 {
		t.Fatalf("target holds %d records (%v), want the 3 committed", len(d), err)
	}
}

// TestAbortsDoNotFloodTheTarget: a source producer that aborts one
// transaction after another gives the shard a wake for each (see
// TestAbortedTailPassedAtOnce); the progress-only transactions those wakes
// start are spaced passedGap apart, so a burst of aborts costs the target
// a few transactions, not one each.
func TestAbortsDoNotFloodTheTarget(t *testing.T) {
	const aborts = 150
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"tx\"]}"})
	src := kfaketest.Dial(t, p.Topology, "east")
	kfaketest.CreateTopicOn(t, src, "tx", 1, nil)
	txn := kfaketest.IdempotentProducer(t, p.Topology.Clusters["east"], "aborter")
	e := runEngine(t, p.Topology, Options{Shards: 1, IdleCheck: time.Minute})
	link := p.Topology.Link("east", "west")
	zero := func() error {
		rep, err := linkstate.MeasureLag(context.Background(), kfaketest.Session(t, p.Topology), link)
		if err == nil && (len(rep.Partitions) != 1 || rep.TotalRecords != 0) {
			err = fmt.Errorf("%d behind over %d partitions", rep.TotalRecords, len(rep.Partitions))
		}
		return err
	}
	waitFor(t, 30*time.Second, "the link running", zero)
	committed := func() float64 {
		return testutil.ToFloat64(e.metrics.Transactions.WithLabelValues(link.String(), "committed"))
	}
	before := committed()
	start := time.Now()
	for i := range aborts {
		if err := txn.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := txn.SendMessage(&sarama.ProducerMessage{Topic: "tx", Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
		if err := txn.AbortTxn(); err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(start)
	waitFor(t, 10*time.Second, "zero lag past every aborted transaction", zero)
	n := committed() - before
	bound := float64(took/passedGap) + 3
	t.Logf("%d aborts in %v: %.0f transactions on the target (bound %.0f)", aborts, took.Round(time.Millisecond), n, bound)
	if n > bound {
		t.Errorf("%.0f progress-only transactions for %d aborts in %v, want at most %.0f (one per %v)", n, aborts, took, bound, passedGap)
	}
}
