package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/mirror/groupsync"
	"github.com/drctl/drctl/topology"
)

// runEngine runs an east -> west engine until the test ends.
func runEngine(t *testing.T, topo *topology.Topology, opts Options) *Engine {
	t.Helper()
	if opts.Epoch == 0 {
		opts.Epoch = -1
	}
	if opts.TopicSyncInterval == 0 {
		opts.TopicSyncInterval = 200 * time.Millisecond
	}
	if opts.IdleCheck == 0 {
		opts.IdleCheck = 100 * time.Millisecond
	}
	e, err := NewEngine(topo, "east", "west", opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("engine: %v", err)
		}
	})
	return e
}

// sendN writes n records tagged tag to partition 0 of topic.
func sendN(t *testing.T, prod sarama.SyncProducer, topic string, n int, tag string) {
	t.Helper()
	for i := range n {
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprint(i)), Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", tag, i))}); err != nil {
			t.Fatalf("send to %s: %v", topic, err)
		}
	}
}

// waitCopied waits until west's topic/0 holds exactly the committed records
// of east's, record by record.
func waitCopied(t *testing.T, src, dst sarama.Client, topic, origin string) {
	t.Helper()
	waitFor(t, 30*time.Second, topic+" copied record by record", func() error {
		s, err := readAll(src, topic, 0)
		if err != nil {
			return err
		}
		d, err := readAll(dst, topic, 0)
		if err != nil {
			return err
		}
		return sameRecords(s, d, origin)
	})
}

func deleteTopic(t *testing.T, cl sarama.Client, name string) {
	t.Helper()
	admin, err := sarama.NewClusterAdminFromClient(cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.DeleteTopic(name); err != nil {
		t.Fatalf("delete %s: %v", name, err)
	}
	waitFor(t, 10*time.Second, name+" gone", func() error {
		if err := cl.RefreshMetadata(); err != nil {
			return err
		}
		ts, _ := cl.Topics()
		if slices.Contains(ts, name) {
			return fmt.Errorf("%s still listed", name)
		}
		return nil
	})
}

// TestTopicDeletedOnActiveKeepsCopy (#8 case 6b): deleting a mirrored topic
// on the active neither crashes the mirror nor stops the other topics of its
// shard, and the standby keeps its copy, reported as such.
func TestTopicDeletedOnActiveKeepsCopy(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"orders\", \"other\"]}"})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, "orders", 1, nil)
	kfaketest.CreateTopicOn(t, src, "other", 1, nil)
	prod := kfaketest.IdempotentProducer(t, east, "")
	sendN(t, prod, "orders", 20, "a")
	sendN(t, prod, "other", 20, "a")
	e := runEngine(t, p.Topology, Options{Shards: 1})
	waitCopied(t, src, dst, "orders", "kfake-east")
	waitCopied(t, src, dst, "other", "kfake-east")

	deleteTopic(t, src, "orders")
	waitFor(t, 10*time.Second, "the deletion reported", func() error {
		if tr := e.Troubles()["orders"]; !strings.Contains(tr, "deleted on east") {
			return fmt.Errorf("troubles %v", e.Troubles())
		}
		return nil
	})
	sendN(t, prod, "other", 20, "b")
	waitCopied(t, src, dst, "other", "kfake-east")
	if d := kfaketest.Records(t, dst, "orders", 0, 0); len(d) != 20 {
		t.Errorf("west's copy of orders holds %d records, want the 20 mirrored before the delete", len(d))
	}
	if v := testutil.ToFloat64(e.metrics.Safety.TopicChanges.WithLabelValues("east->west", "orders", linkstate.TopicDeleted)); v != 1 {
		t.Errorf("drctl_mirror_topic_changed{orders,deleted} = %v, want 1", v)
	}
	lag := measureLag(t, p.Topology)
	if len(lag.TopicChanges) != 1 || lag.TopicChanges[0].Topic != "orders" || lag.TopicChanges[0].Kind != linkstate.TopicDeleted {
		t.Errorf("lag report topic changes = %+v, want orders deleted", lag.TopicChanges)
	}
	ls := linkstate.Describe(context.Background(), kfaketest.Session(t, p.Topology), p.Topology.Link("east", "west"))
	if probs := strings.Join(ls.Problems(), "\n"); !strings.Contains(probs, "topic orders deleted on east: the copy on west is kept") {
		t.Errorf("link problems for status = %q", probs)
	}
}

func measureLag(t *testing.T, topo *topology.Topology) *linkstate.LagReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rep, err := linkstate.MeasureLag(ctx, kfaketest.Session(t, topo), topo.Link("east", "west"))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func alterTopic(t *testing.T, cl sarama.Client, topic string, configs map[string]string) {
	t.Helper()
	admin, err := sarama.NewClusterAdminFromClient(cl)
	if err != nil {
		t.Fatal(err)
	}
	entries := map[string]sarama.IncrementalAlterConfigsEntry{}
	for k, v := range configs {
		entries[k] = sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v}
	}
	if err := admin.IncrementalAlterConfig(sarama.TopicResource, topic, entries, false); err != nil {
		t.Fatalf("alter %s: %v", topic, err)
	}
}

func topicConfig(t *testing.T, cl sarama.Client, topic, key string) string {
	t.Helper()
	admin, err := sarama.NewClusterAdminFromClient(cl)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name == key {
			return e.Value
		}
	}
	return ""
}

// TestCleanupPolicyChangeOnActive (#8 case 6a): turning a mirrored topic
// from delete to compact on the active neither crashes the mirror nor
// stops its shard; the standby topic drctl created follows the new policy
// and keeps copying. A topic drctl did not create is reported and skipped.
func TestCleanupPolicyChangeOnActive(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"orders\", \"other\", \"foreign\"]}"})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, "orders", 1, map[string]string{"cleanup.policy": "delete"})
	kfaketest.CreateTopicOn(t, src, "other", 1, nil)
	kfaketest.CreateTopicOn(t, src, "foreign", 1, nil)
	kfaketest.CreateTopicOn(t, dst, "foreign", 1, map[string]string{"cleanup.policy": "compact"}) // not drctl's
	prod := kfaketest.IdempotentProducer(t, east, "")
	sendN(t, prod, "orders", 20, "a")
	sendN(t, prod, "other", 20, "a")
	sendN(t, prod, "foreign", 5, "a")
	e := runEngine(t, p.Topology, Options{Shards: 1})
	waitCopied(t, src, dst, "orders", "kfake-east")
	waitCopied(t, src, dst, "other", "kfake-east")
	if tr := e.Troubles()["foreign"]; !strings.Contains(tr, "cleanup.policy") {
		t.Errorf("troubles of foreign = %q, want a cleanup.policy conflict", tr)
	}

	alterTopic(t, src, "orders", map[string]string{"cleanup.policy": "compact"})
	waitFor(t, 20*time.Second, "west's orders compacted", func() error {
		if v := topicConfig(t, dst, "orders", "cleanup.policy"); v != "compact" {
			return fmt.Errorf("cleanup.policy %q on west", v)
		}
		return nil
	})
	sendN(t, prod, "orders", 20, "b")
	sendN(t, prod, "other", 20, "b")
	waitCopied(t, src, dst, "orders", "kfake-east")
	waitCopied(t, src, dst, "other", "kfake-east")
	if tr, ok := e.Troubles()["orders"]; ok {
		t.Errorf("orders still reported: %q", tr)
	}
	if d := kfaketest.Records(t, dst, "foreign", 0, 0); len(d) != 0 {
		t.Errorf("foreign (not drctl's) got %d records", len(d))
	}
}

// TestTopicRecreatedOnActive (#8 case 6c): a mirrored topic deleted and
// created again on the active (a new topic id) is detected and reported;
// its old copy is kept and nothing of the new incarnation is mixed into it;
// the other topics go on; ReseedTopic salvages the old copy and mirrors the
// new incarnation from its start.
func TestTopicRecreatedOnActive(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"orders\", \"other\"]}"})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, "orders", 1, nil)
	kfaketest.CreateTopicOn(t, src, "other", 1, nil)
	prod := kfaketest.IdempotentProducer(t, east, "")
	sendN(t, prod, "orders", 20, "old")
	sendN(t, prod, "other", 20, "a")
	e := runEngine(t, p.Topology, Options{Shards: 1})
	waitCopied(t, src, dst, "orders", "kfake-east")
	oldCopy := kfaketest.Records(t, dst, "orders", 0, 0)

	deleteTopic(t, src, "orders")
	kfaketest.CreateTopicOn(t, src, "orders", 1, nil)
	sendN(t, kfaketest.IdempotentProducer(t, east, ""), "orders", 30, "new") // a new producer: the old one's sequence belongs to the old topic
	waitFor(t, 20*time.Second, "the recreation reported", func() error {
		if tr := e.Troubles()["orders"]; !strings.Contains(tr, "recreated on east") {
			return fmt.Errorf("troubles %v", e.Troubles())
		}
		return nil
	})
	sendN(t, prod, "other", 20, "b")
	waitCopied(t, src, dst, "other", "kfake-east")
	if d := kfaketest.Records(t, dst, "orders", 0, 0); len(d) != 20 || string(d[19].Value) != "old-19" {
		t.Fatalf("west's orders holds %d records (last %q), want the old incarnation's 20 untouched", len(d), d[len(d)-1].Value)
	}
	lag := measureLag(t, p.Topology)
	if len(lag.TopicChanges) != 1 || lag.TopicChanges[0].Kind != linkstate.TopicRecreated || !strings.Contains(lag.Partitions[0].Error, "reseed-topic orders") {
		t.Errorf("lag report: changes %+v, orders/0 error %q; want orders recreated with the command to run", lag.TopicChanges, lag.Partitions[0].Error)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	link := p.Topology.Link("east", "west")
	res, err := linkstate.ReseedTopic(ctx, kfaketest.Session(t, p.Topology), link, "orders", true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Salvaged != 20 || !res.Dropped || res.SalvageTopic != "orders"+p.Topology.Failover.SalvageTopicSuffix {
		t.Errorf("result %+v, want 20 salvaged into the quarantine topic and the old copy dropped", res)
	}
	salvaged := kfaketest.Records(t, dst, res.SalvageTopic, 0, 0)
	if len(salvaged) != len(oldCopy) {
		t.Fatalf("%d records salvaged, the old copy had %d", len(salvaged), len(oldCopy))
	}
	for i, r := range salvaged {
		o := oldCopy[i]
		if string(r.Key) != string(o.Key) || string(r.Value) != string(o.Value) || !r.Timestamp.Equal(o.Timestamp) ||
			string(header(r, topology.HeaderOrigin)) != "kfake-east" || sourceOffset(r) != sourceOffset(o) {
			t.Fatalf("salvaged record %d differs from the old copy (provenance included)", i)
		}
	}
	waitCopied(t, src, dst, "orders", "kfake-east")
	// The offset map still holds the old incarnation's entries: a group on
	// the new one is never translated to a wrong offset (unmapped at worst).
	commitSource(t, src, "g-new", map[topology.TopicPartition]int64{{Topic: "orders", Partition: 0}: 25})
	rep := mustTranslate(t, ctx, p.Topology, link, groupsync.TranslateOptions{Groups: []string{"g-new"}})
	for _, gp := range rep.Groups[0].Partitions {
		if gp.Exact && gp.Target != 25 {
			t.Errorf("g-new on the new orders translated to %d (%s), want 25 or unmapped", gp.Target, gp.Status)
		}
		t.Logf("g-new orders/%d after reseed-topic: target %d, status %s, exact %v", gp.Partition, gp.Target, gp.Status, gp.Exact)
	}
	if _, err := linkstate.ReseedTopic(ctx, kfaketest.Session(t, p.Topology), link, "orders", false); !errors.Is(err, linkstate.ErrNotRecreated) {
		t.Errorf("a second reseed-topic: %v, want ErrNotRecreated", err)
	}
}

// TestRecreatedTopicNotResumedBeforeTheSyncSeesIt: a partition that starts
// again (here: after a block) while the engine still holds the topic as
// ready from before a re-creation on the source — the topic sync has not
// run since — checks the topic's id first: the old incarnation's progress
// is never resumed on the new log, even though the new log reaches past it.
func TestRecreatedTopicNotResumedBeforeTheSyncSeesIt(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"orders\"]}"})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, "orders", 1, nil)
	sendN(t, kfaketest.IdempotentProducer(t, east, ""), "orders", 20, "old")
	// One topic sync pass only: the engine keeps the first incarnation's
	// id for the rest of the test.
	e := runEngine(t, p.Topology, Options{Shards: 1, TopicSyncInterval: time.Hour, BlockedRetry: time.Second})
	waitCopied(t, src, dst, "orders", "kfake-east")

	fault := p.West.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "orders", Err: kerr.MessageTooLarge, Count: -1})
	sendN(t, kfaketest.IdempotentProducer(t, east, ""), "orders", 1, "refused")
	waitFor(t, 20*time.Second, "orders/0 blocked", func() error {
		if tr := e.Troubles()["orders/0"]; !strings.Contains(tr, "refuses its records") {
			return fmt.Errorf("troubles = %v", e.Troubles())
		}
		return nil
	})
	deleteTopic(t, src, "orders")
	kfaketest.CreateTopicOn(t, src, "orders", 1, nil)
	sendN(t, kfaketest.IdempotentProducer(t, east, ""), "orders", 30, "new")
	fault.Remove()
	waitFor(t, 20*time.Second, "the re-creation reported by the shard", func() error {
		if tr := e.Troubles()["orders"]; !strings.Contains(tr, "recreated on east") {
			return fmt.Errorf("troubles %v", e.Troubles())
		}
		return nil
	})
	// Every later start of the partition (once per IdleCheck) is refused
	// too: wait for three more.
	refused := func() float64 { return testutil.ToFloat64(e.metrics.Errors.WithLabelValues("east->west", "source")) }
	seen := refused()
	waitFor(t, 20*time.Second, "three more refused starts", func() error {
		if n := refused() - seen; n < 3 {
			return fmt.Errorf("%v refused since the report", n)
		}
		return nil
	})
	if d := kfaketest.Records(t, dst, "orders", 0, 0); len(d) != 20 || string(d[19].Value) != "old-19" {
		t.Fatalf("west's orders holds %d records (last %q), want the old incarnation's 20 untouched", len(d), d[len(d)-1].Value)
	}
}

// TestLagReadsSourceTopicIDsAtOnce: the lag report compares each source
// topic's id with the ledger's in one metadata request, not one per topic
// (500 topics made `drctl status` and `drctl mirror lag` take 1.8 s more).
func TestLagReadsSourceTopicIDsAtOnce(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"many-.*\"]}"})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	const topics = 30
	prod := kfaketest.IdempotentProducer(t, east, "")
	for i := range topics {
		name := fmt.Sprintf("many-%02d", i)
		kfaketest.CreateTopicOn(t, src, name, 1, nil)
		sendN(t, prod, name, 2, "a")
	}
	runEngine(t, p.Topology, Options{Shards: 2})
	for i := range topics {
		waitCopied(t, src, dst, fmt.Sprintf("many-%02d", i), "kfake-east")
	}
	waitFor(t, 10*time.Second, "the topic ledger written", func() error {
		ledger, err := linkstate.ReadTopicLedger(kfaketest.Ctx(t, 10*time.Second), dst, p.Topology.Link("east", "west"))
		if err != nil {
			return err
		}
		if len(ledger) < topics {
			return fmt.Errorf("%d topics in the ledger", len(ledger))
		}
		return nil
	})
	var asked atomic.Int64
	p.East.ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
		p.East.KeepControl()
		asked.Add(1)
		return nil, nil, false
	})
	rep := measureLag(t, p.Topology)
	if rep.TotalRecords != 0 || len(rep.TopicChanges) != 0 {
		t.Errorf("lag %d records, topic changes %+v; want none", rep.TotalRecords, rep.TopicChanges)
	}
	if n := asked.Load(); n >= topics {
		t.Errorf("measuring the lag of %d topics sent %d metadata requests to the source, want a few", topics, n)
	}
}

// TestLateCheckpointOfAnOldIncarnationIgnored: a checkpoint of the old
// incarnation that lands after reseed-topic deleted that incarnation's
// progress does not make the new incarnation start past records never
// copied: a checkpoint carries the topic id of the incarnation it counts,
// and a resume ignores another's. (Kafka refuses an offset commit for a
// topic it no longer has, and reseed-topic deletes the copy first; but a
// shard that has not yet seen the re-creation may checkpoint up to a
// checkpoint interval after its last copy, through a coordinator whose
// metadata still lists the topic, or once the copy exists again.)
func TestLateCheckpointOfAnOldIncarnationIgnored(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"orders\"]}"})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	link := p.Topology.Link("east", "west")
	tp := topology.TopicPartition{Topic: "orders", Partition: 0}
	kfaketest.CreateTopicOn(t, src, "orders", 1, nil)
	sendN(t, kfaketest.IdempotentProducer(t, east, ""), "orders", 20, "old")

	run := func() (stop func()) {
		e, err := NewEngine(p.Topology, "east", "west", Options{Shards: 1, Epoch: -1, TopicSyncInterval: 200 * time.Millisecond, IdleCheck: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("engine: %v", err)
			}
		}
	}
	stop := run()
	waitCopied(t, src, dst, "orders", "kfake-east")
	ledger, err := linkstate.ReadTopicLedger(kfaketest.Ctx(t, 10*time.Second), dst, link)
	if err != nil {
		t.Fatal(err)
	}
	oldID := ledger["orders"].SourceID
	if oldID == "" {
		t.Fatal("the ledger holds no topic id for orders")
	}
	waitFor(t, 10*time.Second, "the checkpoint of the first incarnation, with its topic id", func() error {
		ck, err := linkstate.ReadCheckpoints(kfaketest.Ctx(t, 5*time.Second), dst, link.ProgressGroup(), []topology.TopicPartition{tp}, linkstate.Settled)
		if err != nil {
			return err
		}
		if ck[tp].Next != 20 || ck[tp].TopicID != oldID {
			return fmt.Errorf("checkpoint %+v, want next 20 and topic id %s", ck[tp], oldID)
		}
		return nil
	})
	stop()

	deleteTopic(t, src, "orders")
	kfaketest.CreateTopicOn(t, src, "orders", 1, nil)
	sendN(t, kfaketest.IdempotentProducer(t, east, ""), "orders", 30, "new")
	ctx := kfaketest.Ctx(t, 60*time.Second)
	if _, err := linkstate.ReseedTopic(ctx, kfaketest.Session(t, p.Topology), link, "orders", false); err != nil {
		t.Fatal(err)
	}
	// The late checkpoint: the first incarnation's position, written after
	// the reseed deleted it, once the copy exists again.
	kfaketest.CreateTopicOn(t, dst, "orders", 1, nil)
	late := linkstate.Progress{Next: 20, LastTs: time.Now().UnixMilli(), MapPos: -1, TopicID: oldID}
	if err := linkstate.CommitProgress(ctx, dst, link.ProgressGroup(), map[string][]*sarama.PartitionOffsetMetadata{
		"orders": {{Partition: 0, Offset: late.Next, Metadata: late.Metadata()}},
	}); err != nil {
		t.Fatal(err)
	}
	// Every reader of the progress leaves the late checkpoint out: the lag
	// (a failover's drain ends on it) counts all 30 records of the new
	// incarnation, and the salvage's and inspect rpo's reads find none
	// mirrored, from the source's topic id or, with the source down, from
	// the ledger's.
	rep, err := linkstate.MeasureLag(ctx, kfaketest.Session(t, p.Topology), link)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Partitions) != 1 || rep.Partitions[0].Records != 30 {
		t.Errorf("lag %+v: want orders/0 behind by its 30 records", rep.Partitions)
	}
	for name, from := range map[string]sarama.Client{"the source": src, "the ledger": nil} {
		got, err := linkstate.ReadProgress(ctx, from, dst, link, []topology.TopicPartition{tp})
		if err != nil {
			t.Fatal(err)
		}
		if n, ok := got[tp]; ok {
			t.Errorf("progress read with the incarnation from %s: %d, want none (the checkpoint is the old incarnation's)", name, n)
		}
	}
	stop = run()
	defer stop()
	// Record by record: all 30 of the new incarnation, not its last 10.
	waitCopied(t, src, dst, "orders", "kfake-east")
}
