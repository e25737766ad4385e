//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestMirrorSIGKILLRealKafka proves exactly-once across crashes against real Apache Kafka:
// while a stream of plain and transactional records (some transactions
// aborted) flows into east, `drctl mirror run` is SIGKILLed at random
// moments and restarted, again and again; in the end west holds every
// committed source record exactly once, in order, and no aborted one.
//
// A restarted process gets the shards only once the killed one's group
// session has expired (the mirror's worker session timeout, 10 s), so each
// round takes about that long; the stream is paced to outlast the kills.
func TestMirrorSIGKILLRealKafka(t *testing.T) {
	const (
		partitions = 6
		minRecords = 100_000
		kills      = 10
	)
	topic := uniqueName(t, "mk")
	mt := writeMirrorTopology(t, topicPattern(topic))
	createTopic(t, "east", topic, partitions, nil)
	t.Cleanup(func() { deleteTopics(t, "west", topic) })
	src, dst := mt.dial(t, "east"), mt.dial(t, "west")
	eastID, err := kafkaconn.ClusterID(src)
	if err != nil {
		t.Fatal(err)
	}

	var killing atomic.Bool
	killing.Store(true)
	s := &stream{Topic: topic, Partitions: partitions, Min: minRecords, Max: 4 * minRecords,
		Pace: 100 * time.Millisecond, BatchSize: 100, More: killing.Load}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	began := time.Now()
	streamDone := s.start(ctx, mt.Topo.Clusters["east"], mt.Name+"-stream")

	type round struct {
		owned, alive time.Duration // from start to owning shards; from owning to the kill
		produced     int64         // records the stream had written at the kill
		copied       float64       // records this incarnation had committed on west just before the kill
	}
	var rounds []round
	for i := range kills {
		p := startMirror(t, mt, fmt.Sprintf("mirror-%02d", i))
		started := time.Now()
		kfaketest.WaitFor(t, 60*time.Second, p.name+" owns shards", func() error {
			if p.exited() {
				return fmt.Errorf("%s exited with %d:\n%s", p.name, p.code, p.tail(20))
			}
			n, err := p.shardsOwned(mt.link())
			if err == nil && n == 0 {
				err = fmt.Errorf("owns no shard yet")
			}
			return err
		})
		owned := time.Since(started)
		// A random moment: right after the claim (while the shards fence
		// their ids and read progress) or in the middle of copying.
		var alive time.Duration
		if i%2 == 0 {
			alive = time.Duration(rand.IntN(500)) * time.Millisecond
		} else {
			alive = time.Duration(500+rand.IntN(3500)) * time.Millisecond
		}
		select {
		case <-time.After(alive):
		case <-p.done:
			t.Fatalf("%s exited with %d:\n%s", p.name, p.code, p.tail(20))
		}
		copied, _, _ := p.metric("drctl_mirror_records_total", `link="east->west"`)
		p.kill()
		rounds = append(rounds, round{owned: owned.Round(time.Millisecond), alive: alive, produced: s.Produced.Load(), copied: copied})
	}
	killing.Store(false)
	killedAt := s.Produced.Load()
	if err := streamDone(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	streamTook := time.Since(began)
	for i, r := range rounds {
		t.Logf("kill %2d: shards owned %v after start, killed %v later; it had copied %.0f records; %d produced by then",
			i+1, r.owned, r.alive, r.copied, r.produced)
	}
	if killedAt >= s.Produced.Load() {
		t.Errorf("the stream (%d records) ended before the last kill", s.Produced.Load())
	}

	final := startMirror(t, mt, "mirror-final")
	catchUp := time.Now()
	waitCaughtUp(t, mt, 2*time.Minute)
	caughtIn := time.Since(catchUp)
	total, err := compareTopic(src, dst, topic, partitions, eastID, false)
	if err != nil {
		t.Fatalf("after %d SIGKILLs: %v", kills, err)
	}
	ends, err := partitionEnds(dst, topic, partitions)
	if err != nil {
		t.Fatal(err)
	}
	var westLog int64
	for _, e := range ends {
		westLog += e.High
	}
	want := s.Produced.Load() - s.Aborted.Load()
	if int64(total) != want {
		t.Errorf("east holds %d committed records, the stream committed %d", total, want)
	}
	if s.Produced.Load() < minRecords || s.AbortedTx.Load() == 0 {
		t.Errorf("stream: %d records, %d aborted transactions", s.Produced.Load(), s.AbortedTx.Load())
	}
	t.Logf("stream: %d records in %v (%d committed transactions, %d aborted with %d records); %d SIGKILLs during it",
		s.Produced.Load(), streamTook.Round(time.Second), s.Committed.Load(), s.AbortedTx.Load(), s.Aborted.Load(), kills)
	t.Logf("final mirror caught up %v after its start; west: %d committed records exactly once, in order (its log spans %d offsets with aborted copies and markers)",
		caughtIn.Round(time.Millisecond), total, westLog)
	final.kill()
}
