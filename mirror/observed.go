package mirror

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

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
	rec := linkstate.ShardView{Shard: s.id, Errors: s.e.blockedErrors(s.id), Reset: s.e.ResetNote()}
	for _, tp := range s.order {
		p, ok := s.parts[tp]
		if !ok || p.stable < 0 {
			continue
		}
		rec.Partitions = append(rec.Partitions, linkstate.Observed{Topic: tp.Topic, Partition: tp.Partition, End: p.stable, Mirrored: p.next,
			LastMirroredMs: p.lastTs, ObservedAtMs: p.stableAt.UnixMilli(), Paused: s.holding})
	}
	for tp, b := range s.e.heldOut(s.id) {
		if _, in := s.parts[tp]; in || b.stable < 0 {
			continue
		}
		rec.Partitions = append(rec.Partitions, linkstate.Observed{Topic: tp.Topic, Partition: tp.Partition, End: b.stable, Mirrored: b.next,
			LastMirroredMs: b.lastTs, ObservedAtMs: b.stableAt.UnixMilli()})
	}
	return rec.Message(s.e.link)
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
