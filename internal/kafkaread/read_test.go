package kafkaread

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"
)

const topic = "t"

func newCluster(t *testing.T) (*kfake.Cluster, sarama.Client) {
	t.Helper()
	c, client := kfakeClient(t, kfake.NumBrokers(1))
	acfg := baseConfig()
	acfg.Metadata.Full = true // sarama's admin needs it to find the controller
	admin, err := sarama.NewClusterAdmin(c.ListenAddrs(), acfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	return c, client
}

// kfakeClient starts a kfake cluster with opts and a client of it, both
// closed when the test ends.
func kfakeClient(t *testing.T, opts ...kfake.Opt) (*kfake.Cluster, sarama.Client) {
	t.Helper()
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	client, err := sarama.NewClient(c.ListenAddrs(), baseConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return c, client
}

func baseConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Net.DialTimeout, cfg.Net.ReadTimeout, cfg.Net.WriteTimeout = 5*time.Second, 10*time.Second, 5*time.Second
	cfg.Metadata.Full = false
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	return cfg
}

func producer(t *testing.T, c *kfake.Cluster, txnID string) sarama.SyncProducer {
	t.Helper()
	cfg := baseConfig()
	if txnID != "" {
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Producer.Transaction.ID = txnID
	}
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

func send(t *testing.T, p sarama.SyncProducer, value string) int64 {
	t.Helper()
	_, off, err := p.SendMessage(&sarama.ProducerMessage{
		Topic: topic, Partition: 0, Key: sarama.StringEncoder("k"), Value: sarama.StringEncoder(value),
		Headers: []sarama.RecordHeader{{Key: []byte("h"), Value: []byte(value)}},
	})
	if err != nil {
		t.Fatalf("send %s: %v", value, err)
	}
	return off
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// readAll collects the values ReadCommitted delivers from offset from, and
// checks that each record carries its header and a plausible timestamp.
func readAll(t *testing.T, client sarama.Client, from int64) ([]string, []int64, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var values []string
	var offsets []int64
	next, err := ReadCommitted(ctx, client, topic, 0, from, func(r Record) error {
		if len(r.Headers) != 1 || string(r.Headers[0].Value) != string(r.Value) {
			t.Errorf("offset %d: headers %v do not carry the value %q", r.Offset, r.Headers, r.Value)
		}
		if time.Since(r.Timestamp) > time.Minute || time.Until(r.Timestamp) > time.Minute {
			t.Errorf("offset %d: timestamp %v is not the produce time", r.Offset, r.Timestamp)
		}
		values = append(values, string(r.Value))
		offsets = append(offsets, r.Offset)
		return nil
	})
	if err != nil {
		t.Fatalf("ReadCommitted from %d: %v", from, err)
	}
	return values, offsets, next
}

// TestReadCommittedSkipsAbortedAndControlRecords writes plain records,
// committed and aborted transactions (two of them interleaved batch by
// batch), and a transaction left open, then reads the partition with
// fetches large enough for everything and with fetches of one batch each
// (so aborted transactions straddle fetch boundaries).
func TestReadCommittedSkipsAbortedAndControlRecords(t *testing.T) {
	c, client := newCluster(t)
	plain := producer(t, c, "")
	a, b := producer(t, c, "a"), producer(t, c, "b")
	commit, abort := producer(t, c, "commit"), producer(t, c, "abort")
	open := producer(t, c, "open")

	send(t, plain, "plain-0")
	must(t, a.BeginTxn())
	send(t, a, "a-0")
	send(t, a, "a-1")
	must(t, a.CommitTxn())
	must(t, b.BeginTxn())
	send(t, b, "b-aborted-0")
	send(t, b, "b-aborted-1")
	must(t, b.AbortTxn())
	must(t, commit.BeginTxn())
	must(t, abort.BeginTxn())
	send(t, commit, "c-0")
	send(t, abort, "x-aborted-0")
	send(t, commit, "c-1")
	send(t, abort, "x-aborted-1")
	must(t, abort.AbortTxn())
	send(t, commit, "c-2")
	must(t, commit.CommitTxn())
	send(t, plain, "plain-1")
	must(t, open.BeginTxn())
	openAt := send(t, open, "open-0")
	send(t, plain, "plain-2") // past the last stable offset

	want := []string{"plain-0", "a-0", "a-1", "c-0", "c-1", "c-2", "plain-1"}
	for _, maxBytes := range []int32{fetchMaxBytes, 1} {
		t.Run(fmt.Sprintf("maxBytes=%d", maxBytes), func(t *testing.T) {
			defer func(old int32) { fetchMaxBytes = old }(fetchMaxBytes)
			fetchMaxBytes = maxBytes

			got, offsets, next := readAll(t, client, 0)
			if !slices.Equal(got, want) {
				t.Fatalf("read %v, want %v", got, want)
			}
			if !slices.IsSorted(offsets) {
				t.Errorf("offsets %v are not in order", offsets)
			}
			if next != openAt {
				t.Errorf("next = %d, want the open transaction's first offset %d", next, openAt)
			}
			lso, err := LastStableOffset(context.Background(), client, topic, 0)
			must(t, err)
			if lso != openAt {
				t.Errorf("LastStableOffset = %d, want %d", lso, openAt)
			}

			// From the middle: the record at offsets[4] ("c-1") sits
			// between aborted batches.
			got, _, _ = readAll(t, client, offsets[4])
			if !slices.Equal(got, want[4:]) {
				t.Errorf("read from offset %d: %v, want %v", offsets[4], got, want[4:])
			}
		})
	}

	// Once the open transaction commits, reading on from the returned
	// offset yields exactly what lay behind it.
	_, _, next := readAll(t, client, 0)
	must(t, open.CommitTxn())
	got, _, end := readAll(t, client, next)
	if want := []string{"open-0", "plain-2"}; !slices.Equal(got, want) {
		t.Errorf("after commit: read %v, want %v", got, want)
	}
	ends, err := PartitionEnds(context.Background(), client, topic, 0)
	must(t, err)
	if end != ends.High || ends.Stable != ends.High || ends.Start != 0 {
		t.Errorf("end = %d, ends = %+v; want end = stable = high", end, ends)
	}
	if got, _, again := readAll(t, client, end); len(got) != 0 || again != end {
		t.Errorf("read at the end: %v, next %d; want nothing and %d", got, again, end)
	}
}

func TestReadCommittedStopsOnCallbackError(t *testing.T) {
	c, client := newCluster(t)
	plain := producer(t, c, "")
	var offsets []int64
	for i := range 5 {
		offsets = append(offsets, send(t, plain, fmt.Sprint(i)))
	}
	stop := errors.New("stop")
	var seen int
	next, err := ReadCommitted(context.Background(), client, topic, 0, 0, func(r Record) error {
		if seen++; seen == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || next != offsets[2] {
		t.Fatalf("next, err = %d, %v; want %d and the callback's error", next, err, offsets[2])
	}
}

func TestReadCommittedMissingTopicIsNotCreated(t *testing.T) {
	_, client := newCluster(t)
	ctx := context.Background()
	_, err := ReadCommitted(ctx, client, "absent", 0, 0, func(Record) error { return nil })
	if !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		t.Fatalf("err = %v, want unknown topic", err)
	}
	info, err := Topic(ctx, client, "absent")
	must(t, err)
	if info.Exists {
		t.Fatal("reading created the topic")
	}
	info, err = Topic(ctx, client, topic)
	must(t, err)
	if !info.Exists || info.Partitions != 1 || len(info.Brokers) != 1 || info.Controller == "" || info.Leaders[0] < 0 {
		t.Fatalf("Topic(%s) = %+v", topic, info)
	}
}

func TestReadCommittedHonoursContext(t *testing.T) {
	c, client := newCluster(t)
	send(t, producer(t, c, ""), "x")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadCommitted(ctx, client, topic, 0, 0, func(Record) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestCommittedRecordsTable feeds hand-built fetch blocks to the decoding
// step, covering what a broker may legitimately send that the kfake test
// cannot force: a batch before the fetch offset, an aborted transaction
// listed out of order, a producer whose later transaction commits after an
// aborted one, a batch past the end, and a partial first batch.
func TestCommittedRecordsTable(t *testing.T) {
	data := func(first int64, pid int64, txn bool, values ...string) *sarama.Records {
		b := &sarama.RecordBatch{FirstOffset: first, ProducerID: pid, IsTransactional: txn, LastOffsetDelta: int32(len(values) - 1)}
		for i, v := range values {
			b.Records = append(b.Records, &sarama.Record{OffsetDelta: int64(i), Value: []byte(v)})
		}
		return &sarama.Records{RecordBatch: b}
	}
	marker := func(at int64, pid int64, commit bool) *sarama.Records {
		typ := byte(0)
		if commit {
			typ = 1
		}
		return &sarama.Records{RecordBatch: &sarama.RecordBatch{FirstOffset: at, ProducerID: pid, IsTransactional: true, Control: true,
			Records: []*sarama.Record{{Key: []byte{0, 0, 0, typ}}}}}
	}
	partial := &sarama.Records{RecordBatch: &sarama.RecordBatch{FirstOffset: 0, PartialTrailingRecord: true}}
	tests := []struct {
		name        string
		sets        []*sarama.Records
		aborted     []*sarama.AbortedTransaction
		next, end   int64
		want        []string
		wantMoved   int64
		wantPartial bool
	}{
		{
			name: "plain records from mid-batch",
			sets: []*sarama.Records{data(0, -1, false, "a", "b", "c"), data(3, -1, false, "d")},
			next: 1, end: 10, want: []string{"b", "c", "d"}, wantMoved: 4,
		},
		{
			name: "aborted then committed transaction of one producer",
			sets: []*sarama.Records{
				data(0, 7, true, "x1", "x2"), marker(2, 7, false),
				data(3, 7, true, "y1"), marker(4, 7, true),
			},
			aborted: []*sarama.AbortedTransaction{{ProducerID: 7, FirstOffset: 0}},
			next:    0, end: 10, want: []string{"y1"}, wantMoved: 5,
		},
		{
			name: "interleaved producers, abort list out of order",
			sets: []*sarama.Records{
				data(0, 1, true, "p1"), data(1, 2, true, "q1"), data(2, 3, true, "r1"),
				marker(3, 2, false), marker(4, 1, true), marker(5, 3, false),
			},
			aborted: []*sarama.AbortedTransaction{{ProducerID: 3, FirstOffset: 2}, {ProducerID: 2, FirstOffset: 1}},
			next:    0, end: 10, want: []string{"p1"}, wantMoved: 6,
		},
		{
			name:    "non-transactional batch of a producer id with an aborted transaction",
			sets:    []*sarama.Records{data(0, 4, true, "t"), data(1, 4, false, "plain"), marker(2, 4, false)},
			aborted: []*sarama.AbortedTransaction{{ProducerID: 4, FirstOffset: 0}},
			next:    0, end: 10, want: []string{"plain"}, wantMoved: 3,
		},
		{
			name: "batches at or past the end are left for later",
			sets: []*sarama.Records{data(0, -1, false, "a"), data(1, -1, false, "b")},
			next: 0, end: 1, want: []string{"a"}, wantMoved: 1,
		},
		{
			name: "partial first batch asks for more",
			sets: []*sarama.Records{partial},
			next: 0, end: 10, wantMoved: 0, wantPartial: true,
		},
		{
			name: "empty batch left by compaction moves on",
			sets: []*sarama.Records{{RecordBatch: &sarama.RecordBatch{FirstOffset: 0, LastOffsetDelta: 4}}, data(5, -1, false, "e")},
			next: 0, end: 10, want: []string{"e"}, wantMoved: 6,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			block := &sarama.FetchResponseBlock{RecordsSet: tt.sets, AbortedTransactions: tt.aborted}
			var got []string
			moved, partial, err := CommittedRecords(block, tt.next, tt.end, func(r Record) error {
				got = append(got, string(r.Value))
				return nil
			})
			must(t, err)
			if !slices.Equal(got, tt.want) || moved != tt.wantMoved || partial != tt.wantPartial {
				t.Errorf("got %v, moved %d, partial %v; want %v, %d, %v", got, moved, partial, tt.want, tt.wantMoved, tt.wantPartial)
			}
		})
	}
}

// TestTopicIDsTellIncarnationsApart: a topic deleted and created again under
// its name has a new id; a missing topic is left out and never created.
func TestTopicIDsTellIncarnationsApart(t *testing.T) {
	c, client := newCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	first, err := TopicIDs(ctx, client, []string{topic, "missing"})
	if err != nil {
		t.Fatal(err)
	}
	if len(first[topic]) != 32 {
		t.Fatalf("id of %s = %q, want 32 hex digits", topic, first[topic])
	}
	if _, ok := first["missing"]; ok {
		t.Errorf("a missing topic has an id: %v", first)
	}
	acfg := baseConfig()
	acfg.Metadata.Full = true
	admin, err := sarama.NewClusterAdmin(c.ListenAddrs(), acfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.DeleteTopic(topic); err != nil {
		t.Fatal(err)
	}
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	again, err := TopicIDs(ctx, client, []string{topic})
	if err != nil {
		t.Fatal(err)
	}
	if again[topic] == "" || again[topic] == first[topic] {
		t.Errorf("id after the re-creation = %q, before %q: want a new one", again[topic], first[topic])
	}
	if info, err := Topic(ctx, client, "missing"); err != nil || info.Exists {
		t.Errorf("the missing topic was created (exists %v, %v)", info.Exists, err)
	}
}
