package verify

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// Both sides are read with read_committed fetches of one partition each,
// sent to the partition's leader as the session's client knows it (its
// metadata is read once, for every partition, before the partitions are
// compared), and decoded by kafkaread.CommittedRecords. A reader per
// partition asks no metadata of its own: with thousands of partitions in
// a topic, one metadata request per partition and side, each answered with
// every partition of the topic, cost more than the records.

// rangeFetchBytes is the partition byte limit of a fetch reading a range
// whole.
const rangeFetchBytes int32 = 1 << 20

// fetcher sends read_committed fetches for one partition.
type fetcher struct {
	ctx     context.Context
	client  sarama.Client
	tp      topology.TopicPartition
	version int16
	broker  *sarama.Broker
}

func newFetcher(ctx context.Context, client sarama.Client, tp topology.TopicPartition) (*fetcher, error) {
	v, err := kafkaread.FetchVersion(client.Config().Version)
	if err != nil {
		return nil, err
	}
	return &fetcher{ctx: ctx, client: client, tp: tp, version: v}, nil
}

// fetchAt fetches the partition at off, asking for up to maxBytes of it
// (the first batch comes whole, whatever its size), retrying transient
// errors at a freshly looked-up leader.
func (f *fetcher) fetchAt(off int64, maxBytes int32) (*sarama.FetchResponseBlock, error) {
	return kafkaread.Retry(f.ctx, kafkaread.Brief, func(attempt int) (*sarama.FetchResponseBlock, error) {
		if f.broker == nil || attempt > 0 {
			if err := f.findLeader(attempt > 0); err != nil {
				return nil, err
			}
		}
		return f.fetch(off, maxBytes)
	})
}

func (f *fetcher) findLeader(refresh bool) error {
	_, err := kafkaread.Await(f.ctx, func() (struct{}, error) {
		if refresh {
			if err := f.client.RefreshMetadata(f.tp.Topic); err != nil {
				return struct{}{}, err
			}
		}
		leader, err := f.client.Leader(f.tp.Topic, f.tp.Partition)
		if err != nil {
			return struct{}{}, err
		}
		if err := kafkaread.Connected(f.ctx, leader, f.client.Config()); err != nil {
			return struct{}{}, err
		}
		f.broker = leader
		return struct{}{}, nil
	})
	if err != nil {
		f.broker = nil
		return fmt.Errorf("find the leader of %s: %w", f.tp, err)
	}
	return nil
}

// fetch sends one fetch, outside any fetch session. The data asked for
// lies below the last stable offset, so the broker need not wait for it.
func (f *fetcher) fetch(off int64, maxBytes int32) (*sarama.FetchResponseBlock, error) {
	req := &sarama.FetchRequest{Version: f.version, MaxWaitTime: 0, MinBytes: 0, MaxBytes: max(maxBytes, rangeFetchBytes), Isolation: sarama.ReadCommitted}
	if f.version >= 7 {
		req.SessionEpoch = -1
	}
	req.AddBlock(f.tp.Topic, f.tp.Partition, off, maxBytes, -1)
	resp, err := kafkaread.Await(f.ctx, func() (*sarama.FetchResponse, error) { return f.broker.Fetch(req) })
	if err != nil {
		return nil, err
	}
	if resp.ErrorCode != 0 {
		return nil, sarama.KError(resp.ErrorCode)
	}
	block := resp.GetBlock(f.tp.Topic, f.tp.Partition)
	if block == nil {
		return nil, sarama.ErrIncompleteResponse
	}
	if !errors.Is(block.Err, sarama.ErrNoError) {
		return nil, block.Err
	}
	return block, nil
}

// records yields the committed records of tp in [from, to), reading as it
// goes: at most one fetch response is held at a time. A range that starts
// below the log start is read from the log start (the records before it
// are gone); a partition whose last stable offset lies below to (it was
// truncated or recreated since the range was chosen) ends there.
func records(ctx context.Context, client sarama.Client, tp topology.TopicPartition, from, to int64) Records {
	return func(yield func(kafkaread.Record, error) bool) {
		if from >= to {
			return
		}
		fail := func(err error) { yield(kafkaread.Record{}, err) }
		f, err := newFetcher(ctx, client, tp)
		if err != nil {
			fail(err)
			return
		}
		next, maxBytes, stalls := max(from, 0), rangeFetchBytes, 0
		for next < to {
			block, err := f.fetchAt(next, maxBytes)
			if errors.Is(err, sarama.ErrOffsetOutOfRange) {
				ends, eerr := kafkaread.PartitionEnds(ctx, client, tp.Topic, tp.Partition)
				switch {
				case eerr != nil:
					fail(fmt.Errorf("read %s at offset %d: %w", tp, next, eerr))
					return
				case next < ends.Start:
					next = ends.Start // deleted below: read on from the log start
					continue
				case next >= ends.High:
					return // the log ends before the range
				}
			}
			if err != nil {
				fail(fmt.Errorf("read %s at offset %d: %w", tp, next, err))
				return
			}
			stopped := false
			moved, partial, err := kafkaread.CommittedRecords(block, next, to, func(r kafkaread.Record) error {
				if !yield(r, nil) {
					stopped = true
					return errStop
				}
				return nil
			})
			switch {
			case stopped:
				return
			case err != nil:
				fail(fmt.Errorf("read %s at offset %d: %w", tp, moved, err))
				return
			case moved > next:
				next, maxBytes, stalls = moved, rangeFetchBytes, 0
			case partial && maxBytes < 1<<30:
				maxBytes *= 2
			case block.LastStableOffset <= next:
				return // nothing committed past next: the partition ends before the range
			default:
				stalls++
				if stalls >= int(kafkaread.Brief.Tries) {
					fail(fmt.Errorf("read %s: no progress at offset %d after %d fetches (last stable offset %d)", tp, next, stalls, block.LastStableOffset))
					return
				}
				if err := kafkaread.Sleep(ctx, kafkaread.Brief.Pause(stalls-1)); err != nil {
					fail(fmt.Errorf("read %s at offset %d: %w", tp, next, err))
					return
				}
			}
		}
	}
}

var errStop = errors.New("stop")

// batchReader looks up committed records of one partition at chosen
// offsets, in increasing order, keeping the records of its last fetch: an
// offset within the batches already fetched costs no request. Each fetch
// asks for as little as the broker may send: its first batch, whole.
type batchReader struct {
	f *fetcher
	// recs are the committed records of [lo, hi), read by the last fetch;
	// they point into its response.
	recs   []kafkaread.Record
	lo, hi int64
	n      int64 // committed records decoded
}

// sampleFetchBytes is the partition byte limit of a sampled fetch: a
// broker returns the first batch at the offset whole even when it is
// larger (KIP-74), so the smallest limit reads one batch.
const sampleFetchBytes int32 = 1

func newBatchReader(ctx context.Context, client sarama.Client, tp topology.TopicPartition) (*batchReader, error) {
	f, err := newFetcher(ctx, client, tp)
	if err != nil {
		return nil, err
	}
	return &batchReader{f: f, lo: -1, hi: -1}, nil
}

func (b *batchReader) decoded() int64 { return b.n }

func (b *batchReader) at(off int64) (kafkaread.Record, bool, error) {
	if off < b.lo || off >= b.hi {
		if err := b.read(off); err != nil {
			return kafkaread.Record{}, false, err
		}
	}
	i, found := slices.BinarySearchFunc(b.recs, off, func(r kafkaread.Record, off int64) int {
		switch {
		case r.Offset < off:
			return -1
		case r.Offset > off:
			return 1
		}
		return 0
	})
	if !found {
		return kafkaread.Record{}, false, nil
	}
	return b.recs[i], true, nil
}

// read fetches the batches at off: afterwards [lo, hi) starts at off and
// holds its committed records.
func (b *batchReader) read(off int64) error {
	b.recs, b.lo, b.hi = b.recs[:0], off, off+1
	maxBytes := sampleFetchBytes
	for stalls := 0; ; {
		block, err := b.f.fetchAt(off, maxBytes)
		if errors.Is(err, sarama.ErrOffsetOutOfRange) {
			return nil // below the log start (deleted) or past its end: no record at off
		}
		if err != nil {
			return fmt.Errorf("read %s at offset %d: %w", b.f.tp, off, err)
		}
		moved, partial, err := kafkaread.CommittedRecords(block, off, math.MaxInt64, func(r kafkaread.Record) error {
			b.recs = append(b.recs, r)
			b.n++
			return nil
		})
		if err != nil {
			return fmt.Errorf("read %s at offset %d: %w", b.f.tp, off, err)
		}
		switch {
		case moved > off:
			b.hi = moved
			return nil
		case partial && maxBytes < 1<<30:
			maxBytes = max(2*maxBytes, 64<<10)
		case block.LastStableOffset <= off:
			return nil // nothing committed at or past off
		default:
			stalls++
			if stalls >= int(kafkaread.Brief.Tries) {
				return fmt.Errorf("read %s: no progress at offset %d after %d fetches", b.f.tp, off, stalls)
			}
			if err := kafkaread.Sleep(b.f.ctx, kafkaread.Brief.Pause(stalls-1)); err != nil {
				return fmt.Errorf("read %s at offset %d: %w", b.f.tp, off, err)
			}
		}
	}
}
