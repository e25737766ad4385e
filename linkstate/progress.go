package linkstate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/offsetcommit"
	"github.com/drctl/drctl/offsettranslate"
	"github.com/drctl/drctl/topology"
)

// The link's progress on its target.
//
// Every transaction of a shard writes the offset map's batch for what it
// copied, and each entry of the batch carries the partition's next source
// offset (SourceNext): the offset map alone says how far the copy went.
// The progress group (Link.ProgressGroup) holds checkpoints of it, which
// the engine writes now and then (mirror/checkpoint.go says when).
//
// A checkpoint's metadata names the offset map's partition and the offset
// just after the transaction's batch. A read of the progress replays the
// batches from there (replayProgress): a partition's shard never changes
// (mirror.ShardOf), so its later batches are all in that partition, and a
// checkpoint is always written together with the batch before its offset.
// A checkpoint that was deleted (a topic reseeded) is not replayed: the
// partition has no progress, as before.

// MaxProgressMetadata bounds the length of a checkpoint's metadata
// (Progress.Metadata): "ts=" and a timestamp, " map=" with a partition and
// an offset, " id=" and a topic id.
const MaxProgressMetadata = 3 + 19 + 5 + 10 + 1 + 19 + 4 + 24

// ProgressWait is how a progress read treats a partition whose progress a
// transaction still being decided has committed.
type ProgressWait bool

const (
	// Settled waits until the transaction is decided and returns the
	// outcome: what resuming a copy needs (an older position would copy
	// again what the transaction commits).
	Settled ProgressWait = true
	// CommittedSoFar returns the progress committed before that
	// transaction at once. A lag measured from it is never under-counted
	// (the progress only grows), which is all a report needs: with
	// thousands of partitions and every shard committing, some partition
	// nearly always has a transaction in doubt, and waiting for none made
	// `drctl status` slow and the engine's lag gauge fail.
	CommittedSoFar ProgressWait = false
)

func progressNext(full map[topology.TopicPartition]Progress, err error) (map[topology.TopicPartition]int64, error) {
	if err != nil {
		return nil, err
	}
	out := make(map[topology.TopicPartition]int64, len(full))
	for tp, p := range full {
		out[tp] = p.Next
	}
	return out, nil
}

// Progress is the committed progress of one source partition: the
// next source offset to copy and the source timestamp (ms, 0: unknown) of
// the last record copied, kept in the commit's metadata so that the RPO's
// seconds survive a shard restart.
//
// The progress group holds checkpoints, not every transaction's progress
// (see the top of this file): a checkpoint's metadata also names the place
// in the offset map (MapPart, MapPos) after the transaction that wrote it.
// The offset map's batches from there on carry the partition's later
// progress (their SourceNext), and a read replays them. MapPos -1: no
// place (a checkpoint of an older drctl, or an at-least-once commit
// without one): the checkpoint is the progress.
//
// TopicID is the source topic id of the incarnation the checkpoint's
// shard copied ("": not recorded, by an older drctl). A checkpoint of
// another incarnation than the one the link mirrors now is no progress
// of it: a shard that wrote it late, after reseed-topic deleted the old
// incarnation's progress, must not make the new one start past records
// never copied.
type Progress struct {
	Next    int64
	LastTs  int64
	MapPart int32
	MapPos  int64
	TopicID string
}

// Metadata encodes a checkpoint's metadata: "ts=<ms> map=<p>@<offset>
// id=<topic id>", each field left out when unknown (LastTs 0, MapPos -1,
// TopicID ""). It is at most MaxProgressMetadata bytes long.
func (pe Progress) Metadata() *string {
	var fields []string
	if pe.LastTs > 0 {
		fields = append(fields, "ts="+strconv.FormatInt(pe.LastTs, 10))
	}
	if pe.MapPos >= 0 {
		fields = append(fields, "map="+strconv.FormatInt(int64(pe.MapPart), 10)+"@"+strconv.FormatInt(pe.MapPos, 10))
	}
	if pe.TopicID != "" && !strings.ContainsAny(pe.TopicID, " \t\n") {
		fields = append(fields, "id="+pe.TopicID)
	}
	if len(fields) == 0 {
		return nil
	}
	v := strings.Join(fields, " ")
	return &v
}

// ParseProgress decodes the metadata of a checkpoint of next (see
// Metadata); a field that does not parse is taken as unknown.
func ParseProgress(next int64, md string) Progress {
	pe := Progress{Next: next, MapPos: -1}
	for f := range strings.FieldsSeq(md) {
		if v, ok := strings.CutPrefix(f, "ts="); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
				pe.LastTs = n
			}
		} else if v, ok := strings.CutPrefix(f, "map="); ok {
			ps, os, found := strings.Cut(v, "@")
			part, perr := strconv.ParseInt(ps, 10, 32)
			off, oerr := strconv.ParseInt(os, 10, 64)
			if found && perr == nil && oerr == nil && part >= 0 && off >= 0 {
				pe.MapPart, pe.MapPos = int32(part), off
			}
		} else if v, ok := strings.CutPrefix(f, "id="); ok {
			pe.TopicID = v
		}
	}
	return pe
}

// ReadProgressFull reads the progress of tps with its metadata: each
// partition's checkpoint, then the offset map's batches committed after it
// (replayProgress). wait says what a partition with a transaction in doubt
// returns. mirrored, when not nil, gives the source topic id of the
// incarnation the link mirrors ("": unknown): a checkpoint of another
// incarnation is left out, and so is what the offset map holds after it.
func ReadProgressFull(ctx context.Context, dst sarama.Client, link topology.Link, tps []topology.TopicPartition, wait ProgressWait,
	mirrored func(topic string) string) (map[topology.TopicPartition]Progress, error) {
	out, err := ReadCheckpoints(ctx, dst, link.ProgressGroup(), tps, wait)
	if err != nil {
		return nil, err
	}
	if mirrored != nil {
		for tp, pe := range out {
			if want := mirrored(tp.Topic); want != "" && pe.TopicID != "" && pe.TopicID != want {
				delete(out, tp)
			}
		}
	}
	if err := replayProgress(ctx, dst, link.OffsetsTopic(), out, wait); err != nil {
		return nil, fmt.Errorf("offset map %s: %w", link.OffsetsTopic(), err)
	}
	return out, nil
}

// ReadCheckpoints reads the checkpoints of tps from the progress group.
func ReadCheckpoints(ctx context.Context, dst sarama.Client, group string, tps []topology.TopicPartition, wait ProgressWait) (map[topology.TopicPartition]Progress, error) {
	out := map[topology.TopicPartition]Progress{}
	if len(tps) == 0 {
		return out, nil
	}
	req := &sarama.OffsetFetchRequest{Version: 7, ConsumerGroup: group, RequireStable: bool(wait)}
	for _, tp := range tps {
		req.AddPartition(tp.Topic, tp.Partition)
	}
	err := kafkaread.WithCoordinator(ctx, dst, group, func(coord *sarama.Broker) error {
		resp, err := kafkaread.Await(ctx, func() (*sarama.OffsetFetchResponse, error) { return coord.FetchOffset(req) })
		if err != nil {
			return err
		}
		return collectProgress(resp, tps, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func collectProgress(resp *sarama.OffsetFetchResponse, tps []topology.TopicPartition, out map[topology.TopicPartition]Progress) error {
	switch resp.Err {
	case sarama.ErrNoError:
	case sarama.ErrGroupIDNotFound: // kfake's answer for a group with no offsets
		return nil
	default:
		return resp.Err
	}
	for _, tp := range tps {
		b := resp.GetBlock(tp.Topic, tp.Partition)
		if b == nil {
			continue
		}
		switch b.Err {
		case sarama.ErrNoError:
		case sarama.ErrUnknownTopicOrPartition, sarama.ErrGroupIDNotFound:
			continue
		default:
			return fmt.Errorf("%s: %w", tp, b.Err)
		}
		if b.Offset >= 0 {
			out[tp] = ParseProgress(b.Offset, b.Metadata)
		}
	}
	return nil
}

// CommitProgress commits progress outside a transaction (at-least-once),
// as a group with no members does: in one request, or in several when the
// coordinator could not write them as one (internal/offsetcommit); each
// partition's progress stands on its own, so a failure part way leaves
// some partitions' progress behind, which only means copying again.
func CommitProgress(ctx context.Context, dst sarama.Client, group string, offsets map[string][]*sarama.PartitionOffsetMetadata) error {
	type block struct {
		topic string
		p     *sarama.PartitionOffsetMetadata
		md    string
	}
	var blocks []block
	for topic, parts := range offsets {
		for _, p := range parts {
			md := ""
			if p.Metadata != nil {
				md = *p.Metadata
			}
			blocks = append(blocks, block{topic, p, md})
		}
	}
	chunks := offsetcommit.Chunks(len(blocks), func(i int) int {
		return offsetcommit.RecordBytes(group, blocks[i].topic, len(blocks[i].md))
	}, offsetcommit.MaxBytes)
	for _, ch := range chunks {
		req := &sarama.OffsetCommitRequest{Version: 7, ConsumerGroup: group, ConsumerGroupGeneration: -1}
		for _, b := range blocks[ch[0]:ch[1]] {
			req.AddBlock(b.topic, b.p.Partition, b.p.Offset, 0, b.md)
		}
		err := kafkaread.WithCoordinator(ctx, dst, group, func(coord *sarama.Broker) error {
			resp, err := kafkaread.Await(ctx, func() (*sarama.OffsetCommitResponse, error) { return coord.CommitOffset(req) })
			if err != nil {
				return err
			}
			var errs []error
			for topic, parts := range resp.Errors {
				for p, kerr := range parts {
					if kerr != sarama.ErrNoError {
						errs = append(errs, fmt.Errorf("%s/%d: %w", topic, p, kerr))
					}
				}
			}
			return errors.Join(errs...)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// ReadProgress returns the link's committed progress (the next source
// offset to copy) of the given source partitions, read from the target;
// partitions never mirrored are absent. A progress a transaction still
// being decided commits is never returned: the read waits (bounded by
// ctx) until the transaction settles. A checkpoint of another
// incarnation of a topic than the current one (one written late, after
// reseed-topic) is no progress of it, and its partition reads as never
// mirrored. The current incarnation is the one src holds; with src nil
// (the source is down), the one the link's topic ledger on the target
// names.
func ReadProgress(ctx context.Context, src, dst sarama.Client, link topology.Link, tps []topology.TopicPartition) (map[topology.TopicPartition]int64, error) {
	var mirrored func(string) string
	var err error
	if src != nil {
		mirrored, err = sourceIncarnations(ctx, src, tps)
	} else {
		mirrored, err = ledgerIncarnations(ctx, dst, link)
	}
	if err != nil {
		return nil, err
	}
	return progressNext(ReadProgressFull(ctx, dst, link, tps, Settled, mirrored))
}

// sourceIncarnations returns, for ReadProgressFull, the id of each topic of
// tps as src holds it now ("": unknown or gone).
func sourceIncarnations(ctx context.Context, src sarama.Client, tps []topology.TopicPartition) (func(string) string, error) {
	var topics []string
	seen := map[string]bool{}
	for _, tp := range tps {
		if !seen[tp.Topic] {
			seen[tp.Topic] = true
			topics = append(topics, tp.Topic)
		}
	}
	ids, err := kafkaread.TopicIDs(ctx, src, topics)
	if err != nil {
		return nil, fmt.Errorf("source topic ids: %w", err)
	}
	return func(topic string) string { return ids[topic] }, nil
}

// ledgerIncarnations returns, for ReadProgressFull, the source topic id of
// each topic as the link's topic ledger on dst records it.
func ledgerIncarnations(ctx context.Context, dst sarama.Client, link topology.Link) (func(string) string, error) {
	ledger, err := ReadTopicLedger(ctx, dst, link)
	if err != nil {
		return nil, fmt.Errorf("topic ledger %s: %w", link.TopicsTopic(), err)
	}
	return func(topic string) string { return ledger[topic].SourceID }, nil
}

// replayWindow bounds a report's replay (CommittedSoFar): it starts at
// most this many offsets before the newest checkpoint among the partitions
// asked for, in each partition of the offset map (the engine refreshes
// every partition's checkpoint often enough for that). A partition whose
// checkpoint is older (one the shard no longer owns: paused, removed) is
// reported from its checkpoint, which can only under-state its progress.
const replayWindow = 2000

// replayProgress brings the checkpoints in out up to date with the offset
// map's batches committed after each (see the top of this file). It reads
// each partition of the offset map that a checkpoint names once, from the
// earliest such checkpoint, to its last stable offset: a transaction still
// open is not replayed (its checkpoint, when it has one, is not returned
// either). A missing offsets topic, or a checkpoint beyond its partition's
// end (the topic recreated), leaves the checkpoints as they are.
func replayProgress(ctx context.Context, dst sarama.Client, topic string, out map[topology.TopicPartition]Progress, wait ProgressWait) error {
	newest := map[int32]int64{}
	for _, pe := range out {
		if pe.MapPos >= 0 {
			newest[pe.MapPart] = max(newest[pe.MapPart], pe.MapPos)
		}
	}
	from := map[int32]int64{}
	for _, pe := range out {
		if pe.MapPos < 0 || (wait == CommittedSoFar && pe.MapPos < newest[pe.MapPart]-replayWindow) {
			continue
		}
		if f, ok := from[pe.MapPart]; !ok || pe.MapPos < f {
			from[pe.MapPart] = pe.MapPos
		}
	}
	var (
		mu     sync.Mutex
		latest = map[topology.TopicPartition]int64{}
		errs   []error
		wg     sync.WaitGroup
	)
	for part, at := range from {
		wg.Go(func() {
			found := map[topology.TopicPartition]int64{}
			_, err := kafkaread.ReadCommitted(ctx, dst, topic, part, at, func(r kafkaread.Record) error {
				b, err := offsettranslate.DecodeBatch(r.Value)
				if err != nil {
					return fmt.Errorf("partition %d offset %d: %w", part, r.Offset, err)
				}
				for _, en := range b.Entries {
					tp := topology.TopicPartition{Topic: en.Topic, Partition: en.Partition}
					if pe, ok := out[tp]; ok && pe.MapPos >= 0 && pe.MapPart == part && r.Offset >= pe.MapPos {
						found[tp] = en.SourceNext
					}
				}
				return nil
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				maps.Copy(latest, found)
			case errors.Is(err, sarama.ErrUnknownTopicOrPartition), errors.Is(err, sarama.ErrOffsetOutOfRange):
				// Nothing after the checkpoints survives to replay.
			default:
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for tp, n := range latest {
		pe := out[tp]
		pe.Next = n
		out[tp] = pe
	}
	return nil
}
