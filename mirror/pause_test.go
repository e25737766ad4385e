package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

// TestDaemonHonoursPause: a pause of the running link at its epoch stops
// the copying while the daemon goes on recording the source's ends (marked
// with the pause); a pause for another epoch is ignored; releasing the
// pause, or its expiry, resumes the copying with nothing lost or doubled.
func TestDaemonHonoursPause(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"orders\"]}"})
	topo := p.Topology
	east, west := topo.Clusters["east"], topo.Clusters["west"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, west)
	kfaketest.CreateTopicOn(t, src, "orders", 2, nil)
	prod := kfaketest.IdempotentProducer(t, east, "")
	sent := 0
	send := func(n int) {
		for range n {
			if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "orders", Partition: int32(sent % 2), Value: sarama.StringEncoder(fmt.Sprint(sent))}); err != nil {
				t.Fatal(err)
			}
			sent++
		}
	}
	onWest := func() int {
		n := 0
		for part := range int32(2) {
			d, err := readAll(dst, "orders", part)
			if err != nil {
				return -1
			}
			n += len(d)
		}
		return n
	}
	waitWest := func(want int) {
		t.Helper()
		waitFor(t, 20*time.Second, fmt.Sprintf("%d records on west", want), func() error {
			if n := onWest(); n != want {
				return fmt.Errorf("%d on west", n)
			}
			return nil
		})
	}
	link := topo.Link("east", "west")
	clients := map[string]sarama.Client{"east": src, "west": dst}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	put := func(pa linkstate.Pause) {
		t.Helper()
		if err := linkstate.PutPause(ctx, clients, pa); err != nil {
			t.Fatal(err)
		}
	}
	// held waits until every partition's last observation is under pause
	// id and has seen the source's end (sent records in all).
	held := func(id string) {
		t.Helper()
		waitFor(t, 20*time.Second, "the pause "+id+" held and the ends observed", func() error {
			seen, err := linkstate.LastObserved(ctx, dst, link)
			if err != nil {
				return err
			}
			end := int64(0)
			for part := range int32(2) {
				o := seen[topology.TopicPartition{Topic: "orders", Partition: part}]
				if o.Paused != id {
					return fmt.Errorf("partition %d observed under pause %q", part, o.Paused)
				}
				end += o.End
			}
			if end != int64(sent) {
				return fmt.Errorf("observed ends %d of %d", end, sent)
			}
			return nil
		})
	}

	d := NewDaemon(topo, DaemonOptions{StatePoll: 100 * time.Millisecond,
		Engine: Options{Shards: 2, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond}})
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	}()
	send(20)
	waitWest(20)

	now := time.Now().UTC()
	put(linkstate.Pause{Topology: topo.Name, Source: "east", Target: "west", Epoch: 5, ID: "other-epoch", At: now, Until: now.Add(time.Minute)})
	send(10)
	waitWest(30)

	now = time.Now().UTC()
	pa := linkstate.Pause{Topology: topo.Name, Source: "east", Target: "west", Epoch: 0, ID: "drill-1", At: now, Until: now.Add(time.Minute)}
	put(pa)
	held("drill-1") // nothing in flight: west holds 30
	send(15)
	held("drill-1") // the ends of all 45 are recorded under the pause ...
	if n := onWest(); n != 30 {
		t.Fatalf("%d records on west while paused, want 30", n) // ... and none of the 15 copied
	}
	rep, err := readLag(ctx, dst, link)
	if err != nil || rep != 15 {
		t.Errorf("unmirrored records the ends show: %d %v, want 15", rep, err)
	}
	pa.Released, pa.At = true, time.Now().UTC()
	put(pa)
	waitWest(45)

	// A pause whose drill died ends at its expiry.
	now = time.Now().UTC()
	put(linkstate.Pause{Topology: topo.Name, Source: "east", Target: "west", Epoch: 0, ID: "drill-2", At: now, Until: now.Add(5 * time.Second)})
	held("drill-2")
	send(5)
	waitWest(50)
	all := kfaketest.Records(t, dst, "orders", 0, 0)
	all = append(all, kfaketest.Records(t, dst, "orders", 1, 0)...)
	seen := map[string]bool{}
	for _, r := range all {
		if seen[string(r.Value)] {
			t.Errorf("record %s copied twice", r.Value)
		}
		seen[string(r.Value)] = true
	}
}

// readLag sums, from the ends topic, the source records not mirrored.
func readLag(ctx context.Context, dst sarama.Client, link topology.Link) (int64, error) {
	seen, err := linkstate.LastObserved(ctx, dst, link)
	if err != nil {
		return 0, err
	}
	n := int64(0)
	for _, o := range seen {
		n += o.End - o.Mirrored
	}
	return n, nil
}
