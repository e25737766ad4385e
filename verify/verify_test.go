package verify_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/mirror"
	"github.com/drctl/drctl/offsettranslate"
	"github.com/drctl/drctl/verify"
)

// mirrorUntilCaught runs the mirror daemon in-process until the link has
// copied everything on the source, then stops it.
func mirrorUntilCaught(t *testing.T, p *kfaketest.Pair) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := mirror.NewDaemon(p.Topology, mirror.DaemonOptions{StatePoll: 200 * time.Millisecond,
		Engine: mirror.Options{Shards: 1, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond}})
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() { cancel(); <-done }()
	link := p.Topology.Link("east", "west")
	kfaketest.Wait(t, 60*time.Second, "the mirror to catch up", func() (bool, string) {
		rep, err := linkstate.MeasureLag(kfaketest.Ctx(t, 10*time.Second), kfaketest.Session(t, p.Topology), link)
		if err != nil {
			return false, err.Error()
		}
		return rep.Caught(), fmt.Sprintf("%+v", rep.Partitions)
	})
}

func runVerify(t *testing.T, p *kfaketest.Pair, opts verify.Options) *verify.Report {
	t.Helper()
	ctx := kfaketest.Ctx(t, 60*time.Second)
	clusters := kafkaconn.Open(ctx, p.Topology, "east", "west")
	defer clusters.Close()
	rep, err := verify.Run(ctx, clusters, p.Topology.Link("east", "west"), opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// produceTxns writes n transactions of 3 records each to topic/partition
// on east; every third one aborts. It returns the committed count.
func produceTxns(t *testing.T, p *kfaketest.Pair, topic string, partition int32, n int) int {
	t.Helper()
	prod := kfaketest.IdempotentProducer(t, p.Topology.Clusters["east"], "verify-test-"+topic)
	committed := 0
	for i := range n {
		if err := prod.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: partition,
				Key: sarama.StringEncoder(fmt.Sprintf("t%d", i)), Value: sarama.StringEncoder(fmt.Sprintf("txn %d/%d", i, j)),
				Headers: []sarama.RecordHeader{{Key: []byte("app"), Value: []byte("h")}}}); err != nil {
				t.Fatal(err)
			}
		}
		var err error
		if i%3 == 2 {
			err = prod.AbortTxn()
		} else {
			err = prod.CommitTxn()
			committed += 3
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return committed
}

// TestVerify: a clean mirror (plain records, transactions with aborts)
// verifies every record of every partition; then, with the mirror
// stopped, each injected difference is found on its partition at its
// offsets, and the partitions left alone stay identical.
func TestVerify(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"a\", \"b\", \"c\"]}\n  group_sync_interval: 1h\n"})
	east := kfaketest.Dial(t, p.Topology, "east")
	west := kfaketest.Dial(t, p.Topology, "west")
	for _, topic := range []string{"a", "b", "c"} {
		kfaketest.CreateTopicOn(t, east, topic, 2, nil)
	}
	kfaketest.ProduceEach(t, p.Topology, "east", "a", 2, 20)
	kfaketest.ProduceEach(t, p.Topology, "east", "b", 2, 10)
	kfaketest.ProduceEach(t, p.Topology, "east", "c", 2, 6)
	txns := produceTxns(t, p, "a", 0, 9) // 6 committed of 9, between plain records
	kfaketest.ProduceEach(t, p.Topology, "east", "a", 1, 5)
	mirrorUntilCaught(t, p)

	want := map[string]int64{"a/0": int64(20 + txns + 5), "a/1": 20, "b/0": 10, "b/1": 10, "c/0": 6, "c/1": 6}
	rep := runVerify(t, p, verify.DefaultOptions())
	if !rep.Proven() || rep.Summary.Partitions != 6 {
		t.Fatalf("clean mirror not proven: %+v", rep)
	}
	for _, pr := range rep.Partitions {
		tp := fmt.Sprintf("%s/%d", pr.Topic, pr.Partition)
		if pr.Compared != want[tp] || pr.SourceRecords != want[tp] || pr.ProvenSourceTo != pr.SourceTo || pr.ProvenTargetTo != pr.TargetTo {
			t.Errorf("%s: %d of %d compared, want %d; proven [%d, %d) = [%d, %d) of [%d, %d) = [%d, %d)", tp, pr.Compared, pr.SourceRecords, want[tp],
				pr.SourceFrom, pr.ProvenSourceTo, pr.TargetFrom, pr.ProvenTargetTo, pr.SourceFrom, pr.SourceTo, pr.TargetFrom, pr.TargetTo)
		}
	}
	// The source's transactions leave holes: a/0's range is wider than its records.
	if pr := rep.Partitions[0]; pr.SourceTo-pr.SourceFrom <= pr.SourceRecords {
		t.Errorf("a/0: range [%d, %d) for %d records: no holes from the aborted transactions?", pr.SourceFrom, pr.SourceTo, pr.SourceRecords)
	}

	// Injections, the mirror stopped.
	// a/1: a record produced straight into the standby.
	rogue := kfaketest.IdempotentProducer(t, p.Topology.Clusters["west"], "")
	_, rogueOffset, err := rogue.SendMessage(&sarama.ProducerMessage{Topic: "a", Partition: 1, Value: sarama.StringEncoder("rogue")})
	if err != nil {
		t.Fatal(err)
	}
	// b/0: the standby's first 3 records deleted.
	admin := kfaketest.Admin(t, west)
	if err := admin.DeleteRecords("b", map[int32]int64{0: 3}); err != nil {
		t.Fatal(err)
	}
	// c: recreated on the standby with other content: 4 records in c/0.
	if err := admin.DeleteTopic("c"); err != nil {
		t.Fatal(err)
	}
	kfaketest.Wait(t, 10*time.Second, "c deleted on west", func() (bool, string) {
		topics, err := admin.ListTopics()
		_, exists := topics["c"]
		return err == nil && !exists, fmt.Sprint(err)
	})
	kfaketest.CreateTopicOn(t, west, "c", 2, nil)
	for i := range 4 {
		if _, _, err := rogue.SendMessage(&sarama.ProducerMessage{Topic: "c", Partition: 0, Value: sarama.StringEncoder(fmt.Sprintf("other %d", i))}); err != nil {
			t.Fatal(err)
		}
	}

	rep = runVerify(t, p, verify.DefaultOptions())
	type kinds map[verify.Kind]int64
	for _, c := range []struct {
		tp     string
		status verify.Status
		kinds  kinds
		first  verify.Difference
	}{
		{"a/0", verify.Identical, nil, verify.Difference{}},
		{"a/1", verify.Differs, kinds{verify.Unexpected: 1}, verify.Difference{Kind: verify.Unexpected, SourceOffset: -1, TargetOffset: rogueOffset}},
		{"b/0", verify.Differs, kinds{verify.Missing: 3}, verify.Difference{Kind: verify.Missing, SourceOffset: 0, TargetOffset: 0}},
		{"b/1", verify.Identical, nil, verify.Difference{}},
		{"c/0", verify.Differs, kinds{verify.ContentDiffers: 4, verify.Missing: 2}, verify.Difference{Kind: verify.ContentDiffers, SourceOffset: 0, TargetOffset: 0}},
		{"c/1", verify.Differs, kinds{verify.Missing: 6}, verify.Difference{Kind: verify.Missing, SourceOffset: 0, TargetOffset: 0}},
	} {
		var pr *verify.PartitionReport
		for i := range rep.Partitions {
			if fmt.Sprintf("%s/%d", rep.Partitions[i].Topic, rep.Partitions[i].Partition) == c.tp {
				pr = &rep.Partitions[i]
			}
		}
		if pr == nil {
			t.Fatalf("%s not in the report", c.tp)
		}
		if pr.Status != c.status || fmt.Sprint(pr.ByKind) != fmt.Sprint(map[verify.Kind]int64(c.kinds)) {
			t.Errorf("%s: %s %v, want %s %v (%+v)", c.tp, pr.Status, pr.ByKind, c.status, c.kinds, pr.Details)
			continue
		}
		if c.status == verify.Differs {
			d := pr.Details[0]
			if d.Kind != c.first.Kind || d.SourceOffset != c.first.SourceOffset || d.TargetOffset != c.first.TargetOffset {
				t.Errorf("%s: first difference %+v, want %+v", c.tp, d, c.first)
			}
		}
	}
	if rep.Proven() || rep.Summary.Differing != 4 || rep.Summary.Identical != 2 {
		t.Errorf("summary %+v", rep.Summary)
	}

	// One partition, from an offset, sampled.
	opts := verify.DefaultOptions()
	opts.Topic, opts.Partition, opts.FromOffset, opts.Sample = "a", 0, 10, 2
	rep = runVerify(t, p, opts)
	if len(rep.Partitions) != 1 || rep.Partitions[0].Status != verify.NoDifferenceSeen || rep.Partitions[0].SourceFrom != 10 ||
		rep.Partitions[0].Compared != (rep.Partitions[0].SourceRecords+1)/2 || rep.Partitions[0].ProvenSourceTo != -1 {
		t.Errorf("sampled a/0 from 10: %+v", rep.Partitions)
	}
}

// TestVerifySampleReadsLess: a sampled run fetches each side at the
// sampled offsets only. The source's records are written one batch each,
// so it reads one record per sample there; a difference at a sampled
// offset is found, one between the samples is not looked for.
func TestVerifySampleReadsLess(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"s\"]}\n  group_sync_interval: 1h\n"})
	east := kfaketest.Dial(t, p.Topology, "east")
	kfaketest.CreateTopicOn(t, east, "s", 1, nil)
	prod := kfaketest.IdempotentProducer(t, p.Topology.Clusters["east"], "")
	const records, every = 300, 50
	for i := range records {
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "s", Value: sarama.StringEncoder(fmt.Sprintf("record %d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	mirrorUntilCaught(t, p)

	full := runVerify(t, p, verify.DefaultOptions())
	opts := verify.DefaultOptions()
	opts.Sample = every
	sampled := runVerify(t, p, opts)
	f, s := full.Partitions[0], sampled.Partitions[0]
	if f.Status != verify.Identical || f.SourceRead != records || f.TargetRead != records {
		t.Fatalf("full run: %s, read %d source and %d standby records, want %d each", f.Status, f.SourceRead, f.TargetRead, records)
	}
	if s.Status != verify.NoDifferenceSeen || s.SourceRecords != records || s.Compared != records/every || s.SourceRead != records/every || s.TargetRead > f.TargetRead {
		t.Errorf("sampled every %d: %s, %d of %d compared, read %d source and %d standby records; want %d of %d, %d source records read",
			every, s.Status, s.Compared, s.SourceRecords, s.SourceRead, s.TargetRead, records/every, records, records/every)
	}
	if sampled.Summary.SourceRead != s.SourceRead || sampled.Summary.TargetRead != s.TargetRead {
		t.Errorf("summary reads %d and %d, partition %d and %d", sampled.Summary.SourceRead, sampled.Summary.TargetRead, s.SourceRead, s.TargetRead)
	}

	// A record written into the standby between copies is not looked for;
	// a deleted copy at a sampled offset is missing. The standby's head
	// is deleted up to the second sample's copy.
	rogue := kfaketest.IdempotentProducer(t, p.Topology.Clusters["west"], "")
	if _, _, err := rogue.SendMessage(&sarama.ProducerMessage{Topic: "s", Value: sarama.StringEncoder("rogue")}); err != nil {
		t.Fatal(err)
	}
	west := kfaketest.Dial(t, p.Topology, "west")
	x, err := offsettranslate.Load(kfaketest.Ctx(t, 10*time.Second), west, p.Topology.Link("east", "west").OffsetsTopic())
	if err != nil {
		t.Fatal(err)
	}
	copyOf := x.Translate("s", 0, every)
	if copyOf.Status != offsettranslate.Exact {
		t.Fatalf("the copy of source offset %d: %+v", every, copyOf)
	}
	if err := kfaketest.Admin(t, west).DeleteRecords("s", map[int32]int64{0: copyOf.Target + 1}); err != nil {
		t.Fatal(err)
	}
	s = runVerify(t, p, opts).Partitions[0]
	if s.Status != verify.Differs || fmt.Sprint(s.ByKind) != "map[missing:2]" || s.Details[0].SourceOffset != 0 || s.Details[1].SourceOffset != every {
		t.Errorf("sampled, head deleted on the standby: %s %v %+v", s.Status, s.ByKind, s.Details)
	}
}
