package kafkaread

import (
	"context"
	"errors"
	"fmt"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/topology"
)

// Ends are the offsets that bound a partition's log.
type Ends struct {
	// Start is the log start offset: the first offset still held.
	Start int64
	// Stable is the last stable offset: every record below it belongs to
	// no transaction or to a decided one. A read_committed reader sees
	// nothing at or above it. Stable equals High when no transaction is
	// open on the partition.
	Stable int64
	// High is the high-water mark: the offset the next record will get.
	High int64
}

// PartitionEnds asks the partition's leader for its log start offset, last
// stable offset and high-water mark (three ListOffsets requests; the values
// may move between them, but Start <= Stable <= High holds for each).
// The topic must exist: see Topic.
func PartitionEnds(ctx context.Context, client sarama.Client, topic string, partition int32) (Ends, error) {
	var e Ends
	err := withLeader(ctx, client, topic, partition, func(b *sarama.Broker) error {
		var err error
		if e.Start, err = listOffset(ctx, client, b, topic, partition, sarama.OffsetOldest, sarama.ReadUncommitted); err != nil {
			return fmt.Errorf("log start offset: %w", err)
		}
		if e.High, err = listOffset(ctx, client, b, topic, partition, sarama.OffsetNewest, sarama.ReadUncommitted); err != nil {
			return fmt.Errorf("high-water mark: %w", err)
		}
		if e.Stable, err = listOffset(ctx, client, b, topic, partition, sarama.OffsetNewest, sarama.ReadCommitted); err != nil {
			return fmt.Errorf("last stable offset: %w", err)
		}
		return nil
	})
	if err != nil {
		return Ends{}, fmt.Errorf("end offsets of %s/%d: %w", topic, partition, err)
	}
	return e, nil
}

// LastStableOffset returns the partition's last stable offset (ListOffsets
// for the latest offset with isolation level read_committed).
func LastStableOffset(ctx context.Context, client sarama.Client, topic string, partition int32) (int64, error) {
	var lso int64
	err := withLeader(ctx, client, topic, partition, func(b *sarama.Broker) error {
		var err error
		lso, err = listOffset(ctx, client, b, topic, partition, sarama.OffsetNewest, sarama.ReadCommitted)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("last stable offset of %s/%d: %w", topic, partition, err)
	}
	return lso, nil
}

func listOffset(ctx context.Context, client sarama.Client, b *sarama.Broker, topic string, partition int32, at int64, iso sarama.IsolationLevel) (int64, error) {
	req := sarama.NewOffsetRequest(client.Config().Version)
	if iso == sarama.ReadCommitted && req.Version < 2 {
		return 0, fmt.Errorf("read_committed offsets need Kafka 0.11 or newer (client version %s)", client.Config().Version)
	}
	req.IsolationLevel = iso
	req.AddBlock(topic, partition, at, 1)
	resp, err := Await(ctx, func() (*sarama.OffsetResponse, error) { return b.GetAvailableOffsets(req) })
	if err != nil {
		return 0, err
	}
	block := resp.GetBlock(topic, partition)
	if block == nil {
		return 0, sarama.ErrIncompleteResponse
	}
	if !errors.Is(block.Err, sarama.ErrNoError) {
		return 0, block.Err
	}
	if req.Version == 0 {
		if len(block.Offsets) == 0 {
			return 0, sarama.ErrIncompleteResponse
		}
		return block.Offsets[0], nil
	}
	return block.Offset, nil
}

// withLeader runs op against the partition's leader, and again against a
// freshly looked-up leader after a Transient error, within the Brief
// policy. It first checks that the partition exists, so the client's own
// metadata requests never create the topic.
func withLeader(ctx context.Context, client sarama.Client, topic string, partition int32, op func(*sarama.Broker) error) error {
	if err := mustExist(ctx, client, topic, partition); err != nil {
		return err
	}
	return Do(ctx, Brief, func(attempt int) error {
		b, err := leader(ctx, client, topic, partition, attempt > 0)
		if err != nil {
			return fmt.Errorf("find leader: %w", err)
		}
		return op(b)
	})
}

// StableOffsets asks the leaders for the last stable offset of each
// partition (the read_committed end), one request per broker. Any
// partition it cannot measure makes the whole call fail.
func StableOffsets(ctx context.Context, client sarama.Client, tps []topology.TopicPartition) (map[topology.TopicPartition]int64, error) {
	return listOffsets(ctx, client, tps, sarama.OffsetNewest, sarama.ReadCommitted)
}

// HighWatermarks asks the leaders for the high-water mark of each
// partition, one request per broker. A partition's high-water mark is
// above its last stable offset (StableOffsets) while a transaction is open
// on it.
func HighWatermarks(ctx context.Context, client sarama.Client, tps []topology.TopicPartition) (map[topology.TopicPartition]int64, error) {
	return listOffsets(ctx, client, tps, sarama.OffsetNewest, sarama.ReadUncommitted)
}

// StartOffsets asks the leaders for the log start offset of each partition,
// one request per broker.
func StartOffsets(ctx context.Context, client sarama.Client, tps []topology.TopicPartition) (map[topology.TopicPartition]int64, error) {
	return listOffsets(ctx, client, tps, sarama.OffsetOldest, sarama.ReadCommitted)
}

func listOffsets(ctx context.Context, client sarama.Client, tps []topology.TopicPartition, at int64, iso sarama.IsolationLevel) (map[topology.TopicPartition]int64, error) {
	byBroker := map[*sarama.Broker]*sarama.OffsetRequest{}
	for _, tp := range tps {
		b, err := client.Leader(tp.Topic, tp.Partition)
		if err != nil {
			_ = client.RefreshMetadata(tp.Topic)
			if b, err = client.Leader(tp.Topic, tp.Partition); err != nil {
				return nil, fmt.Errorf("%s: leader: %w", tp, err)
			}
		}
		req, ok := byBroker[b]
		if !ok {
			req = &sarama.OffsetRequest{Version: 4, IsolationLevel: iso}
			byBroker[b] = req
		}
		req.AddBlock(tp.Topic, tp.Partition, at, 1)
	}
	// The brokers are asked at the same time: a report over thousands of
	// partitions waits for the slowest broker, not for the sum of them.
	type answer struct {
		b    *sarama.Broker
		resp *sarama.OffsetResponse
		err  error
	}
	answers := make(chan answer, len(byBroker))
	for b, req := range byBroker {
		go func() {
			resp, err := Await(ctx, func() (*sarama.OffsetResponse, error) {
				if err := Connected(ctx, b, client.Config()); err != nil {
					return nil, err
				}
				return b.GetAvailableOffsets(req)
			})
			answers <- answer{b, resp, err}
		}()
	}
	out := make(map[topology.TopicPartition]int64, len(tps))
	for range byBroker {
		a := <-answers
		if a.err != nil {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("list offsets on broker %d: %w", a.b.ID(), a.err)
		}
		for topic, parts := range a.resp.Blocks {
			for p, blk := range parts {
				if blk.Err != sarama.ErrNoError {
					return nil, fmt.Errorf("%s/%d: %w", topic, p, blk.Err)
				}
				out[topology.TopicPartition{Topic: topic, Partition: p}] = blk.Offset
			}
		}
	}
	return out, nil
}
