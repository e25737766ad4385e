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

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/kvstore"
	"github.com/drctl/drctl/topology"
)

// Proof is the mirror verifier's watermark of one source partition, kept
// on the link's target (Link.ProofTopic, key "topic/partition") next to
// the offset map: how far the link's copies were compared with their
// source records, by reading both clusters, and what was found. A
// restarted verifier resumes from Next, not from the partition's start.
//
// Offsets are source offsets unless named Target. [From, Proven) is the
// stretch found identical: in full mode every record of it was compared
// and the standby holds no other record among their copies; in sample mode
// every Sample-th record of it was compared (no difference seen, which
// proves nothing of the others). After a difference Proven stays where
// the first one was found; Checked goes on.
type Proof struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Mode is "full" or "sample"; Sample is N of sample mode (1 in full).
	Mode   string `json:"mode"`
	Sample int    `json:"sample"`
	// From is the first source offset the verifier compared (-1: none yet).
	From   int64 `json:"from"`
	Proven int64 `json:"proven"`
	// Checked ends what the verifier looked at; TargetChecked is the
	// standby offset its last round read up to.
	Checked       int64 `json:"checked"`
	TargetChecked int64 `json:"target_checked"`
	// Next is where the next round starts: Checked, or in sample mode the
	// next sampled offset past it.
	Next int64 `json:"next"`
	// Records counts the records compared so far; Differences the
	// differences found. FirstDifference describes the first one.
	Records         int64  `json:"records"`
	Differences     int64  `json:"differences"`
	FirstDifference string `json:"first_difference,omitempty"`
	// At is when the verifier last wrote the record.
	At time.Time `json:"at"`
}

// TopicPartition names the proof's partition.
func (p Proof) TopicPartition() topology.TopicPartition {
	return topology.TopicPartition{Topic: p.Topic, Partition: p.Partition}
}

// ReadProofs returns the link's proof records on its target by partition;
// none when the target has no proof topic (no verifier ran, or the target
// was wiped since).
func ReadProofs(ctx context.Context, dst sarama.Client, link topology.Link) (map[topology.TopicPartition]Proof, error) {
	all, err := kvstore.All(ctx, dst, link.ProofTopic())
	if err != nil {
		return nil, err
	}
	out := make(map[topology.TopicPartition]Proof, len(all))
	for key, raw := range all {
		var p Proof
		if err := json.Unmarshal(raw, &p); err != nil || p.Topic == "" || p.TopicPartition().String() != key {
			return nil, fmt.Errorf("%s: record %q is unreadable (%v)", link.ProofTopic(), key, err)
		}
		out[p.TopicPartition()] = p
	}
	return out, nil
}

// WriteProofs writes proofs to the link's proof topic on the target
// through p, a producer of the target that writes each record to the
// partition it names (kafkaconn.Clusters.Producer), creating the topic
// when missing.
func WriteProofs(ctx context.Context, dst sarama.Client, p sarama.SyncProducer, link topology.Link, proofs []Proof) error {
	if len(proofs) == 0 {
		return nil
	}
	if err := kafkaread.EnsureTopics(ctx, dst, topology.KeyedTopic(link.ProofTopic(), 0)); err != nil {
		return fmt.Errorf("create %s: %w", link.ProofTopic(), err)
	}
	msgs := make([]*sarama.ProducerMessage, 0, len(proofs))
	for _, pr := range proofs {
		raw, err := json.Marshal(pr)
		if err != nil {
			return err
		}
		msgs = append(msgs, &sarama.ProducerMessage{Topic: link.ProofTopic(), Partition: 0,
			Key: sarama.StringEncoder(pr.TopicPartition().String()), Value: sarama.ByteEncoder(raw)})
	}
	done := make(chan error, 1)
	go func() { done <- p.SendMessages(msgs) }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("write %s: %w", link.ProofTopic(), err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("write %s: %w", link.ProofTopic(), ctx.Err())
	}
}

// Differing returns the proofs that recorded a difference, sorted by
// partition.
func Differing(proofs map[topology.TopicPartition]Proof) []Proof {
	var out []Proof
	for _, p := range proofs {
		if p.Differences > 0 {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b Proof) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}
