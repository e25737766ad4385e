//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestMirrorTopicChangesRealKafka (#8 case 6) on real Apache Kafka: while
// `drctl mirror run` copies three topics, one is turned from delete to
// compact on east, one is deleted and one is deleted and created again.
// The daemon never stops; the compacted topic's copy follows the policy and
// keeps copying; the deleted topic's copy stays on west; the recreated
// topic's old copy stays untouched and reported until `drctl mirror
// reseed-topic --salvage` keeps it in the quarantine topic and the new
// incarnation is mirrored. Records are compared one by one.
func TestMirrorTopicChangesRealKafka(t *testing.T) {
	prefix := uniqueName(t, "tc")
	mt := writeMirrorTopology(t, topicPattern(prefix+"-"))
	var (
		policy   = prefix + "-policy"
		deleted  = prefix + "-deleted"
		recreate = prefix + "-recreate"
		salvage  = recreate + mt.Topo.Failover.SalvageTopicSuffix
	)
	for _, tp := range []string{policy, deleted, recreate} {
		createTopic(t, "east", tp, 2, map[string]*string{"cleanup.policy": new("delete")})
	}
	t.Cleanup(func() { deleteTopics(t, "west", policy, deleted, recreate, salvage) })
	src, dst := mt.dial(t, "east"), mt.dial(t, "west")
	eastID, err := kafkaconn.ClusterID(src)
	if err != nil {
		t.Fatal(err)
	}
	send := func(p sarama.SyncProducer, topic, tag string, n int) {
		t.Helper()
		for i := range n {
			if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: int32(i % 2),
				Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", tag, i))}); err != nil {
				t.Fatalf("produce to %s: %v", topic, err)
			}
		}
	}
	prod := mt.producer(t, "east", "")
	for _, tp := range []string{policy, deleted, recreate} {
		send(prod, tp, "first", 40)
	}
	proc := startMirror(t, mt, "mirror")
	for _, tp := range []string{policy, deleted, recreate} {
		kfaketest.WaitFor(t, 60*time.Second, tp+" copied", func() error { _, err := compareTopic(src, dst, tp, 2, eastID, false); return err })
	}
	oldCopy, err := readPartitions(dst, recreate, 2)
	if err != nil {
		t.Fatal(err)
	}

	sadmin, err := sarama.NewClusterAdminFromClient(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := sadmin.AlterConfig(sarama.TopicResource, policy, map[string]*string{"cleanup.policy": new("compact")}, false); err != nil {
		t.Fatal(err)
	}
	if err := sadmin.DeleteTopic(deleted); err != nil {
		t.Fatal(err)
	}
	if err := sadmin.DeleteTopic(recreate); err != nil {
		t.Fatal(err)
	}
	kfaketest.WaitFor(t, 30*time.Second, recreate+" gone from east", func() error {
		ts, err := sadmin.ListTopics()
		if err != nil {
			return err
		}
		if _, ok := ts[recreate]; ok {
			return fmt.Errorf("still listed")
		}
		return nil
	})
	createTopic(t, "east", recreate, 2, nil)
	fresh := mt.producer(t, "east", "") // the old producer's sequence numbers belong to the old topic
	send(fresh, recreate, "second", 30)
	send(fresh, policy, "after-compact", 20)

	admin, err := sarama.NewClusterAdminFromClient(dst)
	if err != nil {
		t.Fatal(err)
	}
	kfaketest.WaitFor(t, 60*time.Second, "the policy change followed and copying goes on", func() error {
		if err := topicShape(admin, policy, 2, map[string]string{"cleanup.policy": "compact"}); err != nil {
			return err
		}
		_, err := compareTopic(src, dst, policy, 2, eastID, false)
		return err
	})
	type lagOut struct {
		Partitions []struct {
			Topic string `json:"topic"`
			Error string `json:"error"`
		} `json:"partitions"`
		TopicChanges []struct {
			Topic string `json:"topic"`
			Kind  string `json:"kind"`
		} `json:"topic_changes"`
	}
	kfaketest.WaitFor(t, 60*time.Second, "mirror lag reports the deleted and the recreated topic", func() error {
		r := runDrctl(t, []string{passwordVar + "=" + env.Password}, "-c", mt.Path, "-o", "json", "mirror", "lag")
		if r.code != 0 {
			return fmt.Errorf("exit %d: %s", r.code, r.stderr)
		}
		var lag lagOut
		if err := json.Unmarshal([]byte(r.stdout), &lag); err != nil {
			return err
		}
		kinds := map[string]string{}
		for _, c := range lag.TopicChanges {
			kinds[c.Topic] = c.Kind
		}
		if kinds[deleted] != "deleted" || kinds[recreate] != "recreated" {
			return fmt.Errorf("topic changes %v", kinds)
		}
		for _, p := range lag.Partitions {
			if p.Topic == recreate && !strings.Contains(p.Error, "reseed-topic") {
				return fmt.Errorf("%s: error %q", p.Topic, p.Error)
			}
		}
		return nil
	})
	// The copies of the deleted and of the recreated topic are untouched.
	if n, err := readPartitions(dst, deleted, 2); err != nil || len(n[0])+len(n[1]) != 40 {
		t.Errorf("west's copy of the deleted topic lost records (%v), want the 40 mirrored", err)
	}
	now, err := readPartitions(dst, recreate, 2)
	if err != nil {
		t.Fatal(err)
	}
	for p := range now {
		if len(now[p]) != len(oldCopy[p]) {
			t.Fatalf("west's copy of %s/%d holds %d records, the old incarnation's %d: the new one was mixed in", recreate, p, len(now[p]), len(oldCopy[p]))
		}
		for i, r := range now[p] {
			if !bytes.Equal(r.Value, oldCopy[p][i].Value) {
				t.Fatalf("west's copy of %s/%d changed at record %d", recreate, p, i)
			}
		}
	}
	if proc.exited() {
		t.Fatalf("the mirror exited:\n%s", proc.tail(30))
	}

	r := runDrctl(t, []string{passwordVar + "=" + env.Password}, "-c", mt.Path, "mirror", "reseed-topic", recreate, "--salvage", "--yes")
	if r.code != 0 || !strings.Contains(r.stdout, "salvaged 40 records") {
		t.Fatalf("reseed-topic: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	salvaged, err := readPartitions(dst, salvage, 2)
	if err != nil {
		t.Fatal(err)
	}
	for p := range salvaged {
		if len(salvaged[p]) != len(oldCopy[p]) {
			t.Fatalf("%s/%d: %d records salvaged, the old copy had %d", salvage, p, len(salvaged[p]), len(oldCopy[p]))
		}
		for i, s := range salvaged[p] {
			o := oldCopy[p][i]
			if !bytes.Equal(s.Key, o.Key) || !bytes.Equal(s.Value, o.Value) || !s.Timestamp.Equal(o.Timestamp) || len(s.Headers) != len(o.Headers) {
				t.Fatalf("%s/%d record %d differs from the old copy", salvage, p, i)
			}
		}
	}
	kfaketest.WaitFor(t, 60*time.Second, "the new incarnation mirrored", func() error {
		n, err := compareTopic(src, dst, recreate, 2, eastID, false)
		if err == nil && n != 30 {
			err = fmt.Errorf("%d records", n)
		}
		return err
	})
	if proc.exited() {
		t.Fatalf("the mirror exited:\n%s", proc.tail(30))
	}
}

// TestMirrorLargeRecordRealKafka (#8 case 7) on real Apache Kafka: a 4 MB
// record on a topic with max.message.bytes=6291456 is copied, record by
// record with its neighbours, while the other partitions of the topic and
// another topic keep flowing.
func TestMirrorLargeRecordRealKafka(t *testing.T) {
	prefix := uniqueName(t, "lr")
	mt := writeMirrorTopology(t, topicPattern(prefix+"-"))
	big, small := prefix+"-big", prefix+"-small"
	createTopic(t, "east", big, 3, map[string]*string{"max.message.bytes": new("6291456")})
	createTopic(t, "east", small, 2, nil)
	t.Cleanup(func() { deleteTopics(t, "west", big, small) })
	src, dst := mt.dial(t, "east"), mt.dial(t, "west")
	eastID, err := kafkaconn.ClusterID(src)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := mt.Topo.Clusters["east"].SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.MaxMessageBytes = 6291456
	prod, err := sarama.NewSyncProducer(mt.Topo.Clusters["east"].Bootstrap, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	send := func(topic string, part int32, value []byte) {
		t.Helper()
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: part, Value: sarama.ByteEncoder(value)}); err != nil {
			t.Fatalf("produce to %s/%d: %v", topic, part, err)
		}
	}
	proc := startMirror(t, mt, "mirror", "--shards", "2")
	for i := range 10 {
		for p := range int32(3) {
			send(big, p, []byte(fmt.Sprintf("before-%d", i)))
		}
		send(small, int32(i%2), []byte(fmt.Sprintf("before-%d", i)))
	}
	large := bytes.Repeat([]byte("drctl"), 800_000) // 4,000,000 bytes
	send(big, 0, large)
	for i := range 10 {
		for p := range int32(3) {
			send(big, p, []byte(fmt.Sprintf("after-%d", i)))
		}
		send(small, int32(i%2), []byte(fmt.Sprintf("after-%d", i)))
	}
	kfaketest.WaitFor(t, 90*time.Second, "both topics copied record by record, the 4 MB record included", func() error {
		if _, err := compareTopic(src, dst, small, 2, eastID, false); err != nil {
			return err
		}
		n, err := compareTopic(src, dst, big, 3, eastID, false)
		if err == nil && n != 61 {
			err = fmt.Errorf("%d records", n)
		}
		return err
	})
	admin, err := sarama.NewClusterAdminFromClient(dst)
	if err != nil {
		t.Fatal(err)
	}
	checkTopic(t, admin, big, 3, map[string]string{"max.message.bytes": "6291456"})
	if proc.exited() {
		t.Fatalf("the mirror exited:\n%s", proc.tail(30))
	}
}
