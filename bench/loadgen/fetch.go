package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/IBM/sarama"
)

// record is one data record as a read_committed consumer sees it.
type record struct {
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []*sarama.RecordHeader
	Timestamp time.Time
}

// partReader reads one partition's committed data records from offset `next`
// up to (not including) offset `end`, with its own Fetch requests.
//
// It does not use sarama's PartitionConsumer because a read_committed reader
// must know when it has reached a given offset: transaction markers and
// aborted records are never delivered, so "the last record I got" never
// reaches the end offset. Here every fetched batch, data or control, moves
// `next` past it, so next >= end is a definite end.
//
// Aborted records are filtered as the Java consumer does: a transactional
// batch is skipped while its producer id has an aborted transaction (from the
// fetch response) that began at or before the batch and whose abort marker
// has not been passed yet.
type partReader struct {
	cl        sarama.Client
	topic     string
	partition int32
	next, end int64
	maxBytes  int32
	buf       []record
	fetches   int
}

func newPartReader(cl sarama.Client, topic string, partition int32, from, end int64) *partReader {
	return &partReader{cl: cl, topic: topic, partition: partition, next: from, end: end, maxBytes: 8 << 20}
}

// Next returns the next committed data record, or ok=false at the end.
func (r *partReader) Next() (rec record, ok bool, err error) {
	for len(r.buf) == 0 {
		if r.next >= r.end {
			return record{}, false, nil
		}
		if err := r.fetch(); err != nil {
			return record{}, false, err
		}
	}
	rec = r.buf[0]
	r.buf = r.buf[1:]
	return rec, true, nil
}

func (r *partReader) fetch() error {
	broker, err := r.cl.Leader(r.topic, r.partition)
	if err != nil {
		return fmt.Errorf("%s/%d: leader: %w", r.topic, r.partition, err)
	}
	req := &sarama.FetchRequest{
		Version:      12,
		MaxWaitTime:  200,
		MinBytes:     1,
		MaxBytes:     r.maxBytes,
		Isolation:    sarama.ReadCommitted,
		SessionID:    0,
		SessionEpoch: -1,
	}
	req.AddBlock(r.topic, r.partition, r.next, r.maxBytes, -1)
	resp, err := broker.Fetch(req)
	if err != nil {
		_ = r.cl.RefreshMetadata(r.topic)
		return fmt.Errorf("%s/%d: fetch at %d: %w", r.topic, r.partition, r.next, err)
	}
	r.fetches++
	block := resp.GetBlock(r.topic, r.partition)
	if block == nil {
		return fmt.Errorf("%s/%d: fetch at %d: no data for the partition in the response", r.topic, r.partition, r.next)
	}
	if !errors.Is(block.Err, sarama.ErrNoError) {
		return fmt.Errorf("%s/%d: fetch at %d: %w", r.topic, r.partition, r.next, block.Err)
	}
	if r.next < block.LogStartOffset {
		return fmt.Errorf("%s/%d: offset %d was deleted (log start offset %d)", r.topic, r.partition, r.next, block.LogStartOffset)
	}

	recs, next, err := decodeBlock(block, r.next, r.end, r.buf)
	if err != nil {
		return fmt.Errorf("%s/%d: %w", r.topic, r.partition, err)
	}
	r.buf = recs
	progressed := next > r.next
	r.next = next
	if !progressed {
		switch {
		case len(block.RecordsSet) > 0:
			// Only a partial batch: it is bigger than maxBytes.
			if r.maxBytes >= 1<<30 {
				return fmt.Errorf("%s/%d: a record batch at %d is larger than 1 GiB", r.topic, r.partition, r.next)
			}
			r.maxBytes *= 2
		case r.next < block.LastStableOffset && r.next < block.HighWaterMarkOffset:
			// Nothing returned although committed data should be there.
			// Let the caller retry; the next fetch usually brings it.
			time.Sleep(50 * time.Millisecond)
		default:
			// We asked beyond what is readable: `end` lies past the last
			// stable offset. Callers only read to offsets they got from
			// ListOffsets, so this is a transaction still in flight; wait.
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// decodeBlock appends the committed data records of a read_committed fetch
// response block with offsets in [next, end) to dst, and returns the offset
// to fetch next: past every complete batch, data or control. A trailing
// partial batch is left for the next fetch.
func decodeBlock(block *sarama.FetchResponseBlock, next, end int64, dst []record) ([]record, int64, error) {
	aborted := append([]*sarama.AbortedTransaction(nil), block.AbortedTransactions...)
	sort.Slice(aborted, func(i, j int) bool { return aborted[i].FirstOffset < aborted[j].FirstOffset })
	abortedPIDs := map[int64]bool{}
	for _, rs := range block.RecordsSet {
		b := rs.RecordBatch
		if b == nil {
			return dst, next, fmt.Errorf("got a legacy message set; only record batches (magic 2) are supported")
		}
		if b.PartialTrailingRecord {
			break
		}
		last := b.LastOffset()
		for len(aborted) > 0 && aborted[0].FirstOffset <= last {
			abortedPIDs[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		switch {
		case b.Control:
			if len(b.Records) > 0 && controlType(b.Records[0].Key) == 0 { // abort marker
				delete(abortedPIDs, b.ProducerID)
			}
		case b.IsTransactional && abortedPIDs[b.ProducerID]:
			// records of an aborted transaction
		default:
			for _, rec := range b.Records {
				off := b.FirstOffset + rec.OffsetDelta
				if off < next || off >= end {
					continue
				}
				ts := b.FirstTimestamp.Add(rec.TimestampDelta)
				if b.LogAppendTime {
					ts = b.MaxTimestamp
				}
				dst = append(dst, record{Offset: off, Key: rec.Key, Value: rec.Value, Headers: rec.Headers, Timestamp: ts})
			}
		}
		if last >= next {
			next = last + 1
		}
	}
	return dst, next, nil
}

// controlType is the type of a control record from its key (version int16,
// type int16): 0 abort, 1 commit; -1 if the key is too short.
func controlType(key []byte) int {
	if len(key) < 4 {
		return -1
	}
	return int(int16(binary.BigEndian.Uint16(key[2:4])))
}

// partOffsets is what ListOffsets says about one partition.
type partOffsets struct {
	Start int64 // log start offset
	End   int64 // read_committed: last stable offset; read_uncommitted: high-water mark
}

// listOffsets returns, for every partition of topic, the log start offset and
// the end offset seen with the given isolation level.
func listOffsets(cl sarama.Client, topic string, partitions int, level sarama.IsolationLevel) ([]partOffsets, error) {
	out := make([]partOffsets, partitions)
	byLeader := map[*sarama.Broker][]int32{}
	for p := range int32(partitions) {
		b, err := cl.Leader(topic, p)
		if err != nil {
			_ = cl.RefreshMetadata(topic)
			return nil, fmt.Errorf("%s/%d: leader: %w", topic, p, err)
		}
		byLeader[b] = append(byLeader[b], p)
	}
	for b, ps := range byLeader {
		for _, which := range []int64{sarama.OffsetOldest, sarama.OffsetNewest} {
			req := sarama.NewOffsetRequest(sarama.V3_6_0_0)
			req.IsolationLevel = level
			for _, p := range ps {
				req.AddBlock(topic, p, which, 1)
			}
			resp, err := b.GetAvailableOffsets(req)
			if err != nil {
				_ = cl.RefreshMetadata(topic)
				return nil, fmt.Errorf("%s: list offsets: %w", topic, err)
			}
			for _, p := range ps {
				blk := resp.GetBlock(topic, p)
				if blk == nil {
					return nil, fmt.Errorf("%s/%d: list offsets: partition missing from the response", topic, p)
				}
				if !errors.Is(blk.Err, sarama.ErrNoError) {
					_ = cl.RefreshMetadata(topic)
					return nil, fmt.Errorf("%s/%d: list offsets: %w", topic, p, blk.Err)
				}
				if which == sarama.OffsetOldest {
					out[p].Start = blk.Offset
				} else {
					out[p].End = blk.Offset
				}
			}
		}
	}
	return out, nil
}

// lastRecord finds the last committed data record of a partition below end
// (a last stable offset): it reads a window before end and widens it until it
// finds a data record or reaches the log start. ok=false: no data record.
func lastRecord(cl sarama.Client, topic string, partition int32, start, end int64) (record, bool, error) {
	for w := int64(32); ; w *= 8 {
		from := max(start, end-w)
		r := newPartReader(cl, topic, partition, from, end)
		var last record
		found := false
		for {
			rec, ok, err := r.Next()
			if err != nil {
				return record{}, false, err
			}
			if !ok {
				break
			}
			last, found = rec, true
		}
		if found || from == start {
			return last, found, nil
		}
	}
}
