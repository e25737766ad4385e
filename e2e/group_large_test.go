//go:build e2e

package e2e

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/mirror/groupsync"
	"github.com/drctl/drctl/topology"
)

// largeGroupPartitions x largeGroupMetadata bytes of offset metadata is
// more than a group coordinator can write in one batch (__consumer_offsets
// takes 1 MiB by default), and more than a topic takes by default even
// compressed: 400 x 4,000 random bytes, with Kafka's own limit on a
// commit's metadata (offset.metadata.max.bytes, 4,096) kept.
const (
	largeGroupPartitions = 400
	largeGroupMetadata   = 4000
)

// largeMetadata is the metadata a consumer of the large group stores with
// its offset of partition p: distinct per partition, and random, so that
// compression does not make the group's snapshot small.
func largeMetadata(p int32) string {
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	r := mrand.New(mrand.NewPCG(uint64(p), 7))
	var b strings.Builder
	fmt.Fprintf(&b, "partition %d;", p)
	for b.Len() < largeGroupMetadata {
		b.WriteByte(chars[r.IntN(len(chars))])
	}
	return b.String()
}

// commitInRequests commits offset at for every partition of topic in
// several requests on the cluster behind client (as the group's consumers
// would, each member its own share).
func commitInRequests(t *testing.T, client sarama.Client, group, topic string, at int64) {
	t.Helper()
	var changes []groupsync.OffsetChange
	for p := range int32(largeGroupPartitions) {
		changes = append(changes, groupsync.OffsetChange{Topic: topic, Partition: p, After: at, Metadata: largeMetadata(p)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 0; i < len(changes); i += 100 {
		if err := groupsync.CommitOffsets(ctx, client, group, changes[i:min(i+100, len(changes))]); err != nil {
			t.Fatal(err)
		}
	}
}

// checkLargeGroup returns nil when group holds offset at(p) with its
// metadata for every partition p of topic on the cluster behind client.
func checkLargeGroup(client sarama.Client, group, topic string, at func(p int32) int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, err := groupsync.FetchCommitted(ctx, client, group, true)
	if err != nil {
		return err
	}
	wrong := 0
	var first string
	for p := range int32(largeGroupPartitions) {
		c, ok := got[topology.TopicPartition{Topic: topic, Partition: p}]
		if !ok || c.Offset != at(p) || c.Metadata != largeMetadata(p) {
			if wrong == 0 {
				first = fmt.Sprintf("partition %d: committed %v (offset %d, want %d; %d bytes of metadata)", p, ok, c.Offset, at(p), len(c.Metadata))
			}
			wrong++
		}
	}
	if wrong > 0 {
		return fmt.Errorf("%d of %d partitions not at their offset with their metadata; first: %s", wrong, largeGroupPartitions, first)
	}
	return nil
}

// TestLargeGroupCommitsRealKafka: a group whose offsets are more than a
// coordinator writes in one batch (400 partitions, 4,000 bytes of metadata
// each: about 1.6 MB) is committed in full, on real Kafka, both by an
// admin-style commit (CommitOffsets: `drctl offsets apply`, the failover's
// group step) and by the running mirror's group sync (its fenced
// transactions), and its snapshot on the standby (about 1.6 MB of JSON, 1.2 MB compressed,
// more than a topic takes by default) is written too, to a snapshot topic
// an earlier drctl made with the default limit. Kafka refuses such a
// commit sent as one request with
// UNKNOWN_SERVER_ERROR for every partition, every time: before the commits
// were split, the first failed and the group sync retried the same refused
// transaction for ever, leaving the group's standby offsets where they were.
func TestLargeGroupCommitsRealKafka(t *testing.T) {
	ot := newOffsetsTopo(t, 500*time.Millisecond, "")
	createTopic(t, "east", ot.topic, largeGroupPartitions, nil)
	east := newClient(t, "east", adminConfig(t))
	west := newClient(t, "west", adminConfig(t))

	// An admin-style commit of the whole group in one call, on west.
	direct := ot.prefix + "-direct"
	var changes []groupsync.OffsetChange
	for p := range int32(largeGroupPartitions) {
		changes = append(changes, groupsync.OffsetChange{Topic: ot.topic, Partition: p, After: 0, Metadata: largeMetadata(p)})
	}
	createTopic(t, "west", ot.topic, largeGroupPartitions, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := groupsync.CommitOffsets(ctx, west, direct, changes); err != nil {
		t.Fatalf("commit of %d partitions with %d bytes of metadata each: %v", largeGroupPartitions, largeGroupMetadata, err)
	}
	if err := checkLargeGroup(west, direct, ot.topic, func(int32) int64 { return 0 }); err != nil {
		t.Fatal(err)
	}
	deleteTopics(t, "west", ot.topic)
	kfaketest.WaitFor(t, 60*time.Second, "west's copy of the topic deleted", func() error {
		if err := west.RefreshMetadata(); err != nil {
			return err
		}
		topics, err := west.Topics()
		if err != nil {
			return err
		}
		if slices.Contains(topics, ot.topic) {
			return fmt.Errorf("%s still listed", ot.topic)
		}
		return nil
	})

	// Two records in every source partition; the group consumed the first.
	cfg := adminConfig(t)
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	prod, err := sarama.NewSyncProducer([]string{env.East}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []*sarama.ProducerMessage
	for p := range int32(largeGroupPartitions) {
		for i := range 2 {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: ot.topic, Partition: p, Value: sarama.StringEncoder(fmt.Sprintf("p%d-%d", p, i))})
		}
	}
	if err := prod.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
	_ = prod.Close()
	group := ot.prefix + "-big"
	commitInRequests(t, east, group, ot.topic, 1)

	// The snapshot topic exists already, as an earlier drctl made it (the
	// default max.message.bytes): the sync raises its limit.
	createTopic(t, "west", ot.link().GroupsTopic(), 1, map[string]*string{"cleanup.policy": new("compact")})

	// The mirror copies the topic and its group sync moves the group: a
	// group at source offset 1 resumes at the copy of source record 1 on
	// west. That is target offset 1 when both records of the partition were
	// copied in one transaction, and 2 when the shard committed between them
	// (a commit marker takes offset 1), so the copies say which.
	start := time.Now()
	m := startOffsetsMirror(t, ot)
	var copies [][]kafkaread.Record
	kfaketest.WaitFor(t, 90*time.Second, "west holds both records of every partition", func() error {
		select {
		case <-m.done:
			return fmt.Errorf("the mirror exited")
		default:
		}
		var err error
		if copies, err = readPartitions(west, ot.topic, largeGroupPartitions); err != nil {
			return err
		}
		for p, recs := range copies {
			if len(recs) != 2 {
				return fmt.Errorf("partition %d: %d records copied", p, len(recs))
			}
			for i, r := range recs {
				if want := fmt.Sprintf("p%d-%d", p, i); string(r.Value) != want {
					return fmt.Errorf("partition %d: record %d is %q, want %q", p, i, r.Value, want)
				}
			}
		}
		return nil
	})
	split := 0
	for _, recs := range copies {
		if recs[1].Offset != recs[0].Offset+1 {
			split++
		}
	}
	t.Logf("%d of %d partitions have offsets between their two copies (a commit between them)", split, largeGroupPartitions)
	copyOf := func(i int) func(p int32) int64 {
		return func(p int32) int64 { return copies[p][i].Offset }
	}
	kfaketest.WaitFor(t, 90*time.Second, "west holds the large group's offsets", func() error {
		select {
		case <-m.done:
			return fmt.Errorf("the mirror exited")
		default:
		}
		return checkLargeGroup(west, group, ot.topic, copyOf(1))
	})
	t.Logf("large group synced %v after the mirror started", time.Since(start).Round(time.Millisecond))

	// The group moves on east: the sync follows, and its snapshot on west
	// (what an unplanned failover translates from) holds the new offsets.
	// Source offset 2 is past the last record: just after its copy.
	commitInRequests(t, east, group, ot.topic, 2)
	kfaketest.WaitFor(t, 60*time.Second, "west follows the large group's new offsets", func() error {
		return checkLargeGroup(west, group, ot.topic, func(p int32) int64 { return copyOf(1)(p) + 1 })
	})
	kfaketest.WaitFor(t, 30*time.Second, "the large group's snapshot on west", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		snaps, err := groupsync.LoadSnapshot(ctx, west, ot.link())
		if err != nil {
			return err
		}
		s, ok := snaps[group]
		if !ok {
			return fmt.Errorf("no snapshot of %s among %d", group, len(snaps))
		}
		at2 := 0
		for _, o := range s.Offsets {
			if o.Offset == 2 && o.Metadata == largeMetadata(o.Partition) {
				at2++
			}
		}
		if at2 != largeGroupPartitions {
			return fmt.Errorf("snapshot holds %d of %d partitions at offset 2 with their metadata", at2, largeGroupPartitions)
		}
		return nil
	})
}
