package kafkaread

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/IBM/sarama"
)

// Record is one committed data record of a partition, as its producer wrote
// it.
type Record struct {
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []*sarama.RecordHeader
	Timestamp time.Time
}

// fetchMaxBytes bounds the bytes one fetch asks for. A broker still returns
// a first batch that is larger whole (KIP-74). Tests lower it to make reads
// cross fetch boundaries.
var fetchMaxBytes int32 = 1 << 20

// fetchMaxResponseBytes bounds a whole fetch response. It is kept well above
// the partition's share, as Kafka's own consumer does (fetch.max.bytes vs
// max.partition.fetch.bytes): kfake leaves the aborted-transaction list out
// of a partition that the response-level limit cut short.
const fetchMaxResponseBytes = 64 << 20

// fetchMaxWait is how long a broker may hold a fetch waiting for data. Reads
// only ask for offsets below the last stable offset, where data is ready, so
// this bounds only odd cases.
const fetchMaxWait = 100 // milliseconds

// ReadCommitted calls fn, in offset order, for every committed data record
// of the partition from offset from up to the partition's last stable
// offset as it stands when the call begins (the end). Control records and
// the records of aborted transactions are skipped. Reading stops at the end
// even while producers keep appending, so the call always terminates.
//
// It returns the offset to continue from: on success, the end (or from, when
// from is already at or past it); when fn fails, the offset of the record fn
// failed on, together with fn's error. A from below the log start offset
// (including a negative one) reads from the log start offset, because the
// records before it no longer exist; a from beyond the high-water mark is an
// error wrapping sarama.ErrOffsetOutOfRange (the log was truncated or the
// topic recreated). A missing topic or partition is an error wrapping
// sarama.ErrUnknownTopicOrPartition; the topic is never created.
//
// Each request is bounded by ctx and by the client's timeouts; retriable
// errors (leadership changes, broken connections) are retried a bounded
// number of times against a freshly looked-up leader.
func ReadCommitted(ctx context.Context, client sarama.Client, topic string, partition int32, from int64, fn func(Record) error) (int64, error) {
	if err := mustExist(ctx, client, topic, partition); err != nil {
		return from, fmt.Errorf("read %s/%d: %w", topic, partition, err)
	}
	version, err := FetchVersion(client.Config().Version)
	if err != nil {
		return from, fmt.Errorf("read %s/%d: %w", topic, partition, err)
	}
	var (
		broker   *sarama.Broker
		maxBytes = fetchMaxBytes
		stalls   int // consecutive fetches that moved nothing
	)
	// A failed fetch is sent again, to the leader looked up anew.
	fetchAt := func(offset int64, minBytes int32) (*sarama.FetchResponseBlock, error) {
		return Retry(ctx, Brief, func(attempt int) (*sarama.FetchResponseBlock, error) {
			if broker == nil || attempt > 0 {
				b, err := leader(ctx, client, topic, partition, attempt > 0)
				if err != nil {
					broker = nil
					return nil, fmt.Errorf("find leader: %w", err)
				}
				broker = b
			}
			return fetch(ctx, broker, version, topic, partition, offset, maxBytes, minBytes)
		})
	}
	// The first fetch also brings the partition's last stable offset, the
	// end of the read, so that a read from within the log asks for no
	// offsets first (three ListOffsets round trips, each a WAN's round trip
	// when the cluster is far). MinBytes 0: an empty partition answers at
	// once. Only a from outside the log (below its start, past its
	// high-water mark) is out of range; then the ends are asked for.
	next := max(from, 0)
	first, err := fetchAt(next, 0)
	var end int64
	switch {
	case errors.Is(err, sarama.ErrOffsetOutOfRange):
		ends, eerr := PartitionEnds(ctx, client, topic, partition)
		if eerr != nil {
			return from, fmt.Errorf("read %s/%d: %w", topic, partition, eerr)
		}
		if from > ends.High {
			return from, fmt.Errorf("read %s/%d from offset %d: the log ends at %d (truncated or recreated): %w",
				topic, partition, from, ends.High, sarama.ErrOffsetOutOfRange)
		}
		next, end, first = max(from, ends.Start), ends.Stable, nil
	case err != nil:
		return from, fmt.Errorf("read %s/%d at offset %d: %w", topic, partition, next, err)
	default:
		end = first.LastStableOffset
	}
	if next >= end {
		return max(from, end), nil
	}

	for next < end {
		var err error
		block := first
		if first = nil; block == nil {
			block, err = fetchAt(next, 1)
		}
		if errors.Is(err, sarama.ErrOffsetOutOfRange) {
			// Retention or DeleteRecords may have moved the log start
			// past next while we read.
			now, eerr := PartitionEnds(ctx, client, topic, partition)
			if eerr == nil && next < now.Start {
				next = now.Start
				continue
			}
		}
		if err != nil {
			return next, fmt.Errorf("read %s/%d at offset %d: %w", topic, partition, next, err)
		}

		moved, partial, err := CommittedRecords(block, next, end, fn)
		if err != nil {
			return moved, fmt.Errorf("read %s/%d at offset %d: %w", topic, partition, moved, err)
		}
		switch {
		case moved > next:
			next, stalls, maxBytes = moved, 0, fetchMaxBytes
		case partial && maxBytes < 1<<30:
			// Only part of the first batch fitted: ask for more.
			maxBytes *= 2
		default:
			stalls++
			if stalls >= int(Brief.Tries) {
				return next, fmt.Errorf("read %s/%d: no progress at offset %d after %d fetches (last stable offset %d)",
					topic, partition, next, stalls, end)
			}
			if err := Sleep(ctx, Brief.Pause(stalls-1)); err != nil {
				return next, fmt.Errorf("read %s/%d at offset %d: %w", topic, partition, next, err)
			}
		}
	}
	return next, nil
}

// FetchVersion picks the newest fetch version sarama and the configured
// Kafka version share; read_committed needs version 4 (Kafka 0.11), and
// every version it picks carries the aborted-transaction lists.
func FetchVersion(v sarama.KafkaVersion) (int16, error) {
	switch {
	case v.IsAtLeast(sarama.V2_7_0_0):
		return 12, nil
	case v.IsAtLeast(sarama.V2_1_0_0):
		return 10, nil
	case v.IsAtLeast(sarama.V0_11_0_0):
		return 5, nil
	}
	return 0, fmt.Errorf("read_committed fetches need Kafka 0.11 or newer (client version %s)", v)
}

// fetch sends one read_committed fetch for one partition, outside any fetch
// session, and returns that partition's block.
func fetch(ctx context.Context, b *sarama.Broker, version int16, topic string, partition int32, offset int64, maxBytes, minBytes int32) (*sarama.FetchResponseBlock, error) {
	req := &sarama.FetchRequest{
		Version:     version,
		MaxWaitTime: fetchMaxWait,
		MinBytes:    minBytes,
		MaxBytes:    max(fetchMaxResponseBytes, maxBytes),
		Isolation:   sarama.ReadCommitted,
	}
	if version >= 7 {
		req.SessionEpoch = -1 // a full fetch that opens no session
	}
	req.AddBlock(topic, partition, offset, maxBytes, -1)
	resp, err := Await(ctx, func() (*sarama.FetchResponse, error) { return b.Fetch(req) })
	if err != nil {
		return nil, err
	}
	if resp.ErrorCode != 0 {
		return nil, sarama.KError(resp.ErrorCode)
	}
	block := resp.GetBlock(topic, partition)
	if block == nil {
		return nil, sarama.ErrIncompleteResponse
	}
	if !errors.Is(block.Err, sarama.ErrNoError) {
		return nil, block.Err
	}
	return block, nil
}

// CommittedRecords hands fn the committed data records of one
// read_committed fetch response block with offsets in [next, end) (end may
// be math.MaxInt64: the broker returns nothing past the last stable
// offset), and returns the offset after the last batch it consumed, the
// position of the next fetch. partial reports that the block held only part
// of a batch, so nothing could be consumed and a larger fetch is needed.
// The records' keys, values and headers point into the response: a caller
// that keeps them past the response copies them.
//
// A batch is skipped whole when it is a control batch, or a transactional
// batch whose producer has an aborted transaction in the block's list that
// begins at or before the batch and whose abort marker has not been passed
// yet (the broker lists every aborted transaction overlapping the fetched
// range).
func CommittedRecords(block *sarama.FetchResponseBlock, next, end int64, fn func(Record) error) (moved int64, partial bool, err error) {
	aborted := append([]*sarama.AbortedTransaction(nil), block.AbortedTransactions...)
	slices.SortFunc(aborted, func(a, b *sarama.AbortedTransaction) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	abortedPIDs := map[int64]bool{}
	moved = next
	for _, records := range block.RecordsSet {
		if records.MsgSet != nil {
			return moved, false, fmt.Errorf("offset %d: legacy (pre-0.11) message format is not supported", moved)
		}
		batch := records.RecordBatch
		if batch == nil {
			continue
		}
		if batch.PartialTrailingRecord {
			return moved, moved == next, nil
		}
		if batch.FirstOffset >= end {
			break
		}
		last := batch.LastOffset()
		for len(aborted) > 0 && aborted[0].FirstOffset <= last {
			abortedPIDs[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		switch {
		case batch.Control:
			if isAbortMarker(batch) {
				delete(abortedPIDs, batch.ProducerID)
			}
		case batch.IsTransactional && abortedPIDs[batch.ProducerID]:
		default:
			for _, rec := range batch.Records {
				off := batch.FirstOffset + rec.OffsetDelta
				if off < moved || off >= end {
					continue
				}
				ts := batch.FirstTimestamp.Add(rec.TimestampDelta)
				if batch.LogAppendTime {
					ts = batch.MaxTimestamp
				}
				if err := fn(Record{Offset: off, Key: rec.Key, Value: rec.Value, Headers: rec.Headers, Timestamp: ts}); err != nil {
					return off, false, err
				}
				moved = off + 1
			}
		}
		// A batch never straddles the last stable offset; were it to, the
		// records at and past the end would be read by the next call.
		moved = max(moved, min(last+1, end))
	}
	return moved, false, nil
}

// isAbortMarker reports whether a control batch holds an ABORT marker: a
// control record's key is a version (int16) followed by a type (int16),
// where 0 is ABORT and 1 is COMMIT.
func isAbortMarker(batch *sarama.RecordBatch) bool {
	if len(batch.Records) == 0 || len(batch.Records[0].Key) < 4 {
		return false
	}
	return binary.BigEndian.Uint16(batch.Records[0].Key[2:4]) == 0
}
