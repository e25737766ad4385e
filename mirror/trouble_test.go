package mirror

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
)

// TestRetentionLossIsCounted: records removed on the source before the
// mirror copied them are counted, logged and reported, and copying goes
// on from the source's new log start. The loss stays in the link's state
// on the target (topic, partition, offsets, when) after it is no longer
// pending and across restarts, until it is acknowledged.
func TestRetentionLossIsCounted(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"orders\"]}"})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, "orders", 1, nil)
	prod := kfaketest.IdempotentProducer(t, east, "")
	send := func(n int) {
		for i := range n {
			if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "orders", Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := func(want int) *Engine {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		e, err := NewEngine(p.Topology, "east", "west", Options{Epoch: -1, Shards: 1, TopicSyncInterval: 200 * time.Millisecond, IdleCheck: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		waitFor(t, 20*time.Second, fmt.Sprintf("%d records on the target", want), func() error {
			d, err := readAll(dst, "orders", 0)
			if err != nil {
				return err
			}
			if len(d) != want {
				return fmt.Errorf("%d records", len(d))
			}
			return nil
		})
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return e
	}
	send(10)
	run(10)

	// While the mirror is down, 20 more records arrive and retention (here
	// DeleteRecords) removes the first 25 on the source.
	send(20)
	admin, err := sarama.NewClusterAdminFromClient(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.DeleteRecords("orders", map[int32]int64{0: 25}); err != nil {
		t.Fatal(err)
	}
	lctx, lcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer lcancel()
	rep, err := linkstate.MeasureLag(lctx, kfaketest.Session(t, p.Topology), p.Topology.Link("east", "west"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.TotalLost != 15 || rep.Partitions[0].Records != 5 {
		t.Errorf("lag before the restart: lost %d (want 15), behind %d (want 5)", rep.TotalLost, rep.Partitions[0].Records)
	}
	e := run(15) // 10 before, then offsets 25..29
	if lost := testutil.ToFloat64(e.metrics.Lost.WithLabelValues("east->west", "orders")); lost != 15 {
		t.Errorf("lost records counted = %v, want 15 (offsets 10 to 24)", lost)
	}
	tr := e.Troubles()["orders/0"]
	if !strings.Contains(tr, "15 records removed by retention") {
		t.Errorf("trouble report = %q", tr)
	}

	// No longer pending, the loss is still on record, also after a
	// restart of the mirror (a counter would start from 0).
	before := time.Now()
	run(15)
	link := p.Topology.Link("east", "west")
	rep, err = linkstate.MeasureLag(lctx, kfaketest.Session(t, p.Topology), link)
	if err != nil {
		t.Fatal(err)
	}
	want := "orders/0 offsets 10-24 (15 records)"
	if rep.TotalLost != 0 || rep.LostUnacknowledged != 15 || len(rep.Losses) != 1 || rep.Losses[0].String() != want ||
		rep.Losses[0].At.After(before) || rep.Losses[0].At.IsZero() {
		t.Errorf("lag after the loss: pending %d (want 0), unacknowledged %d (want 15), losses %+v (want %s, found before the restart)",
			rep.TotalLost, rep.LostUnacknowledged, rep.Losses, want)
	}
	ls := linkstate.Describe(lctx, kfaketest.Session(t, p.Topology), link)
	if probs := strings.Join(ls.Problems(), "\n"); ls.LostUnacknowledged != 15 || !strings.Contains(probs, want) || !strings.Contains(probs, "drctl mirror ack-lost") {
		t.Errorf("link state: %d unacknowledged, problems:\n%s\nwant the range and drctl mirror ack-lost", ls.LostUnacknowledged, probs)
	}

	// Acknowledged, it is gone from the record.
	n, err := linkstate.AckLost(lctx, dst, link, rep.Losses)
	if err != nil || n != 1 {
		t.Fatalf("AckLost: %d, %v", n, err)
	}
	left, err := linkstate.ReadLost(lctx, dst, link)
	if err != nil || len(left) != 0 {
		t.Errorf("losses after the acknowledgement: %+v, %v; want none", left, err)
	}
}
