package mirror

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

// TestLargeRecordIsCopied (#8 case 7): a record the source accepted (4 MB
// on a topic with max.message.bytes=6291456) is copied, and the other
// topic of its shard keeps flowing, record by record.
func TestLargeRecordIsCopied(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"big\", \"small\"]}"})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, "big", 1, map[string]string{"max.message.bytes": "6291456"})
	kfaketest.CreateTopicOn(t, src, "small", 1, nil)
	cfg, err := east.SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.MaxMessageBytes = 6291456
	prod, err := sarama.NewSyncProducer(east.Bootstrap, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	sendN(t, prod, "small", 10, "before")
	sendN(t, prod, "big", 3, "small-record")
	large := bytes.Repeat([]byte("x"), 4_000_000)
	if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "big", Value: sarama.ByteEncoder(large)}); err != nil {
		t.Fatalf("the source refuses the large record: %v", err)
	}
	sendN(t, prod, "big", 3, "after")
	sendN(t, prod, "small", 10, "after")

	runEngine(t, p.Topology, Options{Shards: 1})
	waitCopied(t, src, dst, "big", "kfake-east")
	waitCopied(t, src, dst, "small", "kfake-east")
	if v := topicConfig(t, dst, "big", "max.message.bytes"); v != "6291456" {
		t.Errorf("west's big has max.message.bytes %q, want the source's 6291456", v)
	}
}

// TestRefusedPartitionDoesNotHoldBackItsShard (#8 case 7): a partition
// whose records the target refuses shows its error (Troubles, mirror lag,
// the blocked gauge) while the other partitions of its shard keep copying;
// once the target accepts it again, it catches up and the error clears.
func TestRefusedPartitionDoesNotHoldBackItsShard(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"refused\", \"other\"]}"})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, "refused", 1, nil)
	kfaketest.CreateTopicOn(t, src, "other", 1, nil)
	prod := kfaketest.IdempotentProducer(t, east, "")
	fault := p.West.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "refused", Err: kerr.MessageTooLarge, Count: -1})
	sendN(t, prod, "refused", 10, "a")
	sendN(t, prod, "other", 10, "a")
	e := runEngine(t, p.Topology, Options{Shards: 1, BlockedRetry: 2 * time.Second})
	waitCopied(t, src, dst, "other", "kfake-east")
	sendN(t, prod, "other", 10, "b")
	waitCopied(t, src, dst, "other", "kfake-east")
	if tr := e.Troubles()["refused/0"]; !strings.Contains(tr, "refuses its records") {
		t.Errorf("troubles = %v, want refused/0 with the target's error", e.Troubles())
	}
	if v := testutil.ToFloat64(e.metrics.Safety.Blocked.WithLabelValues("east->west", "refused", "0")); v != 1 {
		t.Errorf("blocked gauge = %v, want 1", v)
	}
	waitFor(t, 20*time.Second, "the error in mirror lag", func() error {
		lag := measureLag(t, p.Topology)
		for _, pl := range lag.Partitions {
			if pl.Topic == "refused" {
				if !strings.Contains(pl.Error, "refuses its records") || pl.Records != 10 {
					return fmt.Errorf("refused/0: error %q, %d records behind", pl.Error, pl.Records)
				}
				return nil
			}
		}
		return fmt.Errorf("refused/0 not in the report")
	})

	// status (inspect.Status lists linkstate.State.Problems).
	ls := linkstate.Describe(context.Background(), kfaketest.Session(t, p.Topology), p.Topology.Link("east", "west"))
	if probs := strings.Join(ls.Problems(), "\n"); !strings.Contains(probs, "refused/0 cannot be copied") {
		t.Errorf("link problems for status = %q", probs)
	}

	fault.Remove()
	waitCopied(t, src, dst, "refused", "kfake-east")
	waitFor(t, 20*time.Second, "the error cleared", func() error {
		if tr, ok := e.Troubles()["refused/0"]; ok {
			return fmt.Errorf("still %q", tr)
		}
		for _, pl := range measureLag(t, p.Topology).Partitions {
			if pl.Error != "" {
				return fmt.Errorf("%s/%d: %s", pl.Topic, pl.Partition, pl.Error)
			}
		}
		return nil
	})
	if v := testutil.ToFloat64(e.metrics.Safety.Blocked.WithLabelValues("east->west", "refused", "0")); v != 0 {
		t.Errorf("blocked gauge = %v after recovery, want 0", v)
	}
}

// TestBlockedPartitionEndsStayRecorded: while a partition is blocked, the
// source end its shard records in the ends topic keeps following the
// source, with the partition's mirrored position: after an unplanned
// failover the RPO is computed from it, and a blocked partition must not
// read as mirrored (the e2e unplanned failover reported 0 records).
func TestBlockedPartitionEndsStayRecorded(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"refused\", \"other\"]}"})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, "refused", 1, nil)
	kfaketest.CreateTopicOn(t, src, "other", 1, nil)
	prod := kfaketest.IdempotentProducer(t, east, "")
	sendN(t, prod, "refused", 5, "mirrored")
	sendN(t, prod, "other", 5, "mirrored")
	// A retry pause longer than the test: only the blocked path can
	// record the ends that follow.
	e := runEngine(t, p.Topology, Options{Shards: 1, BlockedRetry: 5 * time.Minute})
	waitCopied(t, src, dst, "refused", "kfake-east")

	p.West.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "refused", Err: kerr.MessageTooLarge, Count: -1})
	sendN(t, prod, "refused", 10, "refused")
	waitFor(t, 20*time.Second, "refused/0 blocked", func() error {
		if tr := e.Troubles()["refused/0"]; !strings.Contains(tr, "refuses its records") {
			return fmt.Errorf("troubles = %v", e.Troubles())
		}
		return nil
	})
	sendN(t, prod, "refused", 7, "while blocked")
	link := p.Topology.Link("east", "west")
	waitFor(t, 20*time.Second, "the ends topic holds refused/0's source end", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		seen, err := linkstate.LastObserved(ctx, dst, link)
		if err != nil {
			return err
		}
		o, ok := seen[topology.TopicPartition{Topic: "refused", Partition: 0}]
		if !ok || o.End != 22 || o.Mirrored != 5 {
			return fmt.Errorf("refused/0 observed %+v (found %v), want end 22, mirrored 5", o, ok)
		}
		return nil
	})
	// The other partition of the shard goes on meanwhile.
	sendN(t, prod, "other", 5, "after")
	waitCopied(t, src, dst, "other", "kfake-east")
}
