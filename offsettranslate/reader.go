package offsettranslate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
)

// ErrTruncated is wrapped by Follower.Poll's error when the offsets topic
// lost records the follower had not read yet (retention or DeleteRecords
// moved a partition's log start past the follower's position): entries are
// missing from the middle of the maps, so the follower cannot go on.
// Start a new one.
var ErrTruncated = errors.New("offsets topic truncated under the reader")

// Load reads the whole offsets topic of a link (topology.Link.OffsetsTopic) from the target
// cluster through client and returns its index.
//
// Only batches of committed transactions count: every partition of the
// topic is read with read_committed semantics, up to its last stable offset
// as it stands when the read begins, so a mirror transaction that aborted,
// or is still open, contributes nothing, and Load returns even while the
// mirror keeps writing. Batches before a partition's log start offset
// (deleted by retention) are gone; positions they covered translate as
// BeforeStart.
//
// A missing topic is an error wrapping sarama.ErrUnknownTopicOrPartition
// (the mirror of the link never ran); the topic is never created. A record
// that does not decode is an error wrapping ErrCorrupt or
// ErrUnsupportedVersion, naming its partition and offset. When the batches
// make the map of some partitions inconsistent, Load returns the index
// together with an error wrapping ErrInconsistent: those partitions
// translate as Unmapped, every other one is sound. Any other error comes
// with a nil index.
func Load(ctx context.Context, client sarama.Client, offsetsTopic string) (*Index, error) {
	f := NewFollower(offsetsTopic)
	if err := f.Poll(ctx, client); err != nil {
		if errors.Is(err, ErrInconsistent) {
			return f.Index(), err
		}
		return nil, err
	}
	return f.Index(), nil
}

// Follower keeps an Index up to date for a long-running process: it
// remembers how far it has read each partition of the offsets topic, and
// each Poll adds the batches committed since.
//
// Entries of one source partition sit in one partition of the offsets topic
// as long as the shard count stays the same. Right after it changed, they
// sit in two, and a Poll that reads the old shard's partition before its
// last batches commit and the new shard's partition after its first batch
// commits sees the new entries first: until the next Poll, positions in the
// late batches' range translate to the first record after them, and that
// next Poll finds the partition inconsistent (ErrInconsistent). A process
// that sees ErrInconsistent from a Follower should replace it with a new
// one; Load, or a Follower started after the old shards were fenced, reads
// the entries in order.
type Follower struct {
	topic string
	index *Index

	mu   sync.Mutex // serialises Poll
	next map[int32]int64
}

// NewFollower returns a follower of offsetsTopic that has read nothing.
func NewFollower(offsetsTopic string) *Follower {
	return &Follower{topic: offsetsTopic, index: &Index{}, next: map[int32]int64{}}
}

// Index is the follower's index. It is safe to translate with it while
// Poll runs in another goroutine.
func (f *Follower) Index() *Index { return f.index }

// Poll reads every partition of the offsets topic from where the follower
// left it up to the partition's last stable offset (as Load does) and adds
// the committed batches to the index. Partitions added to the topic since
// the last call are read from their start.
//
// Poll is all or nothing: when a read fails or a record does not decode,
// it adds nothing, keeps its positions and returns the error (the next
// call retries). Inconsistent entries (ErrInconsistent) are the exception:
// everything read is applied, positions move on, and the error reports the
// partitions that became inconsistent, once. A partition whose log start
// moved past the follower's position is an error wrapping ErrTruncated.
// Polls of one Follower run one at a time.
func (f *Follower) Poll(ctx context.Context, client sarama.Client) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	info, err := kafkaread.Topic(ctx, client, f.topic)
	if err != nil {
		return fmt.Errorf("read offset map: %w", err)
	}
	if !info.Exists {
		return fmt.Errorf("read offset map: topic %s: %w", f.topic, sarama.ErrUnknownTopicOrPartition)
	}
	var staged staging
	next := make(map[int32]int64, info.Partitions)
	for p := int32(0); p < int32(info.Partitions); p++ {
		from := f.next[p]
		if from > 0 {
			ends, err := kafkaread.PartitionEnds(ctx, client, f.topic, p)
			if err != nil {
				return fmt.Errorf("read offset map: %w", err)
			}
			if ends.Start > from {
				return fmt.Errorf("read offset map: %s/%d: log starts at %d, past the next offset to read %d: %w",
					f.topic, p, ends.Start, from, ErrTruncated)
			}
		}
		end, err := kafkaread.ReadCommitted(ctx, client, f.topic, p, from, func(r kafkaread.Record) error {
			b, err := DecodeBatch(r.Value)
			if err != nil {
				return fmt.Errorf("record at offset %d: %w", r.Offset, err)
			}
			staged.add(p, b)
			return nil
		})
		if err != nil {
			return fmt.Errorf("read offset map: %w", err)
		}
		next[p] = end
	}
	ierr := f.index.merge(&staged)
	maps.Copy(f.next, next)
	if ierr != nil {
		return fmt.Errorf("read offset map %s: %w", f.topic, ierr)
	}
	return nil
}
