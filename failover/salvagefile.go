package failover

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
)

// SalvagedRecord is one line of a salvage file (drctl resume --salvage-to
// DIR): a record of the stale cluster that never reached the active one,
// whole. Key, Value and header values are base64 (JSON's encoding of
// bytes); a null key or value was null in Kafka.
type SalvagedRecord struct {
	Topic     string         `json:"topic"`
	Partition int32          `json:"partition"`
	Offset    int64          `json:"offset"`
	Timestamp time.Time      `json:"timestamp"`
	Key       []byte         `json:"key"`
	Value     []byte         `json:"value"`
	Headers   []SalvagedHead `json:"headers"`
	// SalvagedFrom is the stale cluster's id, TopicID its topic's id:
	// offsets number records within one topic id only.
	SalvagedFrom string `json:"salvaged_from"`
	TopicID      string `json:"topic_id"`
}

// SalvagedHead is a record header in a salvage file, as it was.
type SalvagedHead struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// SalvageFile is where salvage to dir saves a partition of topic (with id
// topicID) of the stale cluster: one file per copy of the topic, so that
// the salvage of a later copy never overwrites an earlier one's.
func SalvageFile(dir, stale, topic, topicID string, partition int32) string {
	if topicID == "" {
		topicID = "no-topic-id"
	}
	return filepath.Join(dir, stale, topic, fmt.Sprintf("%s-%d.jsonl", topicID, partition))
}

// toFile saves every record of the partition into its salvage file (JSON
// lines of SalvagedRecord, in offset order), written whole each time
// (a temporary file, synced, then renamed over the last one), and counts
// the records it reads back from the file. Records that an earlier salvage
// put into quarantine are saved again: the file alone holds them all.
func (p *partitionSalvage) toFile(ctx context.Context, src sarama.Client, dir string) (SalvagedPartition, error) {
	path := SalvageFile(dir, p.stale, p.tp.Topic, p.topicID, p.tp.Partition)
	sp := SalvagedPartition{Topic: p.tp.Topic, Partition: p.tp.Partition, From: p.from, To: p.to, Into: path}
	fail := func(err error) (SalvagedPartition, error) {
		return sp, fmt.Errorf("salvage %s from %s to %s: %w; nothing was wiped: make %s writable (or name another directory) and run the salvage again", p.tp, p.stale, path, err, dir)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fail(err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".salvage-*")
	if err != nil {
		return fail(err)
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is there
	bw := bufio.NewWriter(tmp)
	enc := json.NewEncoder(bw)
	var want []int64
	err = p.each(ctx, src, func(r kafkaread.Record) error {
		rec := SalvagedRecord{Topic: p.tp.Topic, Partition: p.tp.Partition, Offset: r.Offset, Timestamp: r.Timestamp,
			Key: r.Key, Value: r.Value, Headers: []SalvagedHead{}, SalvagedFrom: p.staleID, TopicID: p.topicID}
		for _, h := range r.Headers {
			rec.Headers = append(rec.Headers, SalvagedHead{Key: string(h.Key), Value: h.Value})
		}
		want = append(want, r.Offset)
		return enc.Encode(rec)
	})
	if err != nil {
		_ = tmp.Close()
		return sp, err
	}
	if err := errors.Join(bw.Flush(), tmp.Sync(), tmp.Close()); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fail(err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	n, err := readBackSalvageFile(path, want)
	if err != nil {
		return fail(err)
	}
	sp.Records = n
	return sp, nil
}

// readBackSalvageFile decodes the salvage file at path and checks that it
// holds exactly the records of the offsets want, in order.
func readBackSalvageFile(path string, want []int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReader(f))
	var n int64
	for {
		var rec SalvagedRecord
		err := dec.Decode(&rec)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, fmt.Errorf("read back record %d: %w", n+1, err)
		}
		if n >= int64(len(want)) || rec.Offset != want[n] {
			return n, fmt.Errorf("read back: record %d has offset %d, not the one written", n+1, rec.Offset)
		}
		n++
	}
	if n != int64(len(want)) {
		return n, fmt.Errorf("read back %d of %d record(s)", n, len(want))
	}
	return n, nil
}
