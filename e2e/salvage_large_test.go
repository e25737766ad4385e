//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// salvageProducer writes to the partition each message names, as drctl's
// principal, with codec, and records up to 8 MiB.
func salvageProducer(t *testing.T, cluster string, codec sarama.CompressionCodec) sarama.SyncProducer {
	t.Helper()
	cfg := adminConfig(t)
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Compression = codec
	cfg.Producer.MaxMessageBytes = 8 << 20
	p, err := sarama.NewSyncProducer([]string{bootstrap(t, cluster)}, cfg)
	if err != nil {
		t.Fatalf("producer on %s: %v", cluster, err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// quarantined returns the records of partition 0 of the quarantine topic
// by the stale offset they name.
func quarantined(t *testing.T, cl sarama.Client, into string) map[int64][]byte {
	t.Helper()
	out := map[int64][]byte{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := kafkaread.ReadCommitted(ctx, cl, into, 0, 0, func(r kafkaread.Record) error {
		for _, h := range r.Headers {
			if string(h.Key) == topology.HeaderSalvagedOffset && len(h.Value) == 8 {
				out[int64(binary.BigEndian.Uint64(h.Value))] = r.Value
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("read %s: %v", into, err)
	}
	return out
}

// TestSalvageLargeRecordRealKafka: on real brokers, which enforce each
// topic's max.message.bytes on the record batch as stored:
//
//   - a 4,000,000-byte record in a topic that allows 6 MiB, followed by a
//     small one, never mirrored, is salvaged whole: the quarantine topic is
//     created with the source's limit (plus room for the salvage headers);
//   - a record that fits its topic only compressed (2,000,000 bytes that
//     gzip shrinks to a few KiB, in a topic at the default 1 MiB) cannot be
//     written uncompressed into quarantine: the salvage stops with the
//     record, "too large" and the max.message.bytes to set, writes nothing
//     after it, and counts nothing; with the limit raised as the error says,
//     the salvage run again writes both records and counts them.
func TestSalvageLargeRecordRealKafka(t *testing.T) {
	ft := newFoTopo(t, "salvage", "1s", `{fence: none, drain_timeout: 1m}`)
	westCl := ft.dial(t, "west")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	big := ft.topic("big")
	limit := "6291456"
	createTopic(t, "east", big, 1, map[string]*string{"max.message.bytes": &limit})
	plain := salvageProducer(t, "east", sarama.CompressionNone)
	large := bytes.Repeat([]byte{'x'}, 4_000_000)
	for _, v := range [][]byte{large, []byte("after")} {
		if _, _, err := plain.SendMessage(&sarama.ProducerMessage{Topic: big, Value: sarama.ByteEncoder(v)}); err != nil {
			t.Fatalf("produce %d bytes to %s: %v", len(v), big, err)
		}
	}

	// The second topic's record fits east only compressed.
	packed := ft.topic("packed")
	createTopic(t, "east", packed, 1, nil)
	gz := salvageProducer(t, "east", sarama.CompressionGZIP)
	compressible := bytes.Repeat([]byte("salvage;"), 250_000)
	for _, v := range [][]byte{compressible, []byte("after")} {
		if _, _, err := gz.SendMessage(&sarama.ProducerMessage{Topic: packed, Value: sarama.ByteEncoder(v)}); err != nil {
			t.Fatalf("produce %d bytes (gzip) to %s: %v", len(v), packed, err)
		}
	}

	_, err := failover.Salvage(ctx, session(t, ft.Topo), "east", "west")
	qe, ok := errors.AsType[*failover.QuarantineError](err)
	if !ok {
		t.Fatalf("salvage of a record that fits its topic only compressed: got %v, want a QuarantineError", err)
	}
	intoPacked := ft.Topo.SalvageTopic(packed)
	if qe.Topic != packed || qe.Offset != 0 || qe.Cause != "too large" || !errors.Is(err, sarama.ErrMessageSizeTooLarge) {
		t.Errorf("quarantine error %+v (%v), want %s offset 0, too large, MESSAGE_TOO_LARGE", qe, err, packed)
	}
	for _, want := range []string{"max.message.bytes", intoPacked, "nothing was wiped"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if got := quarantined(t, westCl, intoPacked); len(got) != 0 {
		t.Errorf("after the failed salvage %s holds offsets %v, want none (nothing after the record that failed)", intoPacked, slices.Sorted(maps.Keys(got)))
	}
	intoBig := ft.Topo.SalvageTopic(big)
	got := quarantined(t, westCl, intoBig)
	if len(got) != 2 || !bytes.Equal(got[0], large) || string(got[1]) != "after" {
		t.Errorf("%s holds offsets %v (offset 0: %d bytes), want 0 (%d bytes) and 1", intoBig, slices.Sorted(maps.Keys(got)), len(got[0]), len(large))
	}

	// The fix the error names.
	admin, err := sarama.NewClusterAdminFromClient(westCl)
	if err != nil {
		t.Fatal(err)
	}
	raised := strconv.Itoa(qe.Bytes + 1024)
	if err := admin.IncrementalAlterConfig(sarama.TopicResource, intoPacked, map[string]sarama.IncrementalAlterConfigsEntry{
		"max.message.bytes": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &raised}}, false); err != nil {
		t.Fatal(err)
	}
	rep, err := failover.Salvage(ctx, session(t, ft.Topo), "east", "west")
	if err != nil {
		t.Fatalf("salvage after raising %s's max.message.bytes: %v", intoPacked, err)
	}
	if rep.Records != 4 {
		t.Errorf("salvaged %d record(s), want 4 (2 of each topic)", rep.Records)
	}
	got = quarantined(t, westCl, intoPacked)
	if len(got) != 2 || !bytes.Equal(got[0], compressible) || string(got[1]) != "after" {
		t.Errorf("%s holds offsets %v, want 0 (%d bytes) and 1", intoPacked, slices.Sorted(maps.Keys(got)), len(compressible))
	}
	if got := quarantined(t, westCl, intoBig); len(got) != 2 {
		t.Errorf("%s holds %d record(s) after the second salvage, want the same 2", intoBig, len(got))
	}
}
