package mirror

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/drctl/drctl/internal/kfaketest"
)

// TestRetentionLossIsCounted: records removed on the source before the
// mirror copied them are counted, logged and reported, and copying goes
// on from the source's new log start.
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
	rep, err := MeasureLag(lctx, p.Topology, p.Topology.Link("east", "west"))
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
}
