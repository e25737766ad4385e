package kfaketest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/poll"
	"github.com/drctl/drctl/topology"
)

// The helpers below set up what integration tests start from: a client, a
// topic, records, a group's committed offsets. They work on any cluster of
// a topology (kfake here, real Kafka in e2e) and fail the test on error.

// Ctx returns a context that ends after d or with the test.
func Ctx(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Dial connects to cluster of topo as drctl (the topology's credentials);
// the client is closed with the test.
func Dial(t testing.TB, topo *topology.Topology, cluster string) sarama.Client {
	t.Helper()
	c, ok := topo.Clusters[cluster]
	if !ok {
		t.Fatalf("no cluster %q in the topology", cluster)
	}
	return DialCluster(t, c)
}

// DialCluster connects to c; the client is closed with the test.
func DialCluster(t testing.TB, c *topology.Cluster) sarama.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := kafkaconn.Dial(ctx, c, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", c.Name, err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// Admin returns a cluster admin on cl (it shares cl: closing cl is enough).
func Admin(t testing.TB, cl sarama.Client) sarama.ClusterAdmin {
	t.Helper()
	admin, err := sarama.NewClusterAdminFromClient(cl)
	if err != nil {
		t.Fatal(err)
	}
	return admin
}

// CreateTopic creates topic on cluster with partitions, replication
// factor 1 and configs (may be nil).
func CreateTopic(t testing.TB, topo *topology.Topology, cluster, topic string, partitions int32, configs map[string]string) {
	t.Helper()
	CreateTopicOn(t, Dial(t, topo, cluster), topic, partitions, configs)
}

// CreateTopicOn is CreateTopic on the cluster of client cl.
func CreateTopicOn(t testing.TB, cl sarama.Client, topic string, partitions int32, configs map[string]string) {
	t.Helper()
	detail := &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}
	if len(configs) > 0 {
		detail.ConfigEntries = map[string]*string{}
		for k, v := range configs {
			detail.ConfigEntries[k] = &v
		}
	}
	if err := Admin(t, cl).CreateTopic(topic, detail, false); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// Producer opens a plain (not idempotent) synchronous producer on c that
// partitions by key, as applications do; with retries 0 it fails fast, so
// that an authorization error comes back as it is. It is closed with the
// test.
func Producer(t testing.TB, c *topology.Cluster, retries int) sarama.SyncProducer {
	t.Helper()
	return producer(t, c, retries, sarama.NewHashPartitioner)
}

func producer(t testing.TB, c *topology.Cluster, retries int, partitioner sarama.PartitionerConstructor) sarama.SyncProducer {
	t.Helper()
	cfg, err := c.SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = partitioner
	cfg.Producer.Retry.Max = retries
	cfg.Producer.Retry.Backoff = 50 * time.Millisecond
	cfg.Metadata.AllowAutoTopicCreation = false
	p, err := sarama.NewSyncProducer(c.Bootstrap, cfg)
	if err != nil {
		t.Fatalf("producer on %s: %v", c.Name, err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// IdempotentProducer opens an idempotent synchronous producer on c that
// writes to the partition each message names; with txnID it is
// transactional (BeginTxn, CommitTxn). It is closed with the test.
func IdempotentProducer(t testing.TB, c *topology.Cluster, txnID string) sarama.SyncProducer {
	t.Helper()
	cfg, err := c.SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Transaction.ID = txnID
	p, err := sarama.NewSyncProducer(c.Bootstrap, cfg)
	if err != nil {
		t.Fatalf("producer on %s: %v", c.Name, err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// Produce writes n records to topic on cluster, as drctl: record i has key
// "k<i>" and value "v<i>", and goes to the partition its key hashes to.
func Produce(t testing.TB, topo *topology.Topology, cluster, topic string, n int) {
	t.Helper()
	var msgs []*sarama.ProducerMessage
	for i := range n {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: sarama.StringEncoder(fmt.Sprintf("v%d", i))})
	}
	if err := Producer(t, topo.Clusters[cluster], 10).SendMessages(msgs); err != nil {
		t.Fatalf("produce to %s on %s: %v", topic, cluster, err)
	}
}

// ProduceEach writes n records to each of the first partitions partitions
// of topic on cluster, as drctl: partition p's record i has value "<p>/<i>"
// (and no key).
func ProduceEach(t testing.TB, topo *topology.Topology, cluster, topic string, partitions int32, n int) {
	t.Helper()
	var msgs []*sarama.ProducerMessage
	for p := range partitions {
		for i := range n {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: p, Value: sarama.StringEncoder(fmt.Sprintf("%d/%d", p, i))})
		}
	}
	if err := producer(t, topo.Clusters[cluster], 10, sarama.NewManualPartitioner).SendMessages(msgs); err != nil {
		t.Fatalf("produce to %s on %s: %v", topic, cluster, err)
	}
}

// Commit commits offsets of topic for group on cluster with no member
// (generation -1), as an offset-reset tool does.
func Commit(t testing.TB, topo *topology.Topology, cluster, group, topic string, offsets map[int32]int64) {
	t.Helper()
	CommitOn(t, Dial(t, topo, cluster), group, topic, offsets)
}

// CommitOn is Commit on the cluster of client cl. A coordinator that moved
// or is still loading (a cluster just started) is looked up again, for up
// to 30 seconds (kafkaread's classifier decides what is worth retrying).
func CommitOn(t testing.TB, cl sarama.Client, group, topic string, offsets map[int32]int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	within := kafkaread.Policy{First: 100 * time.Millisecond, Max: time.Second, Elapsed: 30 * time.Second}
	err := kafkaread.Do(ctx, within, func(attempt int) error {
		if attempt > 0 {
			_ = cl.RefreshCoordinator(group)
		}
		return commitOnce(cl, group, topic, offsets)
	})
	if err != nil {
		t.Fatalf("commit %s %s: %v", group, topic, err)
	}
}

func commitOnce(cl sarama.Client, group, topic string, offsets map[int32]int64) error {
	coord, err := cl.Coordinator(group)
	if err != nil {
		return err
	}
	req := &sarama.OffsetCommitRequest{Version: 7, ConsumerGroup: group, ConsumerGroupGeneration: -1}
	for p, o := range offsets {
		req.AddBlockWithLeaderEpoch(topic, p, o, -1, 0, "") // epoch unknown, as a tool commits
	}
	resp, err := coord.CommitOffset(req)
	if err != nil {
		return err
	}
	for _, parts := range resp.Errors {
		for p, kerr := range parts {
			if kerr != sarama.ErrNoError {
				return fmt.Errorf("partition %d: %w", p, kerr)
			}
		}
	}
	return nil
}

// Committed returns group's committed offset of topic/partition on the
// cluster of client cl, -1 when it has none.
func Committed(t testing.TB, cl sarama.Client, group, topic string, partition int32) int64 {
	t.Helper()
	if err := cl.RefreshCoordinator(group); err != nil {
		t.Fatal(err)
	}
	coord, err := cl.Coordinator(group)
	if err != nil {
		t.Fatal(err)
	}
	req := &sarama.OffsetFetchRequest{Version: 7, ConsumerGroup: group}
	req.AddPartition(topic, partition)
	resp, err := coord.FetchOffset(req)
	if err != nil {
		t.Fatal(err)
	}
	if b := resp.GetBlock(topic, partition); b != nil && b.Err == sarama.ErrNoError {
		return b.Offset
	}
	return -1
}

// GroupOffsets returns every committed offset of group on the cluster of
// admin as "topic/partition=offset" lines, sorted; none for a group the
// cluster does not know.
func GroupOffsets(t testing.TB, admin sarama.ClusterAdmin, group string) []string {
	t.Helper()
	resp, err := admin.ListConsumerGroupOffsets(group, nil)
	if errors.Is(err, sarama.ErrGroupIDNotFound) {
		return nil // kfake's answer for a group with no offsets (real Kafka: none)
	}
	if err != nil {
		t.Fatalf("offsets of %s: %v", group, err)
	}
	var out []string
	for topic, parts := range resp.Blocks {
		for p, b := range parts {
			if b.Err == sarama.ErrNoError && b.Offset >= 0 {
				out = append(out, fmt.Sprintf("%s/%d=%d", topic, p, b.Offset))
			}
		}
	}
	slices.Sort(out)
	return out
}

// Records returns the committed records of topic/partition on cl from
// offset from to the last stable offset.
func Records(t testing.TB, cl sarama.Client, topic string, partition int32, from int64) []kafkaread.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []kafkaread.Record
	if _, err := kafkaread.ReadCommitted(ctx, cl, topic, partition, from, func(r kafkaread.Record) error {
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatalf("read %s/%d: %v", topic, partition, err)
	}
	return out
}

// Wait waits until cond holds, checking it at once and then every 100 ms,
// and fails the test with what and cond's last explanation when it does
// not within d. It is drctl's own poll.Until, as the product waits.
func Wait(t testing.TB, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	err := poll.Until(context.Background(), poll.Wait{What: what, Within: d}, func(context.Context) (bool, string, error) {
		ok, why := cond()
		return ok, why, nil
	})
	if err != nil {
		t.Fatal(err) // names what, d and cond's last word
	}
}

// WaitFor is Wait for a condition that says what is missing as an error
// (nil: it holds).
func WaitFor(t testing.TB, d time.Duration, what string, cond func() error) {
	t.Helper()
	Wait(t, d, what, func() (bool, string) {
		if err := cond(); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// Seed creates topic on cluster with partitions, writes n records into
// each (ProduceEach: values "<p>/<i>") and, unless group is empty, commits
// group at offset at in every partition.
func Seed(t testing.TB, topo *topology.Topology, cluster, topic string, partitions int32, n int, group string, at int64) {
	t.Helper()
	CreateTopic(t, topo, cluster, topic, partitions, nil)
	ProduceEach(t, topo, cluster, topic, partitions, n)
	if group == "" {
		return
	}
	offsets := map[int32]int64{}
	for p := range partitions {
		offsets[p] = at
	}
	Commit(t, topo, cluster, group, topic, offsets)
}

// Session is the test's session with the clusters of topo: opened on
// first use, the same one for every later call of the same test and
// topology (as a command holds one), closed when the test ends. Clusters
// that were not reachable are dialled again at each call.
func Session(t testing.TB, topo *topology.Topology) *kafkaconn.Clusters {
	t.Helper()
	key := sessionKey{t, topo}
	sessionsMu.Lock()
	s, ok := sessions[key]
	if !ok {
		s = kafkaconn.Open(Ctx(t, 20*time.Second), topo)
		sessions[key] = s
		t.Cleanup(func() {
			sessionsMu.Lock()
			delete(sessions, key)
			sessionsMu.Unlock()
			s.Close()
		})
	}
	sessionsMu.Unlock()
	if ok {
		// A test restarts clusters at will: dial again at once a cluster
		// that failed, whenever it failed.
		for name := range s.Errors() {
			s.Drop(name)
		}
		s.Connect(Ctx(t, 20*time.Second))
	}
	return s
}

// forget makes every test session of topo dial cluster name again at its
// next use.
func forget(topo *topology.Topology, name string) {
	sessionsMu.Lock()
	var drop []*kafkaconn.Clusters
	for k, s := range sessions {
		if k.topo == topo {
			drop = append(drop, s)
		}
	}
	sessionsMu.Unlock()
	for _, s := range drop {
		s.Drop(name)
	}
}

type sessionKey struct {
	t    testing.TB
	topo *topology.Topology
}

var (
	sessionsMu sync.Mutex
	sessions   = map[sessionKey]*kafkaconn.Clusters{}
)
