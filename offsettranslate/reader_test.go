package offsettranslate

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// headerSource is the provenance header the simulated mirror puts on every
// record; unlike the mirror's (8 bytes big-endian) its value is the source
// offset in decimal.
const headerSource = topology.HeaderSourceOffset

func testConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Net.DialTimeout, cfg.Net.ReadTimeout, cfg.Net.WriteTimeout = 5*time.Second, 10*time.Second, 5*time.Second
	cfg.Metadata.AllowAutoTopicCreation = false
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	cfg.Consumer.MaxWaitTime = 50 * time.Millisecond
	return cfg
}

// target starts a kfake pair and returns its standby ("west") with a
// client, topics created as asked (name → partitions).
func target(t *testing.T, topics map[string]int32) (*kfake.Cluster, sarama.Client) {
	t.Helper()
	west := kfaketest.NewPair(t, kfaketest.Options{}).West
	acfg := testConfig()
	acfg.Metadata.Full = true // sarama's admin finds the controller this way
	admin, err := sarama.NewClusterAdmin(west.ListenAddrs(), acfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for name, n := range topics {
		if err := admin.CreateTopic(name, &sarama.TopicDetail{NumPartitions: n, ReplicationFactor: 1}, false); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	client, err := sarama.NewClient(west.ListenAddrs(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return west, client
}

// txnProducer is a transactional producer as the mirror configures it.
// Cleanup aborts an open transaction: Close alone does not.
func txnProducer(t *testing.T, c *kfake.Cluster, id string) sarama.SyncProducer {
	t.Helper()
	cfg := testConfig()
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Transaction.ID = id
	p, err := sarama.NewSyncProducer(c.ListenAddrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.TxnStatus()&sarama.ProducerTxnFlagInTransaction != 0 {
			_ = p.AbortTxn()
		}
		_ = p.Close()
	})
	return p
}

// sourceLog is a simulated source partition: which offsets hold a record a
// read_committed consumer sees. The others are holes: transaction markers,
// records of aborted transactions, records removed by compaction.
type sourceLog struct {
	end     int64 // the high-water mark
	records map[int64]bool
	// Retention removed [lostFrom, lostTo) while the mirror was still
	// before lostFrom, and the mirror began reading at start.
	start, lostFrom, lostTo int64
}

func newSourceLog(r *rand.Rand, end int64) sourceLog {
	s := sourceLog{end: end, records: map[int64]bool{}}
	for off := int64(0); off < end; off++ {
		switch n := r.IntN(100); {
		case n < 8:
			off += 2 + r.Int64N(10) // an aborted transaction and its marker
		case n < 75:
			s.records[off] = true
		}
	}
	s.start = r.Int64N(end / 10)
	s.lostFrom = end/2 + r.Int64N(end/4)
	s.lostTo = s.lostFrom + 1 + r.Int64N(end/8)
	return s
}

// shard simulates one mirror shard copying one source partition to the
// same partition of the target topic, and writing its offset map batch to
// the offsets topic in the same transaction.
type shard struct {
	id        int32
	dataTopic string
	mapTopic  string
	mapPart   int32
	partition int32
	src       sourceLog
	prod      sarama.SyncProducer

	readPos int64
	// What committed: every copied record, and the last SourceNext.
	committed  []Pair
	sourceNext int64

	pending []Pair // the open transaction's records
	next    int64  // the open transaction's SourceNext

	stats map[string]int // what the simulation went through
}

func (s *shard) done() bool { return s.readPos >= s.src.end }

// begin opens a transaction copying the next few source offsets.
func (s *shard) begin(t *testing.T, r *rand.Rand) {
	t.Helper()
	if s.readPos == s.src.lostFrom {
		s.readPos = s.src.lostTo // the mirror finds the log start moved
		s.stats["retention jumps"]++
	}
	end := min(s.readPos+1+r.Int64N(1+r.Int64N(15)), s.src.end)
	if s.readPos < s.src.lostFrom {
		end = min(end, s.src.lostFrom)
	}
	if err := s.prod.BeginTxn(); err != nil {
		t.Fatalf("shard %d: begin: %v", s.id, err)
	}
	var msgs []*sarama.ProducerMessage
	for off := s.readPos; off < end; off++ {
		if !s.src.records[off] {
			continue
		}
		v := strconv.FormatInt(off, 10)
		msgs = append(msgs, &sarama.ProducerMessage{
			Topic: s.dataTopic, Partition: s.partition, Value: sarama.StringEncoder("record " + v),
			Headers:  []sarama.RecordHeader{{Key: []byte(headerSource), Value: []byte(v)}},
			Metadata: off,
		})
	}
	s.pending, s.next = nil, end
	if len(msgs) > 0 {
		if err := s.prod.SendMessages(msgs); err != nil {
			t.Fatalf("shard %d: send: %v", s.id, err)
		}
		for _, m := range msgs {
			s.pending = append(s.pending, Pair{Source: m.Metadata.(int64), Target: m.Offset})
		}
	}
	b := Batch{Shard: s.id, CommittedAtMs: time.Now().UnixMilli(), Entries: []Entry{
		{Topic: s.dataTopic, Partition: s.partition, Runs: RunsFrom(s.pending), SourceNext: end},
	}}
	switch runs := len(b.Entries[0].Runs); {
	case runs == 0:
		s.stats["entries without runs"]++
	case runs > 1:
		s.stats["entries with several runs"]++
	}
	_, _, err := s.prod.SendMessage(&sarama.ProducerMessage{
		Topic: s.mapTopic, Partition: s.mapPart, Key: sarama.ByteEncoder(ShardKey(s.id)), Value: sarama.ByteEncoder(EncodeBatch(b)),
	})
	if err != nil {
		t.Fatalf("shard %d: send map batch: %v", s.id, err)
	}
}

// finish commits or aborts the open transaction. An aborted one is retried
// from the same read position, as a restarted mirror would.
func (s *shard) finish(t *testing.T, commit bool) {
	t.Helper()
	if !commit {
		if err := s.prod.AbortTxn(); err != nil {
			t.Fatalf("shard %d: abort: %v", s.id, err)
		}
		return
	}
	if err := s.prod.CommitTxn(); err != nil {
		t.Fatalf("shard %d: commit: %v", s.id, err)
	}
	s.committed = append(s.committed, s.pending...)
	s.readPos, s.sourceNext = s.next, s.next
}

// expected translates pos by a linear scan of the committed records.
func expected(pairs []Pair, sourceNext, pos int64) Result {
	switch {
	case len(pairs) == 0:
		return Result{Source: sourceNext, Target: -1, Status: Unmapped}
	case pos < pairs[0].Source:
		return Result{pairs[0].Source, pairs[0].Target, BeforeStart}
	}
	for _, p := range pairs {
		if p.Source >= pos {
			return Result{p.Source, p.Target, Exact}
		}
	}
	return Result{sourceNext, pairs[len(pairs)-1].Target + 1, ClampedToEnd}
}

// TestLoadAndFollowerAreExact simulates the mirror on a kfake target: three
// shards, each copying one source partition with holes (markers, aborted and
// compacted records, a head lost to retention, a late start) in
// transactions that also write the offset map batch; a quarter of the
// transactions abort, two shards share a partition of the offsets topic
// with interleaved transactions, and one transaction is left open. Load and
// a Follower must then translate every source position to the target
// offset of the first committed mirrored record at or after it, and a
// read_committed consumer there must read exactly that record first.
func TestLoadAndFollowerAreExact(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { testLoadAndFollowerAreExact(t, seed) })
	}
}

func testLoadAndFollowerAreExact(t *testing.T, seed uint64) {
	const dataTopic, shards = "orders", 3
	mapTopic := topology.Link{Topology: "test", Source: "east", Target: "west"}.OffsetsTopic()
	west, client := target(t, map[string]int32{dataTopic: shards, mapTopic: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	r := rand.New(rand.NewPCG(seed, 8))
	var all []*shard
	for i := range int32(shards) {
		s := &shard{id: i, dataTopic: dataTopic, mapTopic: mapTopic, mapPart: i % 2, partition: i,
			src: newSourceLog(r, 250), stats: map[string]int{}, prod: txnProducer(t, west, fmt.Sprintf("drctl.test.east-west.%d", i))}
		if i == 0 {
			s.src.start = 0 // the others start late
		}
		s.readPos = s.src.start
		all = append(all, s)
	}
	follower := NewFollower(mapTopic)
	check := func(what string, x *Index) {
		t.Helper()
		for _, s := range all {
			for pos := int64(0); pos <= s.src.end+2; pos++ {
				if got, want := x.Translate(dataTopic, s.partition, pos), expected(s.committed, s.sourceNext, pos); got != want {
					t.Fatalf("%s: Translate(%s/%d, %d) = %+v, want %+v", what, dataTopic, s.partition, pos, got, want)
				}
			}
		}
		for _, st := range x.Partitions() {
			if st.Err != nil {
				t.Errorf("%s: %s/%d: %v", what, st.Topic, st.Partition, st.Err)
			}
		}
	}

	aborted, committed := 0, 0
	round := func() bool {
		// Open a transaction on every shard that is not done, then finish
		// them in random order: shards 0 and 2 interleave in partition 0
		// of the offsets topic.
		var open []*shard
		for _, s := range all {
			if !s.done() {
				s.begin(t, r)
				open = append(open, s)
			}
		}
		r.Shuffle(len(open), func(i, j int) { open[i], open[j] = open[j], open[i] })
		for _, s := range open {
			commit := r.IntN(4) != 0
			s.finish(t, commit)
			if commit {
				committed++
			} else {
				aborted++
			}
		}
		return len(open) > 0
	}

	start := time.Now()
	for range 12 {
		round()
	}
	if err := follower.Poll(ctx, client); err != nil {
		t.Fatalf("first Poll: %v", err)
	}
	check("follower after the first rounds", follower.Index())
	for round() {
	}
	// A transaction left open: its records and batch hold back the last
	// stable offsets, and must not count.
	open := all[0]
	open.src.records[open.src.end] = true
	open.src.end++
	open.begin(t, r)
	if len(open.pending) != 1 {
		t.Fatalf("the open transaction copied %v", open.pending)
	}
	t.Logf("simulated %d committed and %d aborted transactions in %v", committed, aborted, time.Since(start).Round(time.Millisecond))
	for _, s := range all {
		t.Logf("shard %d: %v", s.id, s.stats)
		if s.stats["retention jumps"] != 1 || s.stats["entries without runs"] == 0 || s.stats["entries with several runs"] == 0 {
			t.Errorf("shard %d did not go through every case: %v", s.id, s.stats)
		}
	}

	// Translating while a Poll runs is safe (go test -race checks it).
	stop := make(chan struct{})
	translated := make(chan int)
	go func() {
		n := 0
		defer func() { translated <- n }()
		for {
			select {
			case <-stop:
				return
			default:
				follower.Index().Translate(dataTopic, int32(n%shards), int64(n%300))
				_ = follower.Index().Partitions()
				n++
			}
		}
	}()
	start = time.Now()
	err := follower.Poll(ctx, client)
	close(stop)
	<-translated
	if err != nil {
		t.Fatalf("second Poll: %v", err)
	}
	check("follower after all rounds", follower.Index())
	pollTime := time.Since(start)
	start = time.Now()
	x, err := Load(ctx, client, mapTopic)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	t.Logf("Poll took %v, Load %v", pollTime.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	check("Load", x)
	if err := follower.Poll(ctx, client); err != nil {
		t.Fatalf("Poll with nothing new: %v", err)
	}
	check("follower after an empty poll", follower.Index())

	for i, st := range x.Partitions() {
		s := all[i]
		if st.Partition != s.partition || st.SourceNext != s.sourceNext || st.TargetEnd != s.committed[len(s.committed)-1].Target+1 {
			t.Errorf("partition state %+v; want SourceNext %d and TargetEnd after %d", st, s.sourceNext, s.committed[len(s.committed)-1].Target)
		}
	}

	// What a consumer reads at the translated position: franz-go's
	// consumer, a client independent of the reader under test.
	seen := map[Status]int{}
	for range 80 {
		s := all[r.IntN(len(all))]
		pos := r.Int64N(s.sourceNext + 3)
		if r.IntN(4) == 0 { // near the end, to see ClampedToEnd
			pos = s.committed[len(s.committed)-1].Source + r.Int64N(s.sourceNext-s.committed[len(s.committed)-1].Source+3)
		}
		res := x.Translate(dataTopic, s.partition, pos)
		want := expected(s.committed, s.sourceNext, pos)
		seen[res.Status]++
		if res.Status == ClampedToEnd {
			// Nothing committed lies between the mirrored end and the
			// last stable offset.
			var extra []int64
			if _, err := kafkaread.ReadCommitted(ctx, client, dataTopic, s.partition, res.Target, func(rec kafkaread.Record) error {
				extra = append(extra, rec.Offset)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(extra) > 0 {
				t.Errorf("partition %d, source position %d: committed records %v after the mirrored end %d", s.partition, pos, extra, res.Target)
			}
			continue
		}
		first := firstRecord(ctx, t, west, dataTopic, s.partition, res.Target)
		got := ""
		for _, h := range first.Headers {
			if h.Key == headerSource {
				got = string(h.Value)
			}
		}
		if got != strconv.FormatInt(want.Source, 10) || first.Offset != res.Target {
			t.Errorf("partition %d, source position %d (%v): consumer at target %d read offset %d from source %s, want source %d",
				s.partition, pos, res.Status, res.Target, first.Offset, got, want.Source)
		}
	}
	t.Logf("checked with a consumer: %v", seen)
	if seen[Exact] < 30 || seen[ClampedToEnd] == 0 || seen[BeforeStart] == 0 {
		t.Errorf("consumer checks cover too little: %v", seen)
	}
}

func TestLoadMissingTopic(t *testing.T) {
	_, client := target(t, nil)
	x, err := Load(context.Background(), client, "_drctl.test.east-west.offsets")
	if !errors.Is(err, sarama.ErrUnknownTopicOrPartition) || x != nil {
		t.Fatalf("Load = %v, %v; want ErrUnknownTopicOrPartition", x, err)
	}
	info, err := kafkaread.Topic(context.Background(), client, "_drctl.test.east-west.offsets")
	if err != nil || info.Exists {
		t.Fatalf("the topic was created (%+v, %v)", info, err)
	}
}

func TestLoadRefusesUndecodableRecords(t *testing.T) {
	const mapTopic, otherTopic = "_drctl.t.a-b.offsets", "_drctl.t.c-d.offsets"
	west, client := target(t, map[string]int32{mapTopic: 1, otherTopic: 1})
	p := txnProducer(t, west, "writer")
	sendTo := func(topic string, value []byte) {
		t.Helper()
		if err := p.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.ByteEncoder(value)}); err != nil {
			t.Fatal(err)
		}
		if err := p.CommitTxn(); err != nil {
			t.Fatal(err)
		}
	}
	send := func(value []byte) { t.Helper(); sendTo(mapTopic, value) }
	ctx := context.Background()

	sendTo(otherTopic, EncodeBatch(Batch{Entries: []Entry{{Topic: "orders", SourceNext: 5}}}))
	sendTo(otherTopic, []byte{formatVersion, 0, 0, 1, 0, 0})
	_, err := Load(ctx, client, otherTopic)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), otherTopic+"/0") || !strings.Contains(err.Error(), "offset 2") {
		t.Errorf("Load over a corrupt batch: %v, want ErrCorrupt naming %s/0 and offset 2", err, otherTopic)
	}

	send(EncodeBatch(Batch{Entries: []Entry{{Topic: "orders", Runs: []Run{{0, 0, 5}}, SourceNext: 5}}}))
	f := NewFollower(mapTopic)
	if err := f.Poll(ctx, client); err != nil {
		t.Fatal(err)
	}

	send([]byte{2, 0, 0, 0})
	if _, err := Load(ctx, client, mapTopic); !errors.Is(err, ErrUnsupportedVersion) {
		t.Errorf("Load over a newer version's batch: %v, want ErrUnsupportedVersion", err)
	}
	if err := f.Poll(ctx, client); !errors.Is(err, ErrUnsupportedVersion) {
		t.Errorf("Poll over a newer version's batch: %v, want ErrUnsupportedVersion", err)
	}
	if got := f.Index().Translate("orders", 0, 3); got != (Result{3, 3, Exact}) {
		t.Errorf("a failed Poll changed the index: %+v", got)
	}
}

func TestLoadReportsInconsistentPartitions(t *testing.T) {
	const mapTopic = "_drctl.t.a-b.offsets"
	west, client := target(t, map[string]int32{mapTopic: 1})
	p := txnProducer(t, west, "writer")
	if err := p.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	for _, b := range []Batch{
		{Entries: []Entry{{Topic: "orders", Runs: []Run{{0, 0, 5}}, SourceNext: 5}, {Topic: "orders", Partition: 1, Runs: []Run{{0, 0, 5}}, SourceNext: 5}}},
		{Entries: []Entry{{Topic: "orders", Runs: []Run{{3, 7, 5}}, SourceNext: 8}}}, // copies 3 and 4 again
	} {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: mapTopic, Value: sarama.ByteEncoder(EncodeBatch(b))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.CommitTxn(); err != nil {
		t.Fatal(err)
	}
	x, err := Load(context.Background(), client, mapTopic)
	if !errors.Is(err, ErrInconsistent) || x == nil {
		t.Fatalf("Load = %v, %v; want an index and ErrInconsistent", x, err)
	}
	if got := x.Translate("orders", 0, 1); got.Status != Unmapped {
		t.Errorf("inconsistent partition translated: %+v", got)
	}
	if got := x.Translate("orders", 1, 1); got != (Result{1, 1, Exact}) {
		t.Errorf("sound partition: %+v", got)
	}
}

func TestFollowerDetectsTruncation(t *testing.T) {
	const mapTopic = "_drctl.t.a-b.offsets"
	west, client := target(t, map[string]int32{mapTopic: 1})
	p := txnProducer(t, west, "writer")
	ctx := context.Background()
	next := int64(0)
	send := func() {
		t.Helper()
		if err := p.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		b := Batch{Entries: []Entry{{Topic: "orders", Runs: []Run{{next, next, 1}}, SourceNext: next + 1}}}
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: mapTopic, Value: sarama.ByteEncoder(EncodeBatch(b))}); err != nil {
			t.Fatal(err)
		}
		if err := p.CommitTxn(); err != nil {
			t.Fatal(err)
		}
		next++
	}
	send()
	f := NewFollower(mapTopic)
	if err := f.Poll(ctx, client); err != nil {
		t.Fatal(err)
	}
	send()
	send()
	acfg := testConfig()
	acfg.Metadata.Full = true
	admin, err := sarama.NewClusterAdmin(west.ListenAddrs(), acfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ends, err := kafkaread.PartitionEnds(ctx, client, mapTopic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.DeleteRecords(mapTopic, map[int32]int64{0: ends.High - 2}); err != nil {
		t.Fatal(err)
	}
	if err := f.Poll(ctx, client); !errors.Is(err, ErrTruncated) {
		t.Fatalf("Poll after the log start passed it: %v, want ErrTruncated", err)
	}
	// A fresh Load starts at the log start: what was deleted is before
	// the map's start.
	x, err := Load(ctx, client, mapTopic)
	if err != nil {
		t.Fatal(err)
	}
	if got := x.Translate("orders", 0, 0); got.Status != BeforeStart {
		t.Errorf("Translate(0) after the head of the map was deleted = %+v, want BeforeStart", got)
	}
}

// firstRecord returns the first record a read_committed franz-go consumer
// starting at offset reads from the partition, failing the test when none
// arrives within five seconds. Only ask where a committed record exists.
func firstRecord(ctx context.Context, t *testing.T, c *kfake.Cluster, topic string, partition int32, offset int64) *kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(50*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(offset)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%s/%d: nothing to read at %d: %v", topic, partition, offset, err)
		}
		for _, fe := range fetches.Errors() {
			t.Fatalf("%s/%d: fetch at %d: %v", topic, partition, offset, fe.Err)
		}
		if recs := fetches.Records(); len(recs) > 0 {
			return recs[0]
		}
	}
}
