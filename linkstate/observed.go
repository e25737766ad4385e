package linkstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// Observed is what a shard last saw of one source partition.
type Observed struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// End is the source's last stable offset; Mirrored the next source
	// offset the mirror would copy.
	End      int64 `json:"end"`
	Mirrored int64 `json:"mirrored"`
	// LastMirroredMs is the source timestamp of the last record copied
	// (0: unknown); ObservedAtMs when End was read.
	LastMirroredMs int64 `json:"last_mirrored_ms"`
	ObservedAtMs   int64 `json:"observed_at_ms"`
	// Paused is the id of the pause the shard was holding when it
	// observed (see Pause): it copied nothing since.
	Paused string `json:"paused,omitempty"`
}

// ShardView is one record of the link's ends topic (Link.EndsTopic): what
// one shard last saw of its partitions. Each shard writes its whole view,
// keyed by its id, about once a second; its newest record is its view.
type ShardView struct {
	Shard      int32      `json:"shard"`
	Partitions []Observed `json:"partitions"`
	// Errors maps the shard's partitions the target refuses
	// ("topic/partition") to the error.
	Errors map[string]string `json:"errors,omitempty"`
	// Reset is the link's last reset note (the target lost its data).
	Reset string `json:"reset,omitempty"`
}

// Message is v as the record of its shard in link's ends topic.
func (v ShardView) Message(link topology.Link) *sarama.ProducerMessage {
	raw, _ := json.Marshal(v)
	return &sarama.ProducerMessage{Topic: link.EndsTopic(), Partition: 0, Key: sarama.StringEncoder(strconv.Itoa(int(v.Shard))),
		Value: sarama.ByteEncoder(raw)}
}

// LastObserved reads, from the target of link, what the mirror last saw
// of every source partition.
func LastObserved(ctx context.Context, dst sarama.Client, link topology.Link) (map[topology.TopicPartition]Observed, error) {
	v, err := readEnds(ctx, dst, link)
	return v.observed, err
}

// endsView is everything the ends topic holds: the last observation of
// every partition, the errors of blocked partitions and the reset note.
type endsView struct {
	observed map[topology.TopicPartition]Observed
	errors   map[topology.TopicPartition]string
	reset    string
}

func readEnds(ctx context.Context, dst sarama.Client, link topology.Link) (endsView, error) {
	v := endsView{observed: map[topology.TopicPartition]Observed{}, errors: map[topology.TopicPartition]string{}}
	out := v.observed
	info, err := kafkaread.Topic(ctx, dst, link.EndsTopic())
	if err != nil {
		return v, err
	}
	if !info.Exists {
		return v, nil
	}
	latest, err := latestEnds(ctx, dst, link)
	if err != nil {
		return v, err
	}
	for _, raw := range latest {
		rec, err := decodeObserved(raw)
		if err != nil {
			continue
		}
		for name, msg := range rec.Errors {
			if i := strings.LastIndexByte(name, '/'); i > 0 {
				if p, err := strconv.Atoi(name[i+1:]); err == nil {
					v.errors[topology.TopicPartition{Topic: name[:i], Partition: int32(p)}] = msg
				}
			}
		}
		if rec.Reset != "" {
			v.reset = rec.Reset
		}
		for _, o := range rec.Partitions {
			tp := topology.TopicPartition{Topic: o.Topic, Partition: o.Partition}
			if old, ok := out[tp]; !ok || o.ObservedAtMs > old.ObservedAtMs {
				out[tp] = o
			}
		}
	}
	return v, nil
}

// errWindowRead ends the read of one window of the ends topic.
var errWindowRead = errors.New("window read")

// latestEnds returns the last record of every key (shard) of the ends
// topic. Every shard writes its whole view each time, about once a second,
// so only the newest record per shard counts; the topic is compacted but
// its active segment holds every write (at 10,000 partitions about 190 KB
// per shard per second). It therefore reads from the end backwards, in
// windows growing fourfold, until it has a record from every shard of the
// link (the shards topic's partition count) or reached the log start. A
// shard's tombstone (Reshard) is returned as a nil record.
func latestEnds(ctx context.Context, dst sarama.Client, link topology.Link) (map[string][]byte, error) {
	ends, err := kafkaread.PartitionEnds(ctx, dst, link.EndsTopic(), 0)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", link.EndsTopic(), err)
	}
	shards := 0
	if info, err := kafkaread.Topic(ctx, dst, link.ShardsTopic()); err == nil && info.Exists {
		shards = info.Partitions
	}
	latest := map[string][]byte{}
	upper := ends.Stable
	for window := int64(max(4*shards, 16)); upper > ends.Start; window *= 4 {
		from := max(ends.Start, upper-window)
		seen := map[string][]byte{}
		if _, err := kafkaread.ReadCommitted(ctx, dst, link.EndsTopic(), 0, from, func(r kafkaread.Record) error {
			if r.Offset >= upper {
				return errWindowRead
			}
			seen[string(r.Key)] = r.Value
			return nil
		}); err != nil && !errors.Is(err, errWindowRead) {
			return nil, fmt.Errorf("read %s: %w", link.EndsTopic(), err)
		}
		for k, raw := range seen {
			if _, newer := latest[k]; !newer {
				latest[k] = raw
			}
		}
		upper = from
		if shards > 0 && shardsSeen(latest, shards) >= shards {
			break
		}
	}
	return latest, nil
}

// shardsSeen counts the keys of latest that are shards of a link of
// shards shards: a shard of a count the link had before (Reshard) may
// still have a record, or a tombstone, there.
func shardsSeen(latest map[string][]byte, shards int) int {
	n := 0
	for k := range latest {
		if id, err := strconv.Atoi(k); err == nil && id >= 0 && id < shards {
			n++
		}
	}
	return n
}

// decodeObserved decodes one record of the ends topic.
func decodeObserved(raw []byte) (ShardView, error) {
	var rec ShardView
	err := json.Unmarshal(raw, &rec)
	return rec, err
}
