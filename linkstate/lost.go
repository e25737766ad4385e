package linkstate

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kvstore"
	"github.com/drctl/drctl/topology"
)

// LostRange is a run of source records that left the source (retention,
// DeleteRecords) before the mirror copied them: offsets From to To of one
// partition, inclusive. The link keeps it on its target (Link.LostTopic)
// until an operator acknowledges it (AckLost), so a loss is on record
// after it stopped being pending and across restarts of the mirror.
type LostRange struct {
	Topic     string `json:"topic" yaml:"topic"`
	Partition int32  `json:"partition" yaml:"partition"`
	From      int64  `json:"from" yaml:"from"`
	To        int64  `json:"to" yaml:"to"`
	// Records is To-From+1: the offsets lost (transaction markers and
	// aborted records in the range included).
	Records int64 `json:"records" yaml:"records"`
	// At is when the mirror found the loss.
	At time.Time `json:"at" yaml:"at"`
	// stored is the key ReadLost found the range under (AckLost removes
	// that one).
	stored string
}

// TopicPartition names the range's partition.
func (r LostRange) TopicPartition() topology.TopicPartition {
	return topology.TopicPartition{Topic: r.Topic, Partition: r.Partition}
}

// String reads "orders/3 offsets 100-249 (150 records)".
func (r LostRange) String() string {
	return fmt.Sprintf("%s offsets %d-%d (%d records)", r.TopicPartition(), r.From, r.To, r.Records)
}

// key is the range's key in the lost topic: a later finding of the same
// loss (the mirror restarted before it copied past it) replaces it.
func (r LostRange) key() string { return fmt.Sprintf("%s@%d", r.TopicPartition(), r.From) }

// RecordLost writes r to the link's lost topic on the target (creating the
// topic when missing). The mirror skips the range only once this returned
// nil: a loss is never passed over without a record.
func RecordLost(ctx context.Context, dst sarama.Client, link topology.Link, r LostRange) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := kvstore.Put(ctx, dst, link.LostTopic(), r.key(), raw); err != nil {
		return fmt.Errorf("record the loss of %s on %s: %w", r, link.Target, err)
	}
	return nil
}

// ReadLost returns the link's recorded, unacknowledged losses, sorted by
// partition and offset; none when the target has no lost topic.
func ReadLost(ctx context.Context, dst sarama.Client, link topology.Link) ([]LostRange, error) {
	all, err := kvstore.All(ctx, dst, link.LostTopic())
	if err != nil {
		return nil, err
	}
	out := make([]LostRange, 0, len(all))
	for key, raw := range all {
		var r LostRange
		if err := json.Unmarshal(raw, &r); err != nil || r.Topic == "" || r.To < r.From {
			return nil, fmt.Errorf("%s: record %q is unreadable (%v): delete it with drctl mirror ack-lost after checking the topic", link.LostTopic(), key, err)
		}
		r.stored = key
		out = append(out, r)
	}
	sortLost(out)
	return out, nil
}

func sortLost(rs []LostRange) {
	slices.SortFunc(rs, func(a, b LostRange) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.From, b.From))
	})
}

// TotalLost sums the records of rs.
func TotalLost(rs []LostRange) int64 {
	var n int64
	for _, r := range rs {
		n += r.Records
	}
	return n
}

// SelectLost returns the ranges of rs on the given partitions (all of rs
// when which is empty), and the partitions of which that hold none.
func SelectLost(rs []LostRange, which []topology.TopicPartition) (picked []LostRange, unmatched []topology.TopicPartition) {
	if len(which) == 0 {
		return rs, nil
	}
	for _, tp := range which {
		n := 0
		for _, r := range rs {
			if r.TopicPartition() == tp {
				picked = append(picked, r)
				n++
			}
		}
		if n == 0 {
			unmatched = append(unmatched, tp)
		}
	}
	sortLost(picked)
	return slices.Compact(picked), unmatched
}

// AckLost acknowledges ranges: they are removed from the link's record
// (tombstones in its lost topic on the target). It returns how many it
// removed before an error.
func AckLost(ctx context.Context, dst sarama.Client, link topology.Link, ranges []LostRange) (int, error) {
	for i, r := range ranges {
		if err := kvstore.Put(ctx, dst, link.LostTopic(), cmp.Or(r.stored, r.key()), nil); err != nil {
			return i, fmt.Errorf("acknowledge the loss of %s: %w", r, err)
		}
	}
	return len(ranges), nil
}
