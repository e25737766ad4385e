package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// writeInterleaved writes rounds of records into every partition of topic:
// each round a transaction whose records go one batch at a time (so a
// transaction spans fetches), aborted every third round, followed by a
// plain idempotent record (a null key, every other one a null value). The
// values are 3,000 bytes or more: with the fetcher's small shares, fetch
// boundaries fall inside transactions, aborted ones included.
func writeInterleaved(t *testing.T, c *topology.Cluster, topic string, partitions int32, rounds int) {
	t.Helper()
	txp := kfaketest.IdempotentProducer(t, c, "writer-"+topic)
	plain := kfaketest.IdempotentProducer(t, c, "")
	pad := strings.Repeat("x", 3000)
	for r := range rounds {
		if err := txp.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		for p := range partitions {
			for i := range 5 {
				if _, _, err := txp.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: p,
					Key:     sarama.StringEncoder(fmt.Sprintf("k%d-%d", r, i)),
					Value:   sarama.StringEncoder(fmt.Sprintf("round %d record %d %s", r, i, pad[:r*37%500]) + pad),
					Headers: []sarama.RecordHeader{{Key: []byte("round"), Value: []byte(fmt.Sprint(r))}, {Key: []byte("empty"), Value: []byte{}}},
				}); err != nil {
					t.Fatal(err)
				}
			}
		}
		end := txp.CommitTxn
		if r%3 == 1 {
			end = txp.AbortTxn
		}
		if err := end(); err != nil {
			t.Fatal(err)
		}
		for p := range partitions {
			m := &sarama.ProducerMessage{Topic: topic, Partition: p}
			if r%2 == 0 {
				m.Value = sarama.StringEncoder(fmt.Sprintf("plain %d", r))
			}
			if _, _, err := plain.SendMessage(m); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// testFetcher runs a fetcher on src with small shares (fetches of a few
// records) that hands its records to out; troubles fail the test.
func testFetcher(t *testing.T, src sarama.Client, out chan *sarama.ConsumerMessage, tune ...func(*fetchSink)) *fetcher {
	t.Helper()
	var held atomic.Int64
	sink := fetchSink{
		out: out, buf: newBudget(1 << 30), held: &held,
		outOfRange: func(_ context.Context, tp topology.TopicPartition, at int64) (int64, error) {
			t.Errorf("%s: offset %d out of range", tp, at)
			return 0, errRefused
		},
		recreated: func(tp topology.TopicPartition, id string) { t.Errorf("%s: recreated (id %s)", tp, id) },
		failed:    func(tp topology.TopicPartition, err error) { t.Logf("%s: %v", tp, err) },
	}
	for _, fn := range tune {
		fn(&sink)
	}
	f, err := newFetcher(src, minPartBytes, 2*idleShareMax, 2*idleShareMax, fetchWaits{idle: 50 * time.Millisecond}, sink, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	f.start(context.Background())
	t.Cleanup(f.close)
	return f
}

// sameMessages compares what a fetcher handed over with the partition's
// committed records: same offsets in order, keys and values (null ones
// included), headers and timestamps.
func sameMessages(want []kafkaread.Record, got []*sarama.ConsumerMessage) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d records handed over, %d committed", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		switch {
		case g.Offset != w.Offset:
			return fmt.Errorf("record %d: offset %d, want %d", i, g.Offset, w.Offset)
		case string(g.Key) != string(w.Key) || (g.Key == nil) != (w.Key == nil):
			return fmt.Errorf("offset %d: key %q, want %q", w.Offset, g.Key, w.Key)
		case string(g.Value) != string(w.Value) || (g.Value == nil) != (w.Value == nil):
			return fmt.Errorf("offset %d: value differs (null: %v, want %v)", w.Offset, g.Value == nil, w.Value == nil)
		case !g.Timestamp.Equal(w.Timestamp):
			return fmt.Errorf("offset %d: timestamp %v, want %v", w.Offset, g.Timestamp, w.Timestamp)
		case len(g.Headers) != len(w.Headers):
			return fmt.Errorf("offset %d: %d headers, want %d", w.Offset, len(g.Headers), len(w.Headers))
		}
		for j, h := range w.Headers {
			if string(g.Headers[j].Key) != string(h.Key) || string(g.Headers[j].Value) != string(h.Value) {
				return fmt.Errorf("offset %d: header %d is %s=%s, want %s=%s", w.Offset, j, g.Headers[j].Key, g.Headers[j].Value, h.Key, h.Value)
			}
		}
	}
	return nil
}

func receive(t *testing.T, out <-chan *sarama.ConsumerMessage, within time.Duration) *sarama.ConsumerMessage {
	t.Helper()
	select {
	case m := <-out:
		return m
	case <-time.After(within):
		t.Fatalf("no record handed over within %v", within)
		return nil
	}
}

// TestFetcherHandsOverCommittedRecordsThroughLeaderMovesAndDroppedConnections:
// over three brokers, with fetches of a few records (fetch boundaries inside
// transactions), the fetcher hands over exactly the committed records of
// every partition, in order, with keys, values, headers and timestamps
// intact, while every partition's leader moves and fetch connections are
// dropped in the middle of the copy.
func TestFetcherHandsOverCommittedRecordsThroughLeaderMovesAndDroppedConnections(t *testing.T) {
	const parts = 4
	p := kfaketest.NewPair(t, kfaketest.Options{ClusterOpts: []kfake.Opt{kfake.NumBrokers(3)}})
	east := p.Topology.Clusters["east"]
	src := kfaketest.DialCluster(t, east)
	kfaketest.CreateTopicOn(t, src, "tx", parts, nil)
	writeInterleaved(t, east, "tx", parts, 24)
	want := map[int32][]kafkaread.Record{}
	total := 0
	for part := range int32(parts) {
		recs, err := readAll(src, "tx", part)
		if err != nil {
			t.Fatal(err)
		}
		want[part] = recs
		total += len(recs)
	}
	if total != parts*(16*5+24) {
		t.Fatalf("the source holds %d committed records, want %d", total, parts*(16*5+24))
	}

	out := make(chan *sarama.ConsumerMessage, 4)
	f := testFetcher(t, src, out)
	for part := range int32(parts) {
		f.add(topology.TopicPartition{Topic: "tx", Partition: part}, 0, "")
	}
	got := map[int32][]*sarama.ConsumerMessage{}
	var dropped atomic.Int32
	for n := range total {
		m := receive(t, out, 60*time.Second)
		if cap(m.Value) != len(m.Value) || cap(m.Key) != len(m.Key) {
			t.Fatalf("tx/%d offset %d: key or value is part of a larger buffer (cap %d/%d, len %d/%d): it pins its fetch response",
				m.Partition, m.Offset, cap(m.Key), cap(m.Value), len(m.Key), len(m.Value))
		}
		got[m.Partition] = append(got[m.Partition], m)
		if n == total/3 {
			for part := range int32(parts) {
				to := (p.East.LeaderFor("tx", part) + 1) % 3
				if err := p.East.MoveTopicPartition("tx", part, to); err != nil {
					t.Fatal(err)
				}
			}
			// Three fetch connections are closed under the fetcher; later
			// fetches pass.
			p.East.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
				p.East.KeepControl()
				if dropped.Load() >= 3 {
					return nil, nil, false
				}
				dropped.Add(1)
				return nil, errors.New("connection dropped by the test"), true
			})
		}
	}
	if d := dropped.Load(); d < 3 {
		t.Errorf("%d fetch connections dropped, want 3", d)
	}
	for part := range int32(parts) {
		if err := sameMessages(want[part], got[part]); err != nil {
			t.Errorf("tx/%d: %v", part, err)
		}
	}
	select {
	case m := <-out:
		t.Errorf("an extra record after the copy: %s/%d offset %d", m.Topic, m.Partition, m.Offset)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestFetcherRemovedPartitionHandsOverNothingMore: once remove returns, not
// one more record of the partition is handed over, while the shard's other
// partitions go on; added again, it starts where it is told.
func TestFetcherRemovedPartitionHandsOverNothingMore(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{})
	src := kfaketest.DialCluster(t, p.Topology.Clusters["east"])
	kfaketest.CreateTopicOn(t, src, "rm", 2, nil)
	kfaketest.ProduceEach(t, p.Topology, "east", "rm", 2, 200)
	out := make(chan *sarama.ConsumerMessage) // unbuffered: records wait in the fetcher
	f := testFetcher(t, src, out)
	p0 := f.add(topology.TopicPartition{Topic: "rm", Partition: 0}, 0, "")
	f.add(topology.TopicPartition{Topic: "rm", Partition: 1}, 0, "")
	n := map[int32]int{}
	for n[0] < 20 {
		m := receive(t, out, 30*time.Second)
		n[m.Partition]++
	}
	f.remove(p0)
	for n[1] < 200 {
		m := receive(t, out, 30*time.Second)
		if m.Partition == 0 {
			t.Fatalf("rm/0 offset %d handed over after its removal", m.Offset)
		}
		if want := int64(n[1]); m.Offset != want {
			t.Fatalf("rm/1: offset %d, want %d", m.Offset, want)
		}
		n[1]++
	}
	select {
	case m := <-out:
		t.Fatalf("%s/%d offset %d handed over after the copy (rm/0 was removed)", m.Topic, m.Partition, m.Offset)
	case <-time.After(300 * time.Millisecond):
	}

	f.add(topology.TopicPartition{Topic: "rm", Partition: 0}, 150, "")
	for want := int64(150); want < 200; want++ {
		if m := receive(t, out, 30*time.Second); m.Partition != 0 || m.Offset != want {
			t.Fatalf("after re-adding rm/0 at 150: %s/%d offset %d, want rm/0 offset %d", m.Topic, m.Partition, m.Offset, want)
		}
	}
}

// TestMirrorManyPartitionsInOneShardThroughChurn: one shard copies 120
// partitions of transactional records (aborted transactions interleaved,
// fetch boundaries inside transactions) exactly, record by record, while
// every source leader moves and fetch connections are dropped mid-copy.
func TestMirrorManyPartitionsInOneShardThroughChurn(t *testing.T) {
	const parts = 120
	p := kfaketest.NewPair(t, kfaketest.Options{ClusterOpts: []kfake.Opt{kfake.NumBrokers(3)}, Mirror: "  topics: {include: [\"many\"]}"})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, "many", parts, nil)
	writeInterleaved(t, east, "many", parts, 4)
	// Paused, the shard copies nothing while its fetcher fills its
	// buffer (256 records) and waits: the churn below comes mid-copy.
	e := runEngine(t, p.Topology, Options{Shards: 1, FetchBytes: 16 << 10, FetchResponseBytes: 256 << 10, MaxBatchRecords: 200, ChannelBuffer: 256})
	e.SetPaused("test")
	waitFor(t, 60*time.Second, "records fetched", func() error {
		e.buf.mu.Lock()
		defer e.buf.mu.Unlock()
		if e.buf.held < 200*3000 {
			return fmt.Errorf("%d bytes held", e.buf.held)
		}
		return nil
	})
	for part := range int32(parts) {
		if err := p.East.MoveTopicPartition("many", part, (p.East.LeaderFor("many", part)+1)%3); err != nil {
			t.Fatal(err)
		}
	}
	var dropped atomic.Int32
	p.East.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		p.East.KeepControl()
		if dropped.Load() >= 5 {
			return nil, nil, false
		}
		dropped.Add(1)
		return nil, errors.New("connection dropped by the test"), true
	})
	e.SetPaused("")
	for part := range int32(parts) {
		waitFor(t, 60*time.Second, fmt.Sprintf("many/%d copied record by record", part), func() error {
			s, err := readAll(src, "many", part)
			if err != nil {
				return err
			}
			d, err := readAll(dst, "many", part)
			if err != nil {
				return err
			}
			return sameRecords(s, d, "kfake-east")
		})
	}
	if d := dropped.Load(); d < 5 {
		t.Errorf("%d fetch connections dropped, want 5", d)
	}
}

// TestFetcherChecksTopicIDAfterOutOfRange: a position out of range is
// resolved only after the topic's id is checked. With the id the partition
// was started for, the shard's resolution (here: retention moved the log
// start) is where it goes on; with another id (the topic was recreated
// under its name) the partition is reported and hands over nothing, even
// though the new log has records at its position.
func TestFetcherChecksTopicIDAfterOutOfRange(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{})
	src := kfaketest.DialCluster(t, p.Topology.Clusters["east"])
	kfaketest.CreateTopicOn(t, src, "oor", 2, nil)
	kfaketest.ProduceEach(t, p.Topology, "east", "oor", 2, 40)
	if err := kfaketest.Admin(t, src).DeleteRecords("oor", map[int32]int64{0: 25}); err != nil {
		t.Fatal(err)
	}
	ids, err := kafkaread.TopicIDs(kfaketest.Ctx(t, 10*time.Second), src, []string{"oor"})
	if err != nil || ids["oor"] == "" {
		t.Fatalf("topic id of oor: %q, %v", ids["oor"], err)
	}
	var resolved, recreated atomic.Int32
	out := make(chan *sarama.ConsumerMessage, 64)
	f := testFetcher(t, src, out, func(s *fetchSink) {
		s.outOfRange = func(_ context.Context, tp topology.TopicPartition, at int64) (int64, error) {
			if tp.Partition != 0 || at != 5 {
				t.Errorf("out of range: %s at %d, want oor/0 at 5", tp, at)
			}
			if resolved.Add(1) == 1 {
				// A refusal is not final (a restarting broker's ends
				// may read low for a moment): the position is checked
				// again.
				return 0, errRefused
			}
			return 25, nil
		}
		s.recreated = func(tp topology.TopicPartition, id string) {
			if tp.Partition != 1 || id != ids["oor"] {
				t.Errorf("recreated: %s with id %s, want oor/1 with %s", tp, id, ids["oor"])
			}
			recreated.Add(1)
		}
	})
	f.add(topology.TopicPartition{Topic: "oor", Partition: 0}, 5, ids["oor"])
	// oor/1 was started for another incarnation, 60 records long: 50 is
	// beyond the log that carries the name now.
	f.add(topology.TopicPartition{Topic: "oor", Partition: 1}, 50, "00000000000000000000000000000001")
	for want := int64(25); want < 40; want++ {
		if m := receive(t, out, 30*time.Second); m.Partition != 0 || m.Offset != want {
			t.Fatalf("%s/%d offset %d, want oor/0 offset %d", m.Topic, m.Partition, m.Offset, want)
		}
	}
	waitFor(t, 10*time.Second, "oor/1 reported recreated", func() error {
		if recreated.Load() == 0 {
			return errors.New("not yet")
		}
		return nil
	})
	prod := kfaketest.IdempotentProducer(t, p.Topology.Clusters["east"], "")
	for i := range 30 { // oor/1 now reaches past 50
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "oor", Partition: 1, Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case m := <-out:
		t.Fatalf("%s/%d offset %d handed over; oor/1 belongs to another incarnation", m.Topic, m.Partition, m.Offset)
	case <-time.After(500 * time.Millisecond):
	}
	if resolved.Load() != 2 || recreated.Load() < 1 {
		t.Errorf("out of range resolved %d times, recreation reported %d times; want 2 (a refusal, then 25) and at least 1", resolved.Load(), recreated.Load())
	}
}

// TestFetcherFetchesWhileHandingOver: while a round's records wait to be
// handed over (nobody takes them), the next round is already fetched from
// where that round ends, and no further one: a round trip to a distant
// source overlaps the hand-over, with at most one round read ahead. The
// records still come in order, and each response's last stable offset is
// noted for the shard.
func TestFetcherFetchesWhileHandingOver(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{})
	src := kfaketest.DialCluster(t, p.Topology.Clusters["east"])
	kfaketest.CreateTopicOn(t, src, "ahead", 1, nil)
	kfaketest.ProduceEach(t, p.Topology, "east", "ahead", 1, 200)
	var fetches atomic.Int64
	var lastAt atomic.Int64 // the fetch offset of the latest request
	p.East.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		p.East.KeepControl()
		for _, tp := range req.(*kmsg.FetchRequest).Topics {
			for _, pt := range tp.Partitions {
				lastAt.Store(pt.FetchOffset)
			}
		}
		fetches.Add(1)
		return nil, nil, false
	})
	out := make(chan *sarama.ConsumerMessage) // unbuffered: a round waits on its hand-over
	f := testFetcher(t, src, out)
	fp := f.add(topology.TopicPartition{Topic: "ahead", Partition: 0}, 0, "")
	first := receive(t, out, 30*time.Second)
	if first.Offset != 0 {
		t.Fatalf("first record at offset %d, want 0", first.Offset)
	}
	// The first round holds more than one record (shares of 8 KiB and
	// more): it waits on its second record now.
	waitFor(t, 30*time.Second, "the next round fetched during the hand-over", func() error {
		if n := fetches.Load(); n < 2 {
			return fmt.Errorf("%d fetch request(s)", n)
		}
		return nil
	})
	if at := lastAt.Load(); at <= 1 {
		t.Errorf("the round fetched ahead starts at offset %d, want past the first round's records", at)
	}
	if lso, _, ok := fp.lastStable(); !ok || lso != 200 {
		t.Errorf("last stable offset noted from the fetch: %d (ok %v), want 200", lso, ok)
	}
	// No third round while the first is still being handed over.
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		if n := fetches.Load(); n > 2 {
			t.Fatalf("%d fetch requests while the first round waits on its hand-over, want 2", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for want := int64(1); want < 200; want++ {
		if m := receive(t, out, 30*time.Second); m.Offset != want {
			t.Fatalf("offset %d handed over, want %d", m.Offset, want)
		}
	}
}

// leaderCounter counts the leader lookups a fetcher makes in its client.
type leaderCounter struct {
	sarama.Client
	n atomic.Int64
}

func (c *leaderCounter) Leader(topic string, partition int32) (*sarama.Broker, error) {
	c.n.Add(1)
	return c.Client.Leader(topic, partition)
}

// TestFetcherLooksUpLeadersOnlyAfterAFailure: an idle shard sends a fetch
// round every FetchWait; it must not look every partition's leader up in
// the client's metadata each round (15% of an idle 10,000-partition
// mirror's CPU). A partition is routed again only after a fetch of it
// failed, which is how a leader move shows (the leader-move test above
// covers that path).
func TestFetcherLooksUpLeadersOnlyAfterAFailure(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{})
	src := kfaketest.DialCluster(t, p.Topology.Clusters["east"])
	const parts = 20
	kfaketest.CreateTopicOn(t, src, "quiet", parts, nil)
	var rounds atomic.Int64
	p.East.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		p.East.KeepControl()
		rounds.Add(1)
		return nil, nil, false
	})
	lc := &leaderCounter{Client: src}
	f := testFetcher(t, lc, make(chan *sarama.ConsumerMessage, 16))
	for part := range int32(parts) {
		f.add(topology.TopicPartition{Topic: "quiet", Partition: part}, 0, "")
	}
	waitFor(t, 30*time.Second, "ten idle fetch rounds", func() error {
		if n := rounds.Load(); n < 10 {
			return fmt.Errorf("%d rounds", n)
		}
		return nil
	})
	if n := lc.n.Load(); n > 2*parts {
		t.Errorf("%d leader lookups for %d partitions in %d rounds: want each partition's leader looked up once", n, parts, rounds.Load())
	}
}

// TestALoneBusyPartitionFillsTheResponse: with the default sizes, a busy
// partition alone in its shard's request may take the whole response (one
// response per round trip is all a partition gets, which bounds its copy
// across a WAN: 1 MiB before, 47,735-54,391 records/s at 50 ms each way
// against 55,752-64,413 with 2 MiB), while busy partitions sharing a
// request split it, so the response stays within its bound.
func TestALoneBusyPartitionFillsTheResponse(t *testing.T) {
	o := Options{Shards: DefaultShards}
	o.defaults()
	if _, active := shares(1, 1, o.FetchBytes, o.FetchResponseBytes); active != o.FetchResponseBytes {
		t.Errorf("a lone busy partition's share is %d bytes, want the whole response (%d)", active, o.FetchResponseBytes)
	}
	if _, active := shares(2, 2, o.FetchBytes, o.FetchResponseBytes); active != o.FetchResponseBytes/2 {
		t.Errorf("two busy partitions get %d bytes each, want half the response (%d)", active, o.FetchResponseBytes/2)
	}
	idle, active := shares(100, 10, o.FetchBytes, o.FetchResponseBytes)
	if sum := int64(90)*int64(idle) + 10*int64(active); sum > int64(o.FetchResponseBytes) {
		t.Errorf("100 partitions, 10 busy: the shares add up to %d bytes, over the response's %d", sum, o.FetchResponseBytes)
	}
}

// TestFetcherAddsPartitionsTogether: partitions a shard starts together
// reach the fetcher together, so that its next round asks for every one.
// Added one by one, a round could ask for some and the next for the rest,
// and the rest then needed a transaction of their own, which waits for the
// first one's commit markers (seconds with a thousand partitions; before,
// 2 of 6 starts of 3,000 partitions on kfake copied them in two
// transactions, after, 6 of 6 in one).
func TestFetcherAddsPartitionsTogether(t *testing.T) {
	const partitions = 200
	p := kfaketest.NewPair(t, kfaketest.Options{})
	src := kfaketest.DialCluster(t, p.Topology.Clusters["east"])
	kfaketest.CreateTopicOn(t, src, "many", partitions, nil)
	kfaketest.ProduceEach(t, p.Topology, "east", "many", partitions, 1)
	var first atomic.Int64 // partitions in the first request that asked for any
	p.East.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		p.East.KeepControl()
		n := 0
		for _, tp := range req.(*kmsg.FetchRequest).Topics {
			n += len(tp.Partitions)
		}
		if n > 0 {
			first.CompareAndSwap(0, int64(n))
		}
		return nil, nil, false
	})
	out := make(chan *sarama.ConsumerMessage, partitions)
	f := testFetcher(t, src, out)
	var starts []fetchStart
	for part := range int32(partitions) {
		starts = append(starts, fetchStart{tp: topology.TopicPartition{Topic: "many", Partition: part}})
	}
	fps := f.addAll(starts)
	for i, fp := range fps {
		if fp.tp != starts[i].tp {
			t.Fatalf("fetchPart %d is %s, want %s", i, fp.tp, starts[i].tp)
		}
	}
	for range partitions {
		receive(t, out, 30*time.Second)
	}
	if n := first.Load(); n != partitions {
		t.Errorf("the first fetch asked for %d partitions, want all %d added together", n, partitions)
	}
}

// waitFetcher is a fetcher on src whose settled rounds may wait waits.idle
// at the source (streaming ones waits.gather) and that counts as settled
// settle after its last change.
func waitFetcher(t *testing.T, src sarama.Client, out chan *sarama.ConsumerMessage, waits fetchWaits, settle time.Duration) *fetcher {
	t.Helper()
	var held atomic.Int64
	sink := fetchSink{out: out, buf: newBudget(1 << 30), held: &held,
		outOfRange: func(context.Context, topology.TopicPartition, int64) (int64, error) { return 0, errRefused },
		recreated:  func(tp topology.TopicPartition, id string) { t.Errorf("%s: recreated (id %s)", tp, id) },
		failed:     func(tp topology.TopicPartition, err error) { t.Logf("%s: %v", tp, err) },
	}
	f, err := newFetcher(src, minPartBytes, 2*idleShareMax, 2*idleShareMax, waits, sink, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	f.settle = settle
	f.start(context.Background())
	t.Cleanup(f.close)
	return f
}

// fetchesSeen records the MaxWait, the MinBytes and the partition count of
// every fetch request c receives.
type fetchesSeen struct {
	mu   sync.Mutex
	reqs []fetchSeen
}

type fetchSeen struct {
	wait     time.Duration
	minBytes int32
	parts    int
}

func watchFetchWaits(c *kfake.Cluster) *fetchesSeen {
	w := &fetchesSeen{}
	c.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		fr := req.(*kmsg.FetchRequest)
		n := 0
		for _, tp := range fr.Topics {
			n += len(tp.Partitions)
		}
		w.mu.Lock()
		w.reqs = append(w.reqs, fetchSeen{wait: time.Duration(fr.MaxWaitMillis) * time.Millisecond, minBytes: fr.MinBytes, parts: n})
		w.mu.Unlock()
		return nil, nil, false
	})
	return w
}

func (w *fetchesSeen) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.reqs)
}

func (w *fetchesSeen) last() fetchSeen {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.reqs) == 0 {
		return fetchSeen{}
	}
	return w.reqs[len(w.reqs)-1]
}

// quietSource is a kfake pair whose east holds the empty topic "quiet" of
// partitions partitions, a client of east, the fetch requests east gets
// from now on, and a channel for a fetcher's records.
func quietSource(t *testing.T, partitions int32) (*kfaketest.Pair, sarama.Client, *fetchesSeen, chan *sarama.ConsumerMessage) {
	t.Helper()
	p := kfaketest.NewPair(t, kfaketest.Options{})
	src := kfaketest.DialCluster(t, p.Topology.Clusters["east"])
	kfaketest.CreateTopicOn(t, src, "quiet", partitions, nil)
	return p, src, watchFetchWaits(p.East), make(chan *sarama.ConsumerMessage, 16)
}

// TestAWaitingFetchAnswersWhenARecordComes: a settled fetcher's request
// waits at the source up to FetchWait (500 ms by default, so that an idle
// link of thousands of partitions asks a few times a second rather than ten),
// which must delay no record: the source answers a waiting fetch as soon as
// a record is there, and a read_committed one as soon as a transaction
// commits. Here the requests may wait 20 s; each record must arrive far
// sooner.
func TestAWaitingFetchAnswersWhenARecordComes(t *testing.T) {
	p, src, waits, out := quietSource(t, 1)
	east := p.Topology.Clusters["east"]
	const wait = 20 * time.Second
	f := waitFetcher(t, src, out, fetchWaits{idle: wait}, 0)
	f.add(topology.TopicPartition{Topic: "quiet", Partition: 0}, 0, "")

	plain := kfaketest.IdempotentProducer(t, east, "")
	txp := kfaketest.IdempotentProducer(t, east, "quiet-writer")
	for i, viaTxn := range []bool{false, true, false, true} {
		// Each round that answered with a record is followed by one more
		// at once: record i is written while round i+1 waits.
		waitFor(t, 10*time.Second, "a fetch waiting at the source", func() error {
			if n := waits.count(); n < i+1 {
				return fmt.Errorf("%d fetch request(s)", n)
			}
			return nil
		})
		if w := waits.last().wait; w != wait {
			t.Fatalf("the waiting request may wait %v, want the settled fetcher's %v", w, wait)
		}
		sent := time.Now()
		msg := &sarama.ProducerMessage{Topic: "quiet", Partition: 0, Value: sarama.StringEncoder(fmt.Sprint("record ", i))}
		if viaTxn {
			if err := txp.BeginTxn(); err != nil {
				t.Fatal(err)
			}
			if _, _, err := txp.SendMessage(msg); err != nil {
				t.Fatal(err)
			}
			if err := txp.CommitTxn(); err != nil {
				t.Fatal(err)
			}
		} else if _, _, err := plain.SendMessage(msg); err != nil {
			t.Fatal(err)
		}
		m := receive(t, out, wait/4)
		if got := string(m.Value); got != fmt.Sprint("record ", i) {
			t.Fatalf("handed over %q, want record %d", got, i)
		}
		t.Logf("record %d (transactional %v) handed over %v after its send, with a fetch wait of %v", i, viaTxn, time.Since(sent).Round(time.Millisecond), wait)
	}
}

// TestFetchWaitsLongOnlyWhenSettled: a partition that is not in the round
// in flight joins only after that round answered, so the rounds wait long
// only once every partition is in them and none was added or removed for a
// while: a link that starts, or gains a topic, or whose partition recovers
// from an error, is not held back by FetchWait.
func TestFetchWaitsLongOnlyWhenSettled(t *testing.T) {
	p, src, waits, out := quietSource(t, 2)
	const wait, settle = time.Second, 1500 * time.Millisecond // settle > wait, as in production
	f := waitFetcher(t, src, out, fetchWaits{idle: wait}, settle)
	added := time.Now()
	f.add(topology.TopicPartition{Topic: "quiet", Partition: 0}, 0, "")
	waitFor(t, 10*time.Second, "a first round", func() error {
		if waits.count() == 0 {
			return errors.New("no fetch request")
		}
		return nil
	})
	if first := waits.last(); first.wait != unsettledWait {
		t.Fatalf("the round right after the partition was added may wait %v, want %v", first.wait, unsettledWait)
	}
	waitFor(t, 10*time.Second, "a settled round", func() error {
		if l := waits.last(); l.wait != wait {
			return fmt.Errorf("the last round may wait %v", l.wait)
		}
		return nil
	})
	if d := time.Since(added); d < settle {
		t.Fatalf("a round waited long %v after the partition was added, before the fetcher settled (%v)", d, settle)
	}

	// A partition added while a long round waits joins the next round,
	// which waits briefly, and its record is handed over without waiting
	// for the fetcher to settle again.
	n := waits.count()
	kfaketest.ProduceEach(t, p.Topology, "east", "quiet", 2, 1) // a record in each partition
	first := receive(t, out, 10*time.Second)
	if first.Partition != 0 {
		t.Fatalf("partition %d handed over first, want 0 (the only one fetched)", first.Partition)
	}
	joined := time.Now()
	f.add(topology.TopicPartition{Topic: "quiet", Partition: 1}, 0, "")
	second := receive(t, out, 10*time.Second)
	if second.Partition != 1 || time.Since(joined) > wait+time.Second {
		t.Fatalf("partition %d handed over %v after partition 1 was added, want partition 1 within one long wait (%v)", second.Partition, time.Since(joined), wait)
	}
	waits.mu.Lock()
	var sawJoin bool
	for _, r := range waits.reqs[n:] {
		if r.parts == 2 {
			sawJoin = true
			if r.wait != unsettledWait {
				t.Errorf("the first round with the added partition may wait %v, want %v", r.wait, unsettledWait)
			}
			break
		}
	}
	waits.mu.Unlock()
	if !sawJoin {
		t.Fatal("no round asked for both partitions")
	}
}

// TestFetchOverSeveralBrokersWaitsBriefly: a round is handed over once every
// source broker it asked has answered, so with partitions led by two brokers
// a record from one must not wait for the other's idle wait: such rounds
// keep the short wait, however settled the fetcher is.
func TestFetchOverSeveralBrokersWaitsBriefly(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{ClusterOpts: []kfake.Opt{kfake.NumBrokers(2)}})
	src := kfaketest.DialCluster(t, p.Topology.Clusters["east"])
	kfaketest.CreateTopicOn(t, src, "spread", 4, nil)
	// kfake picks each partition's leader at random; place them on both brokers.
	for part := range int32(4) {
		if err := p.East.MoveTopicPartition("spread", part, part%2); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.RefreshMetadata("spread"); err != nil {
		t.Fatal(err)
	}
	leaders := map[int32]bool{}
	for part := range int32(4) {
		b, err := src.Leader("spread", part)
		if err != nil {
			t.Fatal(err)
		}
		leaders[b.ID()] = true
	}
	if len(leaders) < 2 {
		t.Fatalf("the topic's 4 partitions are led by %d broker(s), want 2", len(leaders))
	}
	waits := watchFetchWaits(p.East)
	out := make(chan *sarama.ConsumerMessage, 16)
	const wait = 20 * time.Second
	f := waitFetcher(t, src, out, fetchWaits{idle: wait}, 0)
	for part := range int32(4) {
		f.add(topology.TopicPartition{Topic: "spread", Partition: part}, 0, "")
	}
	waitFor(t, 10*time.Second, "rounds to both brokers", func() error {
		if n := waits.count(); n < 2 {
			return fmt.Errorf("%d fetch request(s)", n)
		}
		return nil
	})
	sent := time.Now()
	kfaketest.ProduceEach(t, p.Topology, "east", "spread", 1, 1) // one record, into partition 0
	m := receive(t, out, wait/2)
	if m.Partition != 0 {
		t.Fatalf("a record of partition %d handed over, want 0", m.Partition)
	}
	if d := time.Since(sent); d > 5*time.Second {
		t.Errorf("the record was handed over %v after its send: it waited for the other broker's idle fetch", d)
	}
	if w := waits.last().wait; w != unsettledWait {
		t.Errorf("a round over two brokers may wait %v, want %v", w, unsettledWait)
	}
}

// TestAStreamingFetchGathers: while its partitions stream, a fetcher's
// request waits at the source up to its gather wait for a batch instead of
// being answered at its first record, so a steady trickle costs a request
// per gather wait rather than one per record or two, and no record waits
// much longer than that. A fetcher whose partitions were idle asks with no
// minimum (the first record after a pause is not held), and once the stream
// stops its requests go back to the long idle wait.
func TestAStreamingFetchGathers(t *testing.T) {
	p, src, seen, out := quietSource(t, 2)
	const idle, gatherWait = 20 * time.Second, 100 * time.Millisecond
	f := waitFetcher(t, src, out, fetchWaits{idle: idle, gather: gatherWait}, 0)
	for part := range int32(2) {
		f.add(topology.TopicPartition{Topic: "quiet", Partition: part}, 0, "")
	}
	settled := func() error {
		if l := seen.last(); l.wait != idle || l.minBytes != 1 {
			return fmt.Errorf("the last request may wait %v for %d byte(s)", l.wait, l.minBytes)
		}
		return nil
	}
	waitFor(t, 10*time.Second, "an idle request", settled)

	// A record every 5 ms for 2 s, alternating partitions.
	const records, every = 400, 5 * time.Millisecond
	prod := kfaketest.IdempotentProducer(t, p.Topology.Clusters["east"], "")
	sentAt := make([]atomic.Int64, records)
	first := seen.count()
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := range records {
			<-tick.C
			sentAt[i].Store(time.Now().UnixNano())
			msg := &sarama.ProducerMessage{Topic: "quiet", Partition: int32(i % 2), Value: sarama.StringEncoder(strconv.Itoa(i))}
			if _, _, err := prod.SendMessage(msg); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	next := [2]int{0, 1}
	var worst time.Duration
	for range records {
		m := receive(t, out, 10*time.Second)
		i, err := strconv.Atoi(string(m.Value))
		if err != nil || i != next[m.Partition] {
			t.Fatalf("partition %d handed over record %q, want %d", m.Partition, m.Value, next[m.Partition])
		}
		next[m.Partition] += 2
		worst = max(worst, time.Since(time.Unix(0, sentAt[i].Load())))
	}
	streamed := seen.count() - first
	var gathering int
	seen.mu.Lock()
	for _, r := range seen.reqs[first:] {
		if r.minBytes > 1 && r.wait == gatherWait {
			gathering++
		}
	}
	seen.mu.Unlock()
	t.Logf("%d records over %v in %d requests (%d gathering); the longest a record waited: %v",
		records, records*every, streamed, gathering, worst.Round(time.Millisecond))
	if limit := 2*int(records*every/gatherWait) + 10; streamed > limit {
		t.Errorf("%d fetch requests while %d records streamed over %v, want at most %d: the requests do not gather", streamed, records, records*every, limit)
	}
	if gathering == 0 {
		t.Error("no request gathered (a minimum of bytes and the gather wait) while the partitions streamed")
	}
	if worst > gatherWait+time.Second {
		t.Errorf("a record waited %v to be handed over, want about the gather wait (%v)", worst, gatherWait)
	}
	waitFor(t, 10*time.Second, "an idle request after the stream", settled)
}

// TestGatherNeverHoldsABacklog: a source counts a partition's bytes
// towards a request's minimum only up to the partition's share, so a
// minimum above a busy partition's share would keep a request whose
// partition has a backlog waiting for the whole gather wait, every round.
func TestGatherNeverHoldsABacklog(t *testing.T) {
	for _, c := range []struct {
		resp, active int32
		gather, wait time.Duration
		min, maxWait int32
	}{
		{resp: 8 << 20, active: 64 << 10, gather: 10 * time.Millisecond, wait: 500 * time.Millisecond, min: 64 << 10, maxWait: 10},
		{resp: 2 << 20, active: 2 << 20, gather: 10 * time.Millisecond, wait: 500 * time.Millisecond, min: 256 << 10, maxWait: 10},
		{resp: 2 << 20, active: 2 << 20, gather: 10 * time.Millisecond, wait: 5 * time.Millisecond, min: 256 << 10, maxWait: 5},
		{resp: 64 << 10, active: 8 << 10, gather: 500 * time.Microsecond, wait: time.Second, min: 8 << 10, maxWait: 1},
	} {
		minBytes, maxWait := gather(c.resp, c.active, c.gather, c.wait)
		if minBytes != c.min || maxWait != c.maxWait {
			t.Errorf("gather(%d, %d, %v, %v) = %d bytes within %d ms, want %d within %d", c.resp, c.active, c.gather, c.wait, minBytes, maxWait, c.min, c.maxWait)
		}
	}
}

// TestARoundIsHandedOverInTurns: the records of one fetch round are
// handed over each partition's in order, the partitions' in turns of about
// handTurn bytes, not one partition's after the other: a transaction sends
// them to the producer in that order, and a request of an idempotent
// producer (one in flight per broker) carries at most a batch's bound of
// each partition, so that handed over one partition after the other a
// request carried one partition's megabyte per round trip.
func TestARoundIsHandedOverInTurns(t *testing.T) {
	const perPartition = 600
	p := kfaketest.NewPair(t, kfaketest.Options{})
	east := p.Topology.Clusters["east"]
	src := kfaketest.DialCluster(t, east)
	kfaketest.CreateTopicOn(t, src, "wide", 2, nil)
	prod := kfaketest.IdempotentProducer(t, east, "")
	value := strings.Repeat("v", 1000)
	for i := range perPartition {
		for part := range int32(2) {
			if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "wide", Partition: part, Key: sarama.StringEncoder(fmt.Sprint(i)), Value: sarama.StringEncoder(value)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	out := make(chan *sarama.ConsumerMessage, 2*perPartition)
	var held atomic.Int64
	sink := fetchSink{out: out, buf: newBudget(1 << 30), held: &held,
		outOfRange: func(context.Context, topology.TopicPartition, int64) (int64, error) { return 0, errRefused },
		recreated:  func(topology.TopicPartition, string) {}, failed: func(topology.TopicPartition, error) {}}
	// Shares large enough for a round to carry both partitions whole.
	f, err := newFetcher(src, 4<<20, 8<<20, 8<<20, fetchWaits{idle: 50 * time.Millisecond}, sink, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	f.addAll([]fetchStart{{tp: topology.TopicPartition{Topic: "wide", Partition: 0}}, {tp: topology.TopicPartition{Topic: "wide", Partition: 1}}})
	f.start(t.Context())
	t.Cleanup(f.close)
	next := [2]int64{}
	turns := 0
	last := int32(-1)
	for range 2 * perPartition {
		m := receive(t, out, 30*time.Second)
		if m.Offset != next[m.Partition] {
			t.Fatalf("partition %d: offset %d handed over, want %d (out of order)", m.Partition, m.Offset, next[m.Partition])
		}
		next[m.Partition]++
		if m.Partition != last {
			last = m.Partition
			turns++
		}
	}
	// 600 KB a partition in 64 KiB turns: about 9 turns each (a round's
	// last turns, and a round's first after the last's, may follow each
	// other for one partition); one partition after the other: a couple
	// of turns per round.
	if want := 2 * (perPartition * 1000 / handTurn) * 3 / 4; turns < want {
		t.Errorf("the partitions took %d turns to hand over %d records each, want at least %d", turns, perPartition, want)
	}
}
