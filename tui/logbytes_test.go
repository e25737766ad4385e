package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestLogBytesOnKfake: the refresh measures the mirrored partitions' log
// bytes on both ends; records written to the active and copied by the
// real mirror make both grow, so the overview shows MB/s in and copied.
func TestLogBytesOnKfake(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"orders\"]}"})
	topo := p.Topology
	kfaketest.Seed(t, topo, "east", "orders", 3, 10, "billing", 0)
	runMirror(t, topo)

	// caught waits for a refresh in which the mirror copied everything.
	caught := func(what string) *Snapshot {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			s := collect(context.Background(), topo, t.TempDir(), 10*time.Second, time.Now)
			if s.Lag != nil && s.Lag.Caught() && s.Bytes != nil {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no caught-up refresh with log bytes within 60s (lag %+v, bytes %+v, lag error %q)", what, s.Lag, s.Bytes, s.LagError)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	first := caught("after the seed")
	if first.Bytes.Source <= 0 || first.Bytes.Target <= 0 {
		t.Fatalf("log bytes %+v after 30 records were mirrored, want both > 0", *first.Bytes)
	}

	cfg, _ := topo.Clusters["east"].SaramaConfig()
	cfg.Producer.Return.Successes = true
	prod, err := sarama.NewSyncProducer(topo.Clusters["east"].Bootstrap, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var msgs []*sarama.ProducerMessage
	for range 300 {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: "orders", Value: sarama.StringEncoder(strings.Repeat("x", 1000))})
	}
	if err := prod.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
	second := caught("after 300 KB more")
	grewSource, grewTarget := second.Bytes.Source-first.Bytes.Source, second.Bytes.Target-first.Bytes.Target
	if grewSource < 300_000 || grewTarget < 300_000 {
		t.Fatalf("300 records of 1000 bytes grew the logs by %d (active) and %d (standby) bytes, want at least 300000 each", grewSource, grewTarget)
	}
	r := measureRates(first, second)
	if !r.BytesKnown || r.InMB <= 0 || r.CopiedMB <= 0 {
		t.Fatalf("rates %+v, want MB/s in and copied measured and > 0", r)
	}
}
