package mirror

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/offsettranslate"
	"github.com/drctl/drctl/topology"
)

// ErrLinkRetired means the role state no longer allows this link to write:
// a failover moved the epoch or the direction. A shard that sees it stops
// for good; it is never retried under the same epoch.
var ErrLinkRetired = errors.New("mirror link retired by a newer role state")

// ErrFenced means another producer initialised the shard's transactional
// id: another worker took the shard over, or the link was fenced.
var ErrFenced = errors.New("mirror shard fenced")

// shard copies the source partitions that map to one shard, one Kafka
// transaction at a time. It is not safe for concurrent use; a worker runs
// at most one shard loop per shard.
type shard struct {
	id    int32
	e     *Engine
	log   *slog.Logger
	parts map[topology.TopicPartition]*partState
	order []topology.TopicPartition
	prod  sarama.AsyncProducer
	dst   sarama.Client // for progress reads and the state check
	srcCl sarama.Client
	cons  sarama.Consumer
	in    chan *sarama.ConsumerMessage
	// held is the bytes of the engine's budget this shard holds: records
	// admitted to in and not yet released by the end of their transaction.
	held   atomic.Int64
	fwd    sync.WaitGroup // the partitions' forwarders into in
	offPar int32          // partition of the offsets topic this shard writes
	// prodLimit is the producer's MaxMessageBytes (see Engine.shardLimit).
	prodLimit int

	// gen and refreshed: the engine's partitions generation and the time
	// when the shard last compared its partitions with the engine's.
	gen       uint64
	refreshed time.Time

	lastStable   time.Time // when the source ends were last read
	lastObserved time.Time // when the ends were last written to the target
	obs          sarama.SyncProducer
	// holding is the pause the shard holds (copying nothing), "" when
	// copying (see holdPaused).
	holding string
}

// partState is what a shard knows of one source partition.
type partState struct {
	tp       topology.TopicPartition
	pc       sarama.PartitionConsumer
	next     int64 // next source offset to copy (committed progress)
	stable   int64 // last stable offset seen on the source (-1 unknown)
	stableAt time.Time
	lastTs   int64     // source timestamp (ms) of the last record copied
	lastSeen time.Time // when a record of this partition last arrived
	stop     chan struct{}
}

type txnMeta struct {
	tp    topology.TopicPartition
	src   int64
	ts    time.Time
	bytes int // recordBytes of the copy
}

// run owns the shard until ctx ends or an error stops it. On return every
// transaction it opened is committed or aborted and its clients closed.
func (s *shard) run(ctx context.Context) (err error) {
	s.parts = map[topology.TopicPartition]*partState{}
	s.in = make(chan *sarama.ConsumerMessage, s.e.opts.ChannelBuffer)
	defer s.close()
	if err := s.open(ctx); err != nil {
		return err
	}
	tick := time.NewTicker(s.e.opts.IdleCheck)
	defer tick.Stop()
	for {
		if err := s.refreshPartitions(ctx); err != nil {
			return err
		}
		if s.e.PausedBy() != "" {
			if s.holdPaused(ctx, tick.C) {
				return nil
			}
			continue
		}
		var first *sarama.ConsumerMessage
		select {
		case first = <-s.in:
		case <-tick.C:
		case <-ctx.Done():
		}
		if first != nil && time.Since(s.lastStable) >= s.e.opts.IdleCheck {
			if _, err := s.refreshStable(ctx); err != nil {
				s.log.Warn("cannot read source end offsets", "err", err)
			}
		}
		s.observe(ctx)
		if first != nil {
			// A record in hand is committed even when ctx ends meanwhile:
			// a graceful stop commits what is in flight.
			if err := s.transact(ctx, first, nil); err != nil {
				return err
			}
			continue
		}
		if ctx.Err() != nil {
			return nil
		}
		if err := s.idle(ctx); err != nil {
			return err
		}
	}
}

// open creates the producer (fencing any earlier holder of the shard's
// transactional id), then checks the role state on the target, so that a
// link a failover retired can never write again: the failover records the
// new epoch on the target before it fences, and every write needs an
// initialised producer.
func (s *shard) open(ctx context.Context) error {
	e := s.e
	var err error
	s.dst, err = e.dial(ctx, e.dstCluster, nil)
	if err != nil {
		return err
	}
	s.prodLimit = e.shardLimit(s.id)
	s.prod, err = e.newProducer(s.id, s.prodLimit)
	if err != nil {
		if kafkaread.IsFenced(err) {
			return fmt.Errorf("shard %d: %w: %v", s.id, ErrFenced, err)
		}
		return fmt.Errorf("shard %d: open producer on %s: %w", s.id, e.link.Target, err)
	}
	if e.opts.Epoch >= 0 {
		st, found, err := rolestate.Read(ctx, s.dst, e.link.Topology)
		if err != nil {
			return fmt.Errorf("shard %d: read role state on %s: %w", s.id, e.link.Target, err)
		}
		if found && !e.opts.Allowed(st) {
			return fmt.Errorf("shard %d: %w: state is epoch %d (active %s), this link runs for epoch %d",
				s.id, ErrLinkRetired, st.Epoch, st.Active, e.opts.Epoch)
		}
	}
	s.srcCl, err = e.dial(ctx, e.srcCluster, func(c *sarama.Config) {
		c.Consumer.IsolationLevel = sarama.ReadCommitted
		c.Consumer.Return.Errors = true
		c.Consumer.Fetch.Default = e.opts.FetchBytes
		// One fetch response holds at most this much, however many
		// partitions the shard has: it bounds the memory of a shard.
		c.Consumer.Fetch.Max = int32(max(4<<20, s.prodLimit+1<<20))
		c.Consumer.MaxWaitTime = e.opts.FetchWait
		// Consumer.MaxProcessingTime stays at sarama's 100ms: a partition
		// whose records wait while the shard commits (or starts its other
		// partitions) is paused, not allowed to stall the broker consumer,
		// whose subscriptions the shard needs to go on.
		// Records wait in the shard's buffer, admitted by the engine's
		// budget; a partition's own channel only smooths its hand-over.
		c.ChannelBufferSize = 16
		c.Metadata.Full = false
	})
	if err != nil {
		return err
	}
	s.cons, err = sarama.NewConsumerFromClient(s.srcCl)
	if err != nil {
		return fmt.Errorf("shard %d: consumer on %s: %w", s.id, e.link.Source, err)
	}
	parts, err := e.offsetsPartitions(ctx, s.dst)
	if err != nil {
		return err
	}
	s.offPar = s.id % parts
	return nil
}

func (s *shard) close() {
	if s.obs != nil {
		_ = s.obs.Close()
	}
	if s.prod != nil {
		if s.prod.TxnStatus()&sarama.ProducerTxnFlagInTransaction != 0 {
			_ = s.prod.AbortTxn()
		}
		_ = s.prod.Close()
	}
	for _, p := range s.parts {
		s.stopPartition(p)
	}
	// Records still buffered are dropped (the next run of the shard reads
	// them again from its committed progress): give their bytes back once
	// no forwarder can add more.
	s.fwd.Wait()
	s.e.buf.release(s.held.Swap(0))
	if s.cons != nil {
		_ = s.cons.Close()
	}
	if s.srcCl != nil {
		_ = s.srcCl.Close()
	}
	if s.dst != nil {
		_ = s.dst.Close()
	}
}

// refreshPartitions starts copying partitions that joined the shard and
// stops those that left it (a conflict, a deleted topic).
func (s *shard) refreshPartitions(ctx context.Context) error {
	if limit := s.e.shardLimit(s.id); limit > s.prodLimit {
		return fmt.Errorf("shard %d: %w (%d -> %d bytes)", s.id, errResize, s.prodLimit, limit)
	}
	// The partitions change with a topic sync or a block, or when a
	// blocked partition's pause ends: between transactions, look again
	// only after a change or once per IdleCheck.
	gen := s.e.partsGen.Load()
	if gen == s.gen && time.Since(s.refreshed) < s.e.opts.IdleCheck {
		return nil
	}
	s.gen, s.refreshed = gen, time.Now()
	want := map[topology.TopicPartition]bool{}
	for _, tp := range s.e.partitionsOf(s.id) {
		want[tp] = true
	}
	var added []topology.TopicPartition
	for tp := range want {
		if _, ok := s.parts[tp]; !ok {
			added = append(added, tp)
		}
	}
	removed := false
	for tp, p := range s.parts {
		if !want[tp] {
			s.stopPartition(p)
			delete(s.parts, tp)
			removed = true
		}
	}
	// s.order lists exactly the partitions of s.parts, whatever changed:
	// a partition left in it after its removal crashed the process (#8).
	defer func() {
		if removed || len(added) > 0 {
			s.order = s.order[:0]
			for tp := range s.parts {
				s.order = append(s.order, tp)
			}
		}
	}()
	if len(added) == 0 {
		return nil
	}
	began := time.Now()
	progress, err := readProgressFull(ctx, s.dst, s.e.link.ProgressGroup(), added)
	if err != nil {
		return fmt.Errorf("shard %d: read progress on %s: %w", s.id, s.e.link.Target, err)
	}
	// The source ends of every added partition, in one request per broker
	// and kind: a shard of thousands of partitions starts them all at once
	// rather than one round trip after another.
	starts, serr := kafkaread.StartOffsets(ctx, s.srcCl, added)
	stables, lerr := kafkaread.StableOffsets(ctx, s.srcCl, added)
	parts := make([]*partState, len(added))
	errs := make([]error, len(added))
	sem := make(chan struct{}, startParallel)
	var wg sync.WaitGroup
	for i, tp := range added {
		p := &partState{tp: tp, next: -1, stable: -1, stop: make(chan struct{}), lastSeen: time.Now()}
		if pe, ok := progress[tp]; ok {
			p.next, p.lastTs = pe.next, pe.lastTs
		}
		var ends *srcEnds
		if serr == nil && lerr == nil {
			st, ok1 := starts[tp]
			lso, ok2 := stables[tp]
			if ok1 && ok2 {
				ends = &srcEnds{Start: st, Stable: lso}
			}
		}
		parts[i] = p
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = s.startPartition(ctx, p, ends)
		}()
	}
	wg.Wait()
	for i, p := range parts {
		if errs[i] != nil {
			s.e.metrics.Errors.WithLabelValues(s.e.link.String(), "source").Inc()
			s.log.Warn("cannot start partition", "partition", p.tp.String(), "err", errs[i])
			continue // retried at the next refresh
		}
		s.parts[p.tp] = p
	}
	s.log.Info("partitions started", "added", len(added), "copying", len(s.parts), "took", time.Since(began).Round(time.Millisecond))
	return nil
}

// startParallel bounds the partitions a shard starts at the same time
// (each start costs a few requests to the source).
const startParallel = 32

// srcEnds are a source partition's log start and last stable offset.
type srcEnds struct{ Start, Stable int64 }

// startPartition starts consuming p from its progress. A position below the
// source's log start means retention removed records before they were
// mirrored: they are counted as lost and copying goes on from the log start.
// A position beyond the source's end means the topic was recreated or
// truncated: the partition is refused, loudly, since copying the new log
// would mix two histories in one target partition. ends, when known, are
// the partition's source ends (else they are asked for). It may run
// concurrently with the starts of other partitions of the shard.
func (s *shard) startPartition(ctx context.Context, p *partState, ends *srcEnds) error {
	if ends == nil {
		e, err := kafkaread.PartitionEnds(ctx, s.srcCl, p.tp.Topic, p.tp.Partition)
		if err != nil {
			return err
		}
		ends = &srcEnds{Start: e.Start, Stable: e.Stable}
	}
	from := sarama.OffsetOldest
	if p.next >= 0 {
		switch {
		case p.next < ends.Start:
			lost := ends.Start - p.next
			s.e.metrics.Lost.WithLabelValues(s.e.link.String(), p.tp.Topic).Add(float64(lost))
			s.e.noteTrouble(p.tp, fmt.Sprintf("%d records removed by retention on %s before they were mirrored (offsets %d to %d)",
				lost, s.e.link.Source, p.next, ends.Start-1))
			s.log.Error("records lost to source retention", "partition", p.tp.String(), "lost", lost, "from", p.next, "to", ends.Start-1)
			from = ends.Start
		case p.next > ends.Stable:
			// Progress never passes the last stable offset: the mirror
			// copies committed records only.
			msg := fmt.Sprintf("mirrored position %d is beyond the source's end %d: the topic was recreated or truncated on %s; delete the target topic on %s to mirror it again, or exclude it",
				p.next, ends.Stable, s.e.link.Source, s.e.link.Target)
			s.e.noteTrouble(p.tp, msg)
			return errors.New(msg)
		default:
			from = p.next
		}
	}
	pc, err := s.cons.ConsumePartition(p.tp.Topic, p.tp.Partition, from)
	if err != nil {
		return err
	}
	p.pc = pc
	if from >= 0 {
		p.next = from
	} else {
		p.next = ends.Start
	}
	link := s.e.link.String()
	s.fwd.Go(func() {
		for {
			select {
			case m, ok := <-pc.Messages():
				if !ok {
					return
				}
				n := heldBytes(m)
				if !s.e.buf.acquire(n, p.stop) {
					return
				}
				s.held.Add(n)
				select {
				case s.in <- m:
				case <-p.stop:
					s.held.Add(-n)
					s.e.buf.release(n)
					return
				}
			case cerr, ok := <-pc.Errors():
				if !ok {
					return
				}
				s.e.metrics.Errors.WithLabelValues(link, "source").Inc()
				s.log.Warn("source fetch error", "partition", p.tp.String(), "err", cerr.Err)
			case <-p.stop:
				return
			}
		}
	})
	return nil
}

func (s *shard) stopPartition(p *partState) {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	if p.pc != nil {
		p.pc.AsyncClose()
	}
}

// produceFailed ends the transaction over a refused record. When the
// refusal is the partition's own (see partitionScoped) the partition is
// blocked first, so that the shard restarts without it.
func (s *shard) produceFailed(perr *sarama.ProducerError) error {
	tp := topology.TopicPartition{Topic: perr.Msg.Topic, Partition: perr.Msg.Partition}
	if md, ok := perr.Msg.Metadata.(txnMeta); ok && md.tp.Topic != "" && partitionScoped(perr.Err) {
		known := partState{next: -1, stable: -1}
		if p, ok := s.parts[tp]; ok {
			known = *p
		}
		s.e.block(tp, known, fmt.Errorf("source offset %d: %w", md.src, perr.Err))
		return fmt.Errorf("%w: %w", errPartitionBlocked, s.fail(fmt.Errorf("shard %d: produce to %s %s: %w", s.id, s.e.link.Target, tp, perr.Err)))
	}
	return s.fail(fmt.Errorf("shard %d: produce to %s %s: %w", s.id, s.e.link.Target, tp, perr.Err))
}

// fail aborts the open transaction and classifies err.
func (s *shard) fail(err error) error {
	link := s.e.link.String()
	if s.prod != nil && s.prod.TxnStatus()&sarama.ProducerTxnFlagInTransaction != 0 {
		_ = s.prod.AbortTxn()
	}
	s.e.metrics.Transactions.WithLabelValues(link, "aborted").Inc()
	if kafkaread.ProducerFenced(s.prod, err) {
		s.e.metrics.Errors.WithLabelValues(link, "fenced").Inc()
		return fmt.Errorf("%w: %v", ErrFenced, err)
	}
	s.e.metrics.Errors.WithLabelValues(link, "target").Inc()
	return err
}

// idle runs between batches when no record arrived for a while: it
// refreshes lag, and moves the progress of caught-up partitions past
// trailing source offsets that hold no committed record (transaction
// markers, aborted records), so that a drained link shows zero lag.
func (s *shard) idle(ctx context.Context) error {
	stable, err := s.refreshStable(ctx)
	if err != nil {
		s.e.metrics.Errors.WithLabelValues(s.e.link.String(), "source").Inc()
		s.log.Warn("cannot read source end offsets", "err", err)
		return nil
	}
	skip := map[topology.TopicPartition]int64{}
	probes := 0
	for _, tp := range s.order {
		p := s.parts[tp]
		lso, ok := stable[tp]
		if !ok || lso <= p.next {
			continue
		}
		// Probe only a partition whose consumer has been quiet: a few
		// offsets short of the end (trailing markers), or quiet for long
		// (a large aborted transaction). A probe costs a few requests, so
		// an idle pass makes a bounded number of them.
		quiet := time.Since(p.lastSeen)
		if quiet < s.e.opts.IdleCheck || (lso-p.next > 64 && quiet < 10*s.e.opts.IdleCheck) || probes >= maxProbes {
			continue
		}
		probes++
		found := false
		end, err := kafkaread.ReadCommitted(ctx, s.srcCl, tp.Topic, tp.Partition, p.next, func(kafkaread.Record) error {
			found = true
			return errStop
		})
		if err != nil && !errors.Is(err, errStop) {
			continue
		}
		if !found && end > p.next {
			skip[tp] = end
		}
	}
	if len(skip) == 0 {
		return nil
	}
	return s.transact(ctx, nil, skip)
}

var errStop = errors.New("stop")

// errResize restarts a shard whose producer is too small for a topic that
// joined it (a larger max.message.bytes).
var errResize = errors.New("a topic with larger records joined the shard: reopening its producer")

// maxProbes bounds the hole probes of one idle pass.
const maxProbes = 16

// provenance returns the headers of the copy: the source's headers without
// drctl's own, then the origin (kept from an earlier hop, else the source
// cluster) and this hop's source offset. own reports that the record came
// from the target cluster in the first place and must not go back
// (loop prevention), unless the link copies its own origin (a reseed).
func (s *shard) provenance(m *sarama.ConsumerMessage) (headers []sarama.RecordHeader, own bool) {
	origin := s.e.srcID
	headers = make([]sarama.RecordHeader, 0, len(m.Headers)+2)
	for _, h := range m.Headers {
		switch string(h.Key) {
		case HeaderOrigin:
			origin = h.Value
		case HeaderSourceOffset:
		default:
			headers = append(headers, *h)
		}
	}
	if !s.e.opts.CopyOwnOrigin && string(origin) == string(s.e.dstID) {
		return nil, true
	}
	var off [8]byte
	binary.BigEndian.PutUint64(off[:], uint64(m.Offset))
	headers = append(headers, sarama.RecordHeader{Key: []byte(HeaderOrigin), Value: origin},
		sarama.RecordHeader{Key: []byte(HeaderSourceOffset), Value: off[:]})
	return headers, false
}

// keyOf keeps a null key null.
func keyOf(k []byte) sarama.Encoder {
	if k == nil {
		return nil
	}
	return sarama.ByteEncoder(k)
}

func sortPairs(ps []offsettranslate.Pair) {
	// Acknowledgements of one partition arrive in order; sort defensively
	// with insertion sort, which is linear on sorted input.
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && ps[j].Target < ps[j-1].Target; j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}
