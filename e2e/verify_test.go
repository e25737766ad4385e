//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/offsettranslate"
	"github.com/drctl/drctl/verify"
)

// verifyRun runs `drctl -o json verify` (with args) on the test's topology
// and decodes the report.
func verifyRun(t *testing.T, mt *mirrorTopo, args ...string) (*verify.Report, cliResult) {
	t.Helper()
	r := runDrctl(t, []string{passwordVar + "=" + env.Password}, append([]string{"-c", mt.Path, "-o", "json", "verify"}, args...)...)
	var rep verify.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("drctl verify %v: exit %d, no report (%v)\n%s\n%s", args, r.code, err, r.stdout, r.stderr)
	}
	return &rep, r
}

// thousands writes n as drctl's text output does: 1204331 -> 1,204,331.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// partitionOf returns the report of topic/partition.
func partitionOf(t *testing.T, rep *verify.Report, topic string, partition int32) verify.PartitionReport {
	t.Helper()
	for _, p := range rep.Partitions {
		if p.Topic == topic && p.Partition == partition {
			return p
		}
	}
	t.Fatalf("%s/%d is not in the report", topic, partition)
	return verify.PartitionReport{}
}

// TestVerifyRealKafka: drctl verify against real Kafka. A clean mirror of
// plain records and transactions (one in four aborted) verifies every
// committed record, N of N, also while the mirror copies new ones. Then,
// with the mirror stopped, three differences are injected and each is
// found on its partition at its offsets, with exit 1, the other
// partitions staying identical: a record produced straight into the
// standby's topic (unexpected), the first records of a standby partition
// deleted with DeleteRecords (missing), and a standby topic deleted and
// created again with other content (content differs, then missing).
func TestVerifyRealKafka(t *testing.T) {
	prefix := uniqueName(t, "vf")
	mt := writeMirrorTopology(t, topicPattern(prefix))
	topic, other := prefix+".a", prefix+".b"
	createTopic(t, "east", topic, 4, nil)
	createTopic(t, "east", other, 2, nil)
	t.Cleanup(func() { deleteTopics(t, "west", topic, other) })
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	east := mt.Topo.Clusters["east"]
	s := &stream{Topic: topic, Partitions: 4, Min: 3000, Max: 3000, Pace: 2 * time.Millisecond, BatchSize: 40}
	if err := s.run(ctx, east, mt.Name+"-a"); err != nil {
		t.Fatal(err)
	}
	plain := mt.producer(t, "east", "")
	var msgs []*sarama.ProducerMessage
	for p := range int32(2) {
		for i := range 50 {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: other, Partition: p, Key: sarama.StringEncoder(fmt.Sprintf("b%d", i)),
				Value: sarama.StringEncoder(fmt.Sprintf("b %d/%d", p, i))})
		}
	}
	if err := plain.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
	proc := startMirror(t, mt, "mirror")
	waitCaughtUp(t, mt, 2*time.Minute)

	// While the mirror copies a second stream: proven up to the mirrored
	// position.
	more := &stream{Topic: topic, Partitions: 4, Min: 2000, Max: 2000, Pace: 5 * time.Millisecond, BatchSize: 40}
	moreDone := more.start(ctx, east, mt.Name+"-a2")
	rep, r := verifyRun(t, mt)
	if r.code != 0 || rep.Summary.Identical != 6 || rep.Summary.Compared != rep.Summary.SourceRecords || rep.Summary.Compared < s.Produced.Load()-s.Aborted.Load()+100 {
		t.Errorf("verify during the copy: exit %d, summary %+v\n%s", r.code, rep.Summary, r.stderr)
	}
	if err := moreDone(); err != nil {
		t.Fatal(err)
	}
	waitCaughtUp(t, mt, 2*time.Minute)
	proc.signal(syscall.SIGTERM)
	if _, err := proc.waitExit(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	committed := s.Produced.Load() - s.Aborted.Load() + more.Produced.Load() - more.Aborted.Load()
	rep, r = verifyRun(t, mt)
	if r.code != 0 || !rep.Proven() || rep.Summary.Partitions != 6 || rep.Summary.Compared != committed+100 {
		t.Fatalf("clean mirror: exit %d, summary %+v, want 6 of 6 identical, %d records compared\n%s", r.code, rep.Summary, committed+100, r.stderr)
	}
	if s.AbortedTx.Load()+more.AbortedTx.Load() == 0 {
		t.Error("the streams aborted no transaction")
	}

	// Unexpected: a record produced straight into the standby's topic.
	rogue := mt.producer(t, "west", "")
	_, rogueAt, err := rogue.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder("not from east")})
	if err != nil {
		t.Fatal(err)
	}
	// Missing: the first three copies of a/1 deleted on the standby.
	west := mt.dial(t, "west")
	x, err := offsettranslate.Load(ctx, west, mt.link().OffsetsTopic())
	if err != nil {
		t.Fatal(err)
	}
	runs, _, _ := x.Runs(topic, 1)
	if len(runs) == 0 || runs[0].Count < 3 {
		t.Fatalf("a/1's map starts with %v: want a run of 3 records or more", runs)
	}
	first := runs[0]
	admin, err := sarama.NewClusterAdminFromClient(west)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.DeleteRecords(topic, map[int32]int64{1: first.Target + 3}); err != nil {
		t.Fatal(err)
	}
	// Recreated: b deleted on the standby and created again, 5 records of
	// other content in b/0.
	deleteTopics(t, "west", other)
	kfaketest.WaitFor(t, 60*time.Second, "b gone from west", func() error {
		topics, err := admin.ListTopics()
		if err != nil {
			return err
		}
		if _, ok := topics[other]; ok {
			return fmt.Errorf("%s still listed", other)
		}
		return nil
	})
	createTopic(t, "west", other, 2, nil)
	for i := range 5 {
		if _, _, err := rogue.SendMessage(&sarama.ProducerMessage{Topic: other, Partition: 0, Value: sarama.StringEncoder(fmt.Sprintf("other %d", i))}); err != nil {
			t.Fatal(err)
		}
	}

	rep, r = verifyRun(t, mt)
	if r.code != 1 || rep.Summary.Differing != 4 || rep.Summary.Identical != 2 || rep.Summary.NotVerified != 0 {
		t.Errorf("after the injections: exit %d, summary %+v, want 4 partitions differing, 2 identical\n%s", r.code, rep.Summary, r.stderr)
	}
	type diff struct {
		kind     verify.Kind
		src, dst int64
	}
	for _, c := range []struct {
		topic     string
		partition int32
		kinds     string
		first     []diff
	}{
		{topic, 0, "map[unexpected:1]", []diff{{verify.Unexpected, -1, rogueAt}}},
		{topic, 1, "map[missing:3]", []diff{{verify.Missing, first.Source, first.Target}, {verify.Missing, first.Source + 1, first.Target + 1}, {verify.Missing, first.Source + 2, first.Target + 2}}},
		{topic, 2, "map[]", nil},
		{topic, 3, "map[]", nil},
		{other, 0, "map[content-differs:5 missing:45]", []diff{{verify.ContentDiffers, 0, 0}}},
		{other, 1, "map[missing:50]", []diff{{verify.Missing, 0, 0}}},
	} {
		p := partitionOf(t, rep, c.topic, c.partition)
		if fmt.Sprint(p.ByKind) != c.kinds {
			t.Errorf("%s/%d: %s %v, want %s (%+v)", c.topic, c.partition, p.Status, p.ByKind, c.kinds, p.Details)
			continue
		}
		for i, want := range c.first {
			if i >= len(p.Details) || p.Details[i].Kind != want.kind || p.Details[i].SourceOffset != want.src || p.Details[i].TargetOffset != want.dst {
				t.Errorf("%s/%d: difference %d is %+v, want %+v", c.topic, c.partition, i, p.Details, want)
				break
			}
		}
		if c.first == nil && p.Status != verify.Identical {
			t.Errorf("%s/%d: %s, want identical", c.topic, c.partition, p.Status)
		}
	}
	// The text names each partition and both offsets.
	text := runDrctl(t, []string{passwordVar + "=" + env.Password}, "-c", mt.Path, "verify", "--topic", topic)
	flat := strings.Join(strings.Fields(text.stdout), " ")
	for _, want := range []string{
		fmt.Sprintf("unexpected: east (none), west offset %s", thousands(rogueAt)),
		fmt.Sprintf("missing: east offset %s, west offset %s", thousands(first.Source), thousands(first.Target)),
		"2 of 4 partitions proven identical, 2 differ",
	} {
		if text.code != 1 || !strings.Contains(flat, want) {
			t.Errorf("verify --topic %s: exit %d, no %q\n%s", topic, text.code, want, text.stdout)
		}
	}
}

// TestVerifyAcrossSIGKILLsRealKafka: while a stream of plain and
// transactional records (some aborted) flows into east, `drctl mirror run`
// is SIGKILLed at random moments and restarted; drctl verify, run while the
// last mirror still copies and once it has caught up, proves west identical
// to east: every committed record compared, N of N partitions.
func TestVerifyAcrossSIGKILLsRealKafka(t *testing.T) {
	const (
		partitions = 4
		kills      = 3
	)
	topic := uniqueName(t, "vk")
	mt := writeMirrorTopology(t, topicPattern(topic))
	createTopic(t, "east", topic, partitions, nil)
	t.Cleanup(func() { deleteTopics(t, "west", topic) })
	var killing atomic.Bool
	killing.Store(true)
	s := &stream{Topic: topic, Partitions: partitions, Min: 20_000, Max: 200_000, Pace: 50 * time.Millisecond, BatchSize: 40, More: killing.Load}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	streamDone := s.start(ctx, mt.Topo.Clusters["east"], mt.Name+"-stream")
	for i := range kills {
		p := startMirror(t, mt, fmt.Sprintf("mirror-%d", i))
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
		select { // a random moment of the copy
		case <-time.After(time.Duration(200+rand.IntN(2500)) * time.Millisecond):
		case <-p.done:
			t.Fatalf("%s exited with %d:\n%s", p.name, p.code, p.tail(20))
		}
		p.kill()
	}
	final := startMirror(t, mt, "mirror-final")
	kfaketest.WaitFor(t, 60*time.Second, final.name+" owns shards", func() error {
		n, err := final.shardsOwned(mt.link())
		if err == nil && n == 0 {
			err = fmt.Errorf("owns no shard yet")
		}
		return err
	})
	// While it copies and the stream still flows.
	rep, r := verifyRun(t, mt)
	if r.code != 0 || rep.Summary.Identical != partitions || rep.Summary.Compared != rep.Summary.SourceRecords {
		t.Errorf("verify during the copy after %d SIGKILLs: exit %d, summary %+v\n%s", kills, r.code, rep.Summary, r.stderr)
	}
	killing.Store(false)
	if err := streamDone(); err != nil {
		t.Fatal(err)
	}
	waitCaughtUp(t, mt, 2*time.Minute)
	committed := s.Produced.Load() - s.Aborted.Load()
	rep, r = verifyRun(t, mt)
	if r.code != 0 || !rep.Proven() || rep.Summary.Partitions != partitions || rep.Summary.Compared != committed {
		t.Errorf("after %d SIGKILLs: exit %d, summary %+v, want %d of %d identical and %d records compared\n%s",
			kills, r.code, rep.Summary, partitions, partitions, committed, r.stderr)
	}
	t.Logf("stream: %d records (%d in %d aborted transactions); %d SIGKILLs; verify: %d of %d partitions identical, %d records compared",
		s.Produced.Load(), s.Aborted.Load(), s.AbortedTx.Load(), kills, rep.Summary.Identical, rep.Summary.Partitions, rep.Summary.Compared)
	final.kill()
}
