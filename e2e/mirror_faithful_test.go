//go:build e2e

package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestMirrorFaithfulRealKafka proves the partition-faithful copy record by record against
// real Apache Kafka: `drctl mirror run` copies each committed source record
// to the same partition of the same topic, in order, with key, value,
// headers and timestamp unchanged and provenance added; aborted source
// records are not copied; target topics get the source's partition count
// and configs, and later changes follow; lag drains to zero; a topic created
// later is mirrored within 10 s; SIGTERM stops the process cleanly.
func TestMirrorFaithfulRealKafka(t *testing.T) {
	prefix := uniqueName(t, "mf")
	mt := writeMirrorTopology(t, topicPattern(prefix+"-"))
	var (
		orders   = prefix + "-orders"   // plain and transactional records, retention and size configs
		accounts = prefix + "-accounts" // compacted, with tombstones
		payments = prefix + "-payments" // transactional only, some aborted
		logtime  = prefix + "-logtime"  // the broker stamps the time (LogAppendTime)
		late     = prefix + "-late"     // created while the mirror runs
		outside  = "mfx-" + prefix      // not selected
	)
	createTopic(t, "east", orders, 4, map[string]*string{"retention.ms": new("604800000"), "max.message.bytes": new("2097152")})
	createTopic(t, "east", accounts, 3, map[string]*string{"cleanup.policy": new("compact"), "min.cleanable.dirty.ratio": new("0.3")})
	createTopic(t, "east", payments, 2, nil)
	createTopic(t, "east", logtime, 1, map[string]*string{"message.timestamp.type": new("LogAppendTime")})
	createTopic(t, "east", outside, 1, nil)
	t.Cleanup(func() { deleteTopics(t, "west", orders, accounts, payments, logtime, late) })

	src, dst := mt.dial(t, "east"), mt.dial(t, "west")
	eastID, err := kafkaconn.ClusterID(src)
	if err != nil {
		t.Fatal(err)
	}
	plain := mt.producer(t, "east", "")
	txn := mt.producer(t, "east", mt.Name+"-test-txn")

	// Explicit timestamps an hour back (well inside retention), one apart.
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	n := 0
	record := func(topic string, part int32, key, value []byte, headers ...sarama.RecordHeader) *sarama.ProducerMessage {
		n++
		m := &sarama.ProducerMessage{Topic: topic, Partition: part, Timestamp: base.Add(time.Duration(n) * time.Millisecond), Headers: headers}
		if key != nil {
			m.Key = sarama.ByteEncoder(key)
		}
		if value != nil {
			m.Value = sarama.ByteEncoder(value)
		}
		return m
	}
	send := func(p sarama.SyncProducer, msgs ...*sarama.ProducerMessage) {
		t.Helper()
		if err := p.SendMessages(msgs); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	inTxn := func(abort bool, msgs ...*sarama.ProducerMessage) {
		t.Helper()
		if err := txn.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		send(txn, msgs...)
		end := txn.CommitTxn
		if abort {
			end = txn.AbortTxn
		}
		if err := end(); err != nil {
			t.Fatal(err)
		}
	}

	// orders: null keys, an empty key and value, null and empty header
	// values, a repeated header key; transactions in between, one aborted.
	for i := range 400 {
		var key []byte
		switch {
		case i%5 == 0: // null key
		case i == 7:
			key = []byte{}
		default:
			key = []byte(fmt.Sprintf("order-%d", i%17))
		}
		value := []byte(fmt.Sprintf("order value %d", i))
		if i == 11 {
			value = []byte{}
		}
		send(plain, record(orders, int32(i%4), key, value,
			sarama.RecordHeader{Key: []byte("n"), Value: []byte(fmt.Sprint(i))},
			sarama.RecordHeader{Key: []byte("null"), Value: nil},
			sarama.RecordHeader{Key: []byte("empty"), Value: []byte{}},
			sarama.RecordHeader{Key: []byte("dup"), Value: []byte("a")},
			sarama.RecordHeader{Key: []byte("dup"), Value: []byte("b")}))
		if i%100 == 99 {
			var msgs []*sarama.ProducerMessage
			for j := range 8 {
				msgs = append(msgs, record(orders, int32(j%4), []byte("txn"), []byte(fmt.Sprintf("order txn %d/%d", i, j))))
			}
			inTxn(i == 199, msgs...)
		}
	}
	// accounts: keyed updates and tombstones (null values).
	for i := range 150 {
		key := []byte(fmt.Sprintf("acct-%d", i%20))
		value := []byte(fmt.Sprintf("balance %d", i*7))
		if i%13 == 12 {
			value = nil
		}
		send(plain, record(accounts, int32(i%3), key, value, sarama.RecordHeader{Key: []byte("v"), Value: []byte(fmt.Sprint(i))}))
	}
	// payments: 12 transactions of 6 records, every third aborted.
	for tx := range 12 {
		var msgs []*sarama.ProducerMessage
		for j := range 6 {
			msgs = append(msgs, record(payments, int32(j%2), []byte(fmt.Sprintf("pay-%d", j)), []byte(fmt.Sprintf("payment %d/%d", tx, j)),
				sarama.RecordHeader{Key: []byte("tx"), Value: []byte(fmt.Sprint(tx))}))
		}
		inTxn(tx%3 == 2, msgs...)
	}
	// logtime: the copy keeps the time the source broker stamped.
	for i := range 30 {
		send(plain, record(logtime, 0, []byte("lt"), []byte(fmt.Sprintf("stamped by east %d", i))))
	}
	send(plain, record(outside, 0, []byte("x"), []byte("never mirrored")))

	start := time.Now()
	proc := startMirror(t, mt, "mirror")
	shapes := []struct {
		topic string
		parts int32
	}{{orders, 4}, {accounts, 3}, {payments, 2}, {logtime, 1}}
	counts := map[string]int{}
	for _, s := range shapes {
		kfaketest.WaitFor(t, 60*time.Second, s.topic+" copied faithfully", func() error {
			c, err := compareTopic(src, dst, s.topic, s.parts, eastID, false)
			counts[s.topic] = c
			return err
		})
	}
	t.Logf("copied %d+%d+%d+%d committed records faithfully %v after the mirror started",
		counts[orders], counts[accounts], counts[payments], counts[logtime], time.Since(start).Round(time.Millisecond))
	if counts[orders] != 400+3*8 || counts[accounts] != 150 || counts[payments] != 8*6 || counts[logtime] != 30 {
		t.Errorf("committed source records: %v; want 424 orders, 150 accounts, 48 payments, 30 logtime", counts)
	}

	// The target topics have the source's shape; the unselected topic was
	// not created.
	admin, err := sarama.NewClusterAdminFromClient(dst)
	if err != nil {
		t.Fatal(err)
	}
	checkTopic(t, admin, orders, 4, map[string]string{"retention.ms": "604800000", "max.message.bytes": "2097152", "cleanup.policy": "delete"})
	checkTopic(t, admin, accounts, 3, map[string]string{"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.3"})
	checkTopic(t, admin, payments, 2, map[string]string{"cleanup.policy": "delete"})
	// A standby topic keeps the mirror's timestamps: CreateTime, whatever
	// the source uses.
	checkTopic(t, admin, logtime, 1, map[string]string{"message.timestamp.type": "CreateTime"})
	topics, err := admin.ListTopics()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := topics[outside]; ok {
		t.Errorf("%s is not selected but exists on west", outside)
	}

	// `drctl mirror lag -o json` reaches zero records, past the trailing
	// transaction markers.
	kfaketest.WaitFor(t, 30*time.Second, "drctl mirror lag reports zero", func() error {
		r := runDrctl(t, []string{passwordVar + "=" + env.Password}, "-c", mt.Path, "-o", "json", "mirror", "lag")
		if r.code != 0 {
			return fmt.Errorf("exit %d: %s", r.code, r.stderr)
		}
		var lag struct {
			Link         string `json:"link"`
			TotalRecords int64  `json:"total_records"`
			Partitions   []struct {
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
				SourceEnd int64  `json:"source_end"`
				Mirrored  int64  `json:"mirrored"`
				Records   int64  `json:"records"`
			} `json:"partitions"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &lag); err != nil {
			return fmt.Errorf("json: %v\n%s", err, r.stdout)
		}
		if lag.Link != "east->west" || len(lag.Partitions) != 10 {
			return fmt.Errorf("link %q with %d partitions, want east->west with 10: %s", lag.Link, len(lag.Partitions), r.stdout)
		}
		for _, p := range lag.Partitions {
			if p.Records != 0 || p.Mirrored != p.SourceEnd {
				return fmt.Errorf("%s/%d: %d records behind (mirrored %d of %d)", p.Topic, p.Partition, p.Records, p.Mirrored, p.SourceEnd)
			}
		}
		if lag.TotalRecords != 0 {
			return fmt.Errorf("total %d records behind", lag.TotalRecords)
		}
		return nil
	})

	// A topic created now is mirrored within 10 s.
	created := time.Now()
	createTopic(t, "east", late, 2, map[string]*string{"retention.ms": new("86400000")})
	for i := range 10 {
		send(plain, record(late, int32(i%2), []byte("late"), []byte(fmt.Sprintf("late %d", i))))
	}
	kfaketest.WaitFor(t, 10*time.Second-time.Since(created), "the late topic mirrored within 10 s of its creation", func() error {
		c, err := compareTopic(src, dst, late, 2, eastID, false)
		if err == nil && c != 10 {
			err = fmt.Errorf("%d records on the source", c)
		}
		return err
	})
	t.Logf("a topic created on east was mirrored %v after its creation", time.Since(created).Round(time.Millisecond))
	checkTopic(t, admin, late, 2, map[string]string{"retention.ms": "86400000"})

	// Later config and partition-count changes follow.
	sadmin, err := sarama.NewClusterAdminFromClient(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := sadmin.AlterConfig(sarama.TopicResource, orders, map[string]*string{
		"retention.ms": new("259200000"), "max.message.bytes": new("2097152"),
	}, false); err != nil {
		t.Fatal(err)
	}
	if err := sadmin.CreatePartitions(orders, 6, nil, false); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	grown := mt.producer(t, "east", "") // a producer that sees the new partitions
	for i := range 12 {
		send(grown, record(orders, int32(4+i%2), []byte("grown"), []byte(fmt.Sprintf("new partition %d", i))))
	}
	kfaketest.WaitFor(t, 30*time.Second, "new partitions and config mirrored", func() error {
		if _, err := compareTopic(src, dst, orders, 6, eastID, false); err != nil {
			return err
		}
		return topicShape(admin, orders, 6, map[string]string{"retention.ms": "259200000"})
	})
	t.Logf("a partition-count and config change on east reached west in %v", time.Since(changed).Round(time.Millisecond))

	// SIGTERM: a graceful stop, exit 0, and no transaction left open on west
	// (a crashed one would hold the last stable offset back).
	if code, body, err := proc.get("/readyz"); err != nil || code != 200 {
		t.Errorf("/readyz before stop: %d %q %v", code, body, err)
	}
	proc.signal(syscall.SIGTERM)
	stopAt := time.Now()
	code, err := proc.waitExit(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Fatalf("mirror exited with %d after SIGTERM:\n%s", code, proc.tail(20))
	}
	t.Logf("SIGTERM: exit 0 after %v", time.Since(stopAt).Round(time.Millisecond))
	for _, s := range append(shapes, struct {
		topic string
		parts int32
	}{late, 2}) {
		parts := s.parts
		if s.topic == orders {
			parts = 6
		}
		ends, err := partitionEnds(dst, s.topic, parts)
		if err != nil {
			t.Fatal(err)
		}
		for p, e := range ends {
			if e.Stable != e.High {
				t.Errorf("west %s/%d: last stable offset %d below high-water mark %d after a graceful stop: a transaction was left open", s.topic, p, e.Stable, e.High)
			}
		}
	}
	for _, e := range proc.logs() {
		if strings.Contains(fmt.Sprint(e), env.Password) {
			t.Fatalf("the mirror logged the password: %v", e)
		}
	}
}

//go:fix inline

// checkTopic fails the test unless topic on the admin's cluster has parts
// partitions and the given config values.
func checkTopic(t testing.TB, admin sarama.ClusterAdmin, topic string, parts int32, want map[string]string) {
	t.Helper()
	if err := topicShape(admin, topic, parts, want); err != nil {
		t.Error(err)
	}
}

func topicShape(admin sarama.ClusterAdmin, topic string, parts int32, want map[string]string) error {
	md, err := admin.DescribeTopics([]string{topic})
	if err != nil {
		return err
	}
	if len(md) != 1 || !errors.Is(md[0].Err, sarama.ErrNoError) {
		return fmt.Errorf("describe %s: %+v", topic, md)
	}
	if got := int32(len(md[0].Partitions)); got != parts {
		return fmt.Errorf("%s on west has %d partitions, want %d", topic, got, parts)
	}
	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		return err
	}
	have := map[string]string{}
	for _, e := range entries {
		have[e.Name] = e.Value
	}
	for k, v := range want {
		if have[k] != v {
			return fmt.Errorf("%s on west: %s=%q, want %q", topic, k, have[k], v)
		}
	}
	return nil
}

// deleteTopics deletes topics from cluster (mirrored copies) and the ACLs
// on their names, ignoring errors: the names are unique to the test.
func deleteTopics(t testing.TB, cluster string, topics ...string) {
	c, err := sarama.NewClient([]string{bootstrap(t, cluster)}, adminConfig(t))
	if err != nil {
		return
	}
	defer c.Close()
	a, err := sarama.NewClusterAdminFromClient(c)
	if err != nil {
		return
	}
	for _, topic := range topics {
		_ = a.DeleteTopic(topic)
		// The ACLs on the name go with the topic: the mirror's fence put
		// DENY WRITE ones on every copy on the standby.
		_, _ = a.DeleteACL(sarama.AclFilter{ResourceType: sarama.AclResourceTopic, ResourceName: &topic,
			ResourcePatternTypeFilter: sarama.AclPatternLiteral, Operation: sarama.AclOperationAny,
			PermissionType: sarama.AclPermissionAny}, false)
	}
}
