package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// Observed is what a shard last saw of one source partition.
type Observed struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// End is the source's last stable offset; Mirrored the next source
	// offset the mirror would copy.
	End      int64 `json:"end"`
	Mirrored int64 `json:"mirrored"`
	// LastMirroredMs is the source timestamp of the last record copied
	// (0: unknown); ObservedAtMs when End was read.
	LastMirroredMs int64 `json:"last_mirrored_ms"`
	ObservedAtMs   int64 `json:"observed_at_ms"`
	// Paused is the id of the pause the shard was holding when it
	// observed (see Pause): it copied nothing since.
	Paused string `json:"paused,omitempty"`
}

type observedRecord struct {
	Shard      int32      `json:"shard"`
	Partitions []Observed `json:"partitions"`
	// Errors maps the shard's partitions the target refuses
	// ("topic/partition") to the error.
	Errors map[string]string `json:"errors,omitempty"`
	// Reset is the link's last reset note (the target lost its data).
	Reset string `json:"reset,omitempty"`
}

// observe writes, at most once per IdleCheck, the shard's view of its
// partitions into the ends topic. It uses a plain producer of its own, not
// the shard's transactions, so the ends keep being recorded even while the
// target refuses the data itself. The write goes in the background
// (observer): the shard does not wait for it with a record in hand, which
// on a target busy creating topics cost a transaction up to a second. A
// failure is logged, never fatal.
func (s *shard) observe(ctx context.Context) {
	if time.Since(s.lastObserved) < s.e.opts.IdleCheck || (len(s.order) == 0 && len(s.e.blockedErrors(s.id)) == 0) {
		return
	}
	if time.Since(s.lastStable) >= s.e.opts.IdleCheck {
		// The callers read the ends first; they failed to.
		return
	}
	s.lastObserved = time.Now()
	s.obs.send(s.observedMessage())
}

// observer writes a shard's observations into the ends topic, one at a
// time and in order; an observation made while one is being written waits
// for it, and replaces any older one still waiting.
type observer struct {
	s  *shard
	wg sync.WaitGroup

	mu      sync.Mutex
	next    *sarama.ProducerMessage // waiting to be written
	writing bool
	prod    sarama.SyncProducer // the writer's, created at its first write
}

func (o *observer) send(m *sarama.ProducerMessage) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.next = m
	if o.writing {
		return
	}
	o.writing = true
	o.wg.Go(o.write)
}

func (o *observer) write() {
	for {
		o.mu.Lock()
		m := o.next
		o.next = nil
		if m == nil {
			o.writing = false
			o.mu.Unlock()
			return
		}
		o.mu.Unlock()
		if o.prod == nil {
			var err error
			if o.prod, err = kafkaconn.NewSyncProducer(o.s.e.dstCluster, kafkaconn.ManualPartitions); err != nil {
				o.prod = nil
				o.s.log.Warn("cannot record the source ends seen", "err", err)
				continue
			}
		}
		if _, _, err := o.prod.SendMessage(m); err != nil {
			o.s.log.Warn("cannot record the source ends seen", "err", err)
		}
	}
}

// close waits until every observation made is written (or failed to be),
// then closes the producer.
func (o *observer) close() {
	o.wg.Wait()
	if o.prod != nil {
		_ = o.prod.Close()
	}
}

func (s *shard) observedMessage() *sarama.ProducerMessage {
	rec := observedRecord{Shard: s.id, Errors: s.e.blockedErrors(s.id), Reset: s.e.ResetNote()}
	for _, tp := range s.order {
		p, ok := s.parts[tp]
		if !ok || p.stable < 0 {
			continue
		}
		rec.Partitions = append(rec.Partitions, Observed{Topic: tp.Topic, Partition: tp.Partition, End: p.stable, Mirrored: p.next,
			LastMirroredMs: p.lastTs, ObservedAtMs: p.stableAt.UnixMilli(), Paused: s.holding})
	}
	for tp, b := range s.e.heldOut(s.id) {
		if _, in := s.parts[tp]; in || b.stable < 0 {
			continue
		}
		rec.Partitions = append(rec.Partitions, Observed{Topic: tp.Topic, Partition: tp.Partition, End: b.stable, Mirrored: b.next,
			LastMirroredMs: b.lastTs, ObservedAtMs: b.stableAt.UnixMilli()})
	}
	raw, _ := json.Marshal(rec)
	return &sarama.ProducerMessage{Topic: s.e.link.EndsTopic(), Partition: 0, Key: sarama.StringEncoder(strconv.Itoa(int(s.id))),
		Value: sarama.ByteEncoder(raw), Metadata: &txnMeta{}}
}

// refreshStable reads the source's last stable offsets of the shard's
// partitions, and of its blocked partitions in their retry pause: records
// held back by a refusing target are counted like any other lag.
func (s *shard) refreshStable(ctx context.Context) (map[topology.TopicPartition]int64, error) {
	tps := s.order
	held := s.e.heldOut(s.id)
	if len(held) > 0 {
		tps = slices.Clone(s.order)
		for tp := range held {
			if _, in := s.parts[tp]; !in {
				tps = append(tps, tp)
			}
		}
	}
	stable, err := kafkaread.StableOffsets(ctx, s.srcCl, tps)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	s.applyEnds(stable, now)
	s.lastStable = now
	return stable, nil
}

// refreshEnds brings the shard's view of the source ends up to date, at
// most once per IdleCheck, without a request on the copy path (where a
// round trip to a distant source would stall the copy): a partition's end
// comes from its fetcher's latest response when that came within the last
// IdleCheck and FetchWait; the ends of the others (a partition waiting on
// the budget or after an error, a blocked partition in its retry pause) are
// read in the background and applied at a later call. An end is only ever
// replaced by one seen later.
func (s *shard) refreshEnds(ctx context.Context) {
	select {
	case r := <-s.endsRead:
		s.endsReading = false
		if r.err != nil {
			s.e.metrics.Errors.WithLabelValues(s.e.link.String(), "source").Inc()
			warn(ctx, s.log, "cannot read source end offsets", "err", r.err)
		} else {
			s.applyEnds(r.stable, r.at)
		}
	default:
	}
	now := time.Now()
	if now.Sub(s.lastStable) < s.e.opts.IdleCheck {
		return
	}
	// A fetch waits up to FetchWait for data and answers at once when some
	// comes: the end of a response that came within the last IdleCheck and
	// FetchWait is still the end, or a newer response is on its way.
	fresh := s.e.opts.IdleCheck + s.e.opts.FetchWait
	var unseen []topology.TopicPartition
	for _, tp := range s.order {
		p := s.parts[tp]
		if p.fp != nil {
			if lso, at, ok := p.fp.lastStable(); ok && now.Sub(at) < fresh {
				if at.After(p.stableAt) {
					p.stable, p.stableAt = lso, at
					s.e.setStable(tp, lso)
				}
				continue
			}
		}
		unseen = append(unseen, tp)
	}
	for tp := range s.e.heldOut(s.id) {
		if _, in := s.parts[tp]; !in {
			unseen = append(unseen, tp)
		}
	}
	s.lastStable = now
	if len(unseen) == 0 || s.endsReading {
		return
	}
	s.endsReading = true
	cl, out := s.srcCl, s.endsRead
	go func() {
		// Never blocks: out holds one result and one read runs at a time.
		stable, err := kafkaread.StableOffsets(ctx, cl, unseen)
		out <- endsResult{stable: stable, at: time.Now(), err: err}
	}()
}

// endsResult is a background read of source ends (see refreshEnds).
type endsResult struct {
	stable map[topology.TopicPartition]int64
	at     time.Time
	err    error
}

// applyEnds records source ends read at at, where nothing newer is known.
func (s *shard) applyEnds(stable map[topology.TopicPartition]int64, at time.Time) {
	for tp, lso := range stable {
		if p, ok := s.parts[tp]; ok {
			if !at.After(p.stableAt) {
				continue
			}
			p.stable, p.stableAt = lso, at
		} else {
			s.e.noteHeldEnd(tp, lso, at)
		}
		s.e.setStable(tp, lso)
	}
}

// LastObserved reads, from the target of link, what the mirror last saw
// of every source partition.
func LastObserved(ctx context.Context, dst sarama.Client, link topology.Link) (map[topology.TopicPartition]Observed, error) {
	v, err := readEnds(ctx, dst, link)
	return v.observed, err
}

// endsView is everything the ends topic holds: the last observation of
// every partition, the errors of blocked partitions and the reset note.
type endsView struct {
	observed map[topology.TopicPartition]Observed
	errors   map[topology.TopicPartition]string
	reset    string
}

func readEnds(ctx context.Context, dst sarama.Client, link topology.Link) (endsView, error) {
	v := endsView{observed: map[topology.TopicPartition]Observed{}, errors: map[topology.TopicPartition]string{}}
	out := v.observed
	info, err := kafkaread.Topic(ctx, dst, link.EndsTopic())
	if err != nil {
		return v, err
	}
	if !info.Exists {
		return v, nil
	}
	latest, err := latestEnds(ctx, dst, link)
	if err != nil {
		return v, err
	}
	for _, raw := range latest {
		rec, err := decodeObserved(raw)
		if err != nil {
			continue
		}
		for name, msg := range rec.Errors {
			if i := strings.LastIndexByte(name, '/'); i > 0 {
				if p, err := strconv.Atoi(name[i+1:]); err == nil {
					v.errors[topology.TopicPartition{Topic: name[:i], Partition: int32(p)}] = msg
				}
			}
		}
		if rec.Reset != "" {
			v.reset = rec.Reset
		}
		for _, o := range rec.Partitions {
			tp := topology.TopicPartition{Topic: o.Topic, Partition: o.Partition}
			if old, ok := out[tp]; !ok || o.ObservedAtMs > old.ObservedAtMs {
				out[tp] = o
			}
		}
	}
	return v, nil
}

// errWindowRead ends the read of one window of the ends topic.
var errWindowRead = errors.New("window read")

// latestEnds returns the last record of every key (shard) of the ends
// topic. Every shard writes its whole view each time, about once a second,
// so only the newest record per shard counts; the topic is compacted but
// its active segment holds every write (at 10,000 partitions about 190 KB
// per shard per second). It therefore reads from the end backwards, in
// windows growing fourfold, until it has a record from every shard of the
// link (the shards topic's partition count) or reached the log start. A
// shard's tombstone (Reshard) is returned as a nil record.
func latestEnds(ctx context.Context, dst sarama.Client, link topology.Link) (map[string][]byte, error) {
	ends, err := kafkaread.PartitionEnds(ctx, dst, link.EndsTopic(), 0)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", link.EndsTopic(), err)
	}
	shards := 0
	if info, err := kafkaread.Topic(ctx, dst, link.ShardsTopic()); err == nil && info.Exists {
		shards = info.Partitions
	}
	latest := map[string][]byte{}
	upper := ends.Stable
	for window := int64(max(4*shards, 16)); upper > ends.Start; window *= 4 {
		from := max(ends.Start, upper-window)
		seen := map[string][]byte{}
		if _, err := kafkaread.ReadCommitted(ctx, dst, link.EndsTopic(), 0, from, func(r kafkaread.Record) error {
			if r.Offset >= upper {
				return errWindowRead
			}
			seen[string(r.Key)] = r.Value
			return nil
		}); err != nil && !errors.Is(err, errWindowRead) {
			return nil, fmt.Errorf("read %s: %w", link.EndsTopic(), err)
		}
		for k, raw := range seen {
			if _, newer := latest[k]; !newer {
				latest[k] = raw
			}
		}
		upper = from
		if shards > 0 && shardsSeen(latest, shards) >= shards {
			break
		}
	}
	return latest, nil
}

// shardsSeen counts the keys of latest that are shards of a link of
// shards shards: a shard of a count the link had before (Reshard) may
// still have a record, or a tombstone, there.
func shardsSeen(latest map[string][]byte, shards int) int {
	n := 0
	for k := range latest {
		if id, err := strconv.Atoi(k); err == nil && id >= 0 && id < shards {
			n++
		}
	}
	return n
}

// decodeObserved decodes one record of the ends topic.
func decodeObserved(raw []byte) (observedRecord, error) {
	var rec observedRecord
	err := json.Unmarshal(raw, &rec)
	return rec, err
}
