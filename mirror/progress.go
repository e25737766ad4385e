package mirror

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/offsetcommit"
	"github.com/drctl/drctl/topology"
)

// progressWait is how a progress read treats a partition whose progress a
// transaction still being decided has committed.
type progressWait bool

const (
	// settled waits until the transaction is decided and returns the
	// outcome: what resuming a copy needs (an older position would copy
	// again what the transaction commits).
	settled progressWait = true
	// committedSoFar returns the progress committed before that
	// transaction at once. A lag measured from it is never under-counted
	// (the progress only grows), which is all a report needs: with
	// thousands of partitions and every shard committing, some partition
	// nearly always has a transaction in doubt, and waiting for none made
	// `drctl status` slow and the engine's lag gauge fail.
	committedSoFar progressWait = false
)

func progressNext(full map[topology.TopicPartition]progressEntry, err error) (map[topology.TopicPartition]int64, error) {
	if err != nil {
		return nil, err
	}
	out := make(map[topology.TopicPartition]int64, len(full))
	for tp, p := range full {
		out[tp] = p.next
	}
	return out, nil
}

// progressEntry is the committed progress of one source partition: the
// next source offset to copy and the source timestamp (ms, 0: unknown) of
// the last record copied, kept in the commit's metadata so that the RPO's
// seconds survive a shard restart.
//
// The progress group holds checkpoints, not every transaction's progress
// (see checkpoint.go): a checkpoint's metadata also names the place in the
// offset map (mapPart, mapPos) after the transaction that wrote it. The
// offset map's batches from there on carry the partition's later progress
// (their SourceNext), and a read replays them. mapPos -1: no place (a
// checkpoint of an older drctl, or an at-least-once commit without one):
// the checkpoint is the progress.
//
// topicID is the source topic id of the incarnation the checkpoint's
// shard copied ("": not recorded, by an older drctl). A checkpoint of
// another incarnation than the one the link mirrors now is no progress
// of it: a shard that wrote it late, after reseed-topic deleted the old
// incarnation's progress, must not make the new one start past records
// never copied.
type progressEntry struct {
	next    int64
	lastTs  int64
	mapPart int32
	mapPos  int64
	topicID string
}

// metadata encodes a checkpoint's metadata: "ts=<ms> map=<p>@<offset>
// id=<topic id>", each field left out when unknown (lastTs 0, mapPos -1,
// topicID "").
func (pe progressEntry) metadata() *string {
	var fields []string
	if pe.lastTs > 0 {
		fields = append(fields, "ts="+strconv.FormatInt(pe.lastTs, 10))
	}
	if pe.mapPos >= 0 {
		fields = append(fields, "map="+strconv.FormatInt(int64(pe.mapPart), 10)+"@"+strconv.FormatInt(pe.mapPos, 10))
	}
	if pe.topicID != "" && !strings.ContainsAny(pe.topicID, " \t\n") {
		fields = append(fields, "id="+pe.topicID)
	}
	if len(fields) == 0 {
		return nil
	}
	v := strings.Join(fields, " ")
	return &v
}

// parseProgressMetadata decodes the metadata of a checkpoint of next; a
// field that does not parse is taken as unknown.
func parseProgressMetadata(next int64, md string) progressEntry {
	pe := progressEntry{next: next, mapPos: -1}
	for f := range strings.FieldsSeq(md) {
		if v, ok := strings.CutPrefix(f, "ts="); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
				pe.lastTs = n
			}
		} else if v, ok := strings.CutPrefix(f, "map="); ok {
			ps, os, found := strings.Cut(v, "@")
			part, perr := strconv.ParseInt(ps, 10, 32)
			off, oerr := strconv.ParseInt(os, 10, 64)
			if found && perr == nil && oerr == nil && part >= 0 && off >= 0 {
				pe.mapPart, pe.mapPos = int32(part), off
			}
		} else if v, ok := strings.CutPrefix(f, "id="); ok {
			pe.topicID = v
		}
	}
	return pe
}

// readProgressFull reads the progress of tps with its metadata: each
// partition's checkpoint, then the offset map's batches committed after it
// (replayProgress). wait says what a partition with a transaction in doubt
// returns. mirrored, when not nil, gives the source topic id of the
// incarnation the link mirrors ("": unknown): a checkpoint of another
// incarnation is left out, and so is what the offset map holds after it.
func readProgressFull(ctx context.Context, dst sarama.Client, link topology.Link, tps []topology.TopicPartition, wait progressWait,
	mirrored func(topic string) string) (map[topology.TopicPartition]progressEntry, error) {
	out, err := readCheckpoints(ctx, dst, link.ProgressGroup(), tps, wait)
	if err != nil {
		return nil, err
	}
	if mirrored != nil {
		for tp, pe := range out {
			if want := mirrored(tp.Topic); want != "" && pe.topicID != "" && pe.topicID != want {
				delete(out, tp)
			}
		}
	}
	if err := replayProgress(ctx, dst, link.OffsetsTopic(), out, wait); err != nil {
		return nil, fmt.Errorf("offset map %s: %w", link.OffsetsTopic(), err)
	}
	return out, nil
}

// readCheckpoints reads the checkpoints of tps from the progress group.
func readCheckpoints(ctx context.Context, dst sarama.Client, group string, tps []topology.TopicPartition, wait progressWait) (map[topology.TopicPartition]progressEntry, error) {
	out := map[topology.TopicPartition]progressEntry{}
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

func collectProgress(resp *sarama.OffsetFetchResponse, tps []topology.TopicPartition, out map[topology.TopicPartition]progressEntry) error {
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
			out[tp] = parseProgressMetadata(b.Offset, b.Metadata)
		}
	}
	return nil
}

// commitProgress commits progress outside a transaction (at-least-once),
// as a group with no members does: in one request, or in several when the
// coordinator could not write them as one (internal/offsetcommit); each
// partition's progress stands on its own, so a failure part way leaves
// some partitions' progress behind, which only means copying again.
func commitProgress(ctx context.Context, dst sarama.Client, group string, offsets map[string][]*sarama.PartitionOffsetMetadata) error {
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
	return progressNext(readProgressFull(ctx, dst, link, tps, settled, mirrored))
}

// sourceIncarnations returns, for readProgressFull, the id of each topic of
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

// ledgerIncarnations returns, for readProgressFull, the source topic id of
// each topic as the link's topic ledger on dst records it.
func ledgerIncarnations(ctx context.Context, dst sarama.Client, link topology.Link) (func(string) string, error) {
	ledger, err := ReadTopicLedger(ctx, dst, link)
	if err != nil {
		return nil, fmt.Errorf("topic ledger %s: %w", link.TopicsTopic(), err)
	}
	return func(topic string) string { return ledger[topic].SourceID }, nil
}
