package kafkaread

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/topology"
)

// firstShare is each partition's byte share in a FirstTimestamps fetch: a
// first batch larger than it comes back partial, and the partition is left
// to the caller (at 1,000 partitions a request stays within 16 MiB).
const firstShare = 16 << 10

// firstChunk bounds the partitions of one FirstTimestamps request.
const firstChunk = 1000

var errFirstFound = errors.New("first record found")

// FirstTimestamps returns, for each partition in from, the timestamp of its
// first committed data record at or after from[tp] and before end[tp] (its
// last stable offset, say), read with one read_committed fetch per leader
// broker and 1,000 partitions rather than one read per partition: what a
// lag report needs to tell the age of the oldest record not yet mirrored
// at 10,000 partitions.
//
// A partition is missing from the result when that one fetch could not
// tell: its leader is unknown, its fetch failed, its first batch was larger
// than its share, or the records in its share were all aborted or control
// records. The caller reads those one by one (ReadCommitted) or leaves
// them unknown. The error is set only when ctx ended.
func FirstTimestamps(ctx context.Context, client sarama.Client, from, end map[topology.TopicPartition]int64) (map[topology.TopicPartition]Record, error) {
	out := make(map[topology.TopicPartition]Record, len(from))
	version, err := FetchVersion(client.Config().Version)
	if err != nil {
		// Too old a client version for read_committed fetches: every
		// partition is left to the caller's reads, which report it.
		return out, nil //nolint:nilerr // documented: only ctx's end is an error here
	}
	byBroker := map[*sarama.Broker][]topology.TopicPartition{}
	for tp := range from {
		if b, err := client.Leader(tp.Topic, tp.Partition); err == nil {
			byBroker[b] = append(byBroker[b], tp)
		}
	}
	// The brokers are read at the same time, each over its one
	// connection, chunk after chunk.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for b, tps := range byBroker {
		wg.Go(func() {
			for i := 0; i < len(tps) && ctx.Err() == nil; i += firstChunk {
				chunk := tps[i:min(i+firstChunk, len(tps))]
				found := firstOfChunk(ctx, client, b, version, chunk, from, end)
				mu.Lock()
				maps.Copy(out, found)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("first records: %w", err)
	}
	return out, nil
}

// firstOfChunk reads the first committed records of chunk, all led by b,
// with one fetch: see FirstTimestamps.
func firstOfChunk(ctx context.Context, client sarama.Client, b *sarama.Broker, version int16, chunk []topology.TopicPartition,
	from, end map[topology.TopicPartition]int64) map[topology.TopicPartition]Record {
	req := &sarama.FetchRequest{Version: version, MaxWaitTime: 0, MinBytes: 0,
		MaxBytes: fetchMaxResponseBytes, Isolation: sarama.ReadCommitted}
	if version >= 7 {
		req.SessionEpoch = -1
	}
	for _, tp := range chunk {
		req.AddBlock(tp.Topic, tp.Partition, from[tp], firstShare, -1)
	}
	resp, err := Await(ctx, func() (*sarama.FetchResponse, error) {
		if err := Connected(ctx, b, client.Config()); err != nil {
			return nil, err
		}
		return b.Fetch(req)
	})
	out := map[topology.TopicPartition]Record{}
	if err != nil || resp.ErrorCode != 0 {
		return out
	}
	for _, tp := range chunk {
		block := resp.GetBlock(tp.Topic, tp.Partition)
		if block == nil || !errors.Is(block.Err, sarama.ErrNoError) {
			continue
		}
		_, _, err := CommittedRecords(block, from[tp], end[tp], func(r Record) error {
			out[tp] = Record{Offset: r.Offset, Timestamp: r.Timestamp}
			return errFirstFound
		})
		if err != nil && !errors.Is(err, errFirstFound) {
			delete(out, tp)
		}
	}
	return out
}
