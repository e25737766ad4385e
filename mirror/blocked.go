package mirror

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/topology"
)

// A partition whose records the target refuses for a reason of its own (a
// record too large, an invalid record, a topic the target will not let
// drctl write) is blocked: it leaves its shard for Options.BlockedRetry, so
// the shard's other partitions go on copying, and its error shows in
// Troubles, in the ends topic (`drctl mirror lag`, status) and in
// drctl_mirror_partition_blocked. After the pause it is tried again; the
// first transaction that copies it clears the error.
//
// While it is out of its shard, the shard still reads its source end and
// records it in the ends topic with the partition's mirrored position, so
// that lag and the RPO of an unplanned failover count the records it holds
// back (a partition left out of the ends would read as fully mirrored).

// blockedPart is a partition the target refused.
type blockedPart struct {
	err   string
	until time.Time
	// next is the partition's mirrored position when it was blocked and
	// lastTs the source timestamp (ms) of its last copied record; stable
	// is its source end as last read while blocked (-1: not yet read).
	next, lastTs, stable int64
	stableAt             time.Time
}

// errPartitionBlocked marks a shard stop caused by one partition's
// refused records: the shard restarts at once, without that partition.
var errPartitionBlocked = errors.New("partition blocked")

// partitionScoped reports whether a produce error belongs to the records
// of one partition rather than to the shard's producer or connection.
func partitionScoped(err error) bool {
	for _, k := range []sarama.KError{sarama.ErrMessageSizeTooLarge, sarama.ErrInvalidMessage, sarama.ErrInvalidMessageSize,
		sarama.ErrInvalidTimestamp, sarama.ErrInvalidRecord, sarama.ErrTopicAuthorizationFailed, sarama.ErrPolicyViolation,
		sarama.ErrInvalidTopic} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// block takes tp out of its shard for the retry pause; p is what the shard
// knew of it (its committed progress and source end).
func (e *Engine) block(tp topology.TopicPartition, p partState, err error) {
	msg := fmt.Sprintf("the target %s refuses its records: %v; the partition is retried every %v, the others go on",
		e.link.Target, err, e.opts.BlockedRetry)
	e.mu.Lock()
	e.blocked[tp] = blockedPart{err: msg, until: time.Now().Add(e.opts.BlockedRetry),
		next: p.next, lastTs: p.lastTs, stable: p.stable, stableAt: p.stableAt}
	e.trouble[tp] = msg
	e.mu.Unlock()
	e.partsChanged()
	e.metrics.Errors.WithLabelValues(e.link.String(), "partition").Inc()
	e.setBlockedGauge(tp, 1)
	e.log.Error("partition blocked: the target refuses its records", "partition", tp.String(), "err", err, "retry_in", e.opts.BlockedRetry)
}

// copied clears the block of partitions a committed transaction copied.
func (e *Engine) copied(tps map[topology.TopicPartition]int64) {
	var cleared []topology.TopicPartition
	e.mu.Lock()
	for tp := range tps {
		if b, ok := e.blocked[tp]; ok {
			delete(e.blocked, tp)
			if e.trouble[tp] == b.err {
				delete(e.trouble, tp)
			}
			cleared = append(cleared, tp)
		}
	}
	e.mu.Unlock()
	if len(cleared) > 0 {
		e.partsChanged()
	}
	for _, tp := range cleared {
		e.setBlockedGauge(tp, 0)
		e.log.Info("partition copies again", "partition", tp.String())
	}
}

// blockedNow reports whether tp is in its retry pause.
func (e *Engine) blockedNowLocked(tp topology.TopicPartition, now time.Time) bool {
	b, ok := e.blocked[tp]
	return ok && now.Before(b.until)
}

// heldOut returns the blocked partitions of shard that are out of it now
// (in their retry pause), with what is known of them.
func (e *Engine) heldOut(shard int32) map[topology.TopicPartition]blockedPart {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	var out map[topology.TopicPartition]blockedPart
	for tp, b := range e.blocked {
		if ShardOf(tp.Topic, tp.Partition, e.opts.Shards) != shard || !e.blockedNowLocked(tp, now) || b.next < 0 {
			continue
		}
		if out == nil {
			out = map[topology.TopicPartition]blockedPart{}
		}
		out[tp] = b
	}
	return out
}

// noteHeldEnd records the source end of a blocked partition.
func (e *Engine) noteHeldEnd(tp topology.TopicPartition, lso int64, at time.Time) {
	e.mu.Lock()
	if b, ok := e.blocked[tp]; ok {
		b.stable, b.stableAt = lso, at
		e.blocked[tp] = b
	}
	e.mu.Unlock()
}

// blockedErrors returns the errors of shard's blocked partitions, keyed by
// "topic/partition", for the ends topic.
func (e *Engine) blockedErrors(shard int32) map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out map[string]string
	for tp, b := range e.blocked {
		if ShardOf(tp.Topic, tp.Partition, e.opts.Shards) != shard {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[tp.String()] = b.err
	}
	return out
}

// shardLimit is the producer's MaxMessageBytes for shard: the largest
// source max.message.bytes among its topics, at least sarama's default,
// at most kafkaconn.MaxProducerBytes.
func (e *Engine) shardLimit(shard int32) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	limit := defaultProducerBytes
	for _, tp := range e.byShard[shard] {
		if l := int(e.limits[tp.Topic]); l > kafkaDefaultMaxMessageBytes {
			limit = max(limit, l)
		}
	}
	return min(limit, kafkaconn.MaxProducerBytes)
}

// topicLimit is the largest batch the target topic takes (its copy of the
// source's max.message.bytes), less room for the batch header.
func (e *Engine) topicLimit(topic string) int {
	e.mu.Lock()
	n := int(e.limits[topic])
	e.mu.Unlock()
	if n <= 0 {
		n = defaultProducerBytes
	}
	return n - batchOverhead
}

const (
	// defaultProducerBytes is what the producer sends at most per record
	// batch when every topic has Kafka's default limit (1 MiB).
	defaultProducerBytes = 1000000
	// kafkaDefaultMaxMessageBytes is Kafka's default max.message.bytes: a
	// topic at it or below needs no larger producer.
	kafkaDefaultMaxMessageBytes = 1048588
	// batchOverhead is kept free below a topic's max.message.bytes for
	// the record batch header and per-record framing estimates.
	batchOverhead = 1024
)

// recordBytes estimates a record's size in a batch (key, value, headers
// and framing), the measure a broker applies to max.message.bytes.
func recordBytes(m *sarama.ProducerMessage) int {
	n := 32
	if m.Key != nil {
		n += m.Key.Length()
	}
	if m.Value != nil {
		n += m.Value.Length()
	}
	for _, h := range m.Headers {
		n += len(h.Key) + len(h.Value) + 8
	}
	return n
}

func (e *Engine) setBlockedGauge(tp topology.TopicPartition, v float64) {
	if e.metrics.Safety != nil {
		e.metrics.Safety.Blocked.WithLabelValues(e.link.String(), tp.Topic, strconv.Itoa(int(tp.Partition))).Set(v)
	}
}

// setBlockedGaugeLocked clears tp's gauge; e.mu is held (the gauge has its
// own lock).
func (e *Engine) setBlockedGaugeLocked(tp topology.TopicPartition) { e.setBlockedGauge(tp, 0) }
