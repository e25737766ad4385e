package mirror

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/offsettranslate"
	"github.com/drctl/drctl/topology"
)

// A shard copies in transactions that commit as soon as they can (group
// commit). A transaction starts with the first record that arrives, sends
// every record to the target the moment it is taken, and stops taking
// records (closes) at the first of:
//
//   - idle: every record sent is acknowledged and none is waiting: the
//     shard's partitions have nothing more right now;
//   - its window has passed since it started (see window);
//   - it holds MaxBatchRecords records or MaxBatchBytes bytes;
//   - the shard is asked to stop.
//
// Then it waits for the last acknowledgements and commits the records
// together with their offset map and the progress of their partitions.
// The offset map is sent with the records when the shard knows the offsets
// they get on the target (see predict), else after their acknowledgements.
// Records that arrive meanwhile wait for the next transaction, which takes
// them all at once: the busier the shard, the larger its transactions,
// without a fixed delay when it is not busy.
//
// The window is the transaction's longest time of taking records. It is
// TxnLinger while the shard keeps up, and grows towards TxnInterval with
// the square of the fill of the shard's buffer when the transaction starts
// (half full or more: TxnInterval): a backlog calls for large transactions
// (a commit costs the target's brokers several requests and writes a
// marker in every partition it touches, so a backlog copies at the speed
// of its transactions' count), a trickle for early ones (a record's
// latency is the time to the commit of its transaction). The square keeps
// the few records a busy moment leaves waiting from stretching the next
// window: 5% full gives a quarter of a percent of TxnInterval.
//
// None of this changes what a transaction holds: whole records of the
// shard's partitions in source order, each partition's offset map and
// progress in the same transaction; a failure anywhere aborts it and the
// shard restarts from its committed progress.

// txn is one transaction of a shard while it is built.
type txn struct {
	s     *shard
	start time.Time
	// next is the progress each touched partition commits: the source
	// offset after its last record taken (or an idle pass's skip).
	next    map[topology.TopicPartition]int64
	pairs   map[topology.TopicPartition][]offsettranslate.Pair
	tsOf    map[topology.TopicPartition]int64
	byTopic map[string][2]int
	skipped map[string]int
	// inflight bounds, per partition, the bytes sent and not yet
	// acknowledged to the partition's max.message.bytes when the producer
	// may build larger batches (a shard with a topic of larger records):
	// sarama batches what is in flight, and a batch over the topic's limit
	// would be refused whole.
	inflight map[topology.TopicPartition]int
	// flying is the bytes of all copies sent and not yet acknowledged,
	// bounded by MaxInflightBytes (see mayQueue).
	flying int
	oldest time.Time
	// predicted is the offset the next record of each partition will get
	// on the target, -1 when not known (see predict); unknown is set when
	// any record taken has no predicted offset. mapSent: the offset map
	// is sent already.
	predicted map[topology.TopicPartition]int64
	unknown   bool
	mapSent   bool
	// mapEnd is the offset just after the transaction's last acknowledged
	// batch of the offset map (-1: none yet): where a checkpoint's replay
	// starts (see checkpoint.go).
	mapEnd int64
	// broken is set when a copy's offset was not the predicted one: the
	// transaction must not commit.
	broken error
	// last is each partition's last acknowledged target offset.
	last map[topology.TopicPartition]int64
	// records and bytes (key + value) taken, for the size limits; sent
	// and acked count what went to the producer and came back.
	records, bytes int
	sent, acked    int
	// pulled is the budget held by the records taken from the shard's
	// buffer and not yet released: a record's share is released when its
	// copy is acknowledged (or at once when it is not sent), the rest
	// when the transaction ends, committed or not.
	pulled int64
	// ckptBytes is the estimated size of the checkpoint entries of the
	// partitions in next; full: a record was left for the next
	// transaction because its partition would not have fitted (ckptFull).
	ckptBytes int
	full      bool
}

func (s *shard) newTxn() *txn {
	return &txn{
		s: s, start: time.Now(),
		next:      map[topology.TopicPartition]int64{},
		pairs:     map[topology.TopicPartition][]offsettranslate.Pair{},
		tsOf:      map[topology.TopicPartition]int64{},
		byTopic:   map[string][2]int{},
		inflight:  map[topology.TopicPartition]int{},
		predicted: map[topology.TopicPartition]int64{},
		last:      map[topology.TopicPartition]int64{},
		mapEnd:    -1,
	}
}

// txnToken waits for one of the engine's transaction tokens
// (Options.TxnConcurrency) and returns its release. A shard with a backlog
// (its buffer half full or more) takes none: the limit is for shards that
// keep up, whose records wait for a token rather than for a saturated
// target, and must never hold back a catch-up. When ctx ends the shard
// goes on without one: a graceful stop commits the record in hand.
func (s *shard) txnToken(ctx context.Context) (release func()) {
	tokens := s.e.txnTokens
	if tokens == nil || 2*len(s.in) >= cap(s.in) {
		return func() {}
	}
	select {
	case tokens <- struct{}{}:
		return func() { <-tokens }
	case <-ctx.Done():
		return func() {}
	}
}

// window is how long a transaction starting now may take records: see the
// comment at the top of this file.
func (s *shard) window() time.Duration {
	o := s.e.opts
	w := o.TxnLinger
	if c := cap(s.in); c > 0 {
		fill := min(1, 2*float64(len(s.in))/float64(c))
		w = max(w, time.Duration(fill*fill*float64(o.TxnInterval)))
	}
	return min(w, o.TxnInterval)
}

// take accepts m into the transaction and returns the record to send, or
// nil when there is nothing to send: a partition that left the shard, a
// re-delivery, or a record whose origin is the target (loop prevention;
// its offset still counts as copied).
func (t *txn) take(m *sarama.ConsumerMessage) *sarama.ProducerMessage {
	s := t.s
	tp := topology.TopicPartition{Topic: m.Topic, Partition: m.Partition}
	if t.ckptFull(tp, m.Offset) {
		// Left, still held in the budget, for the next transaction.
		s.carry, t.full = m, true
		return nil
	}
	held := heldBytes(m)
	t.pulled += held
	p, ok := s.parts[tp]
	if !ok || m.Offset < p.next {
		t.release(held)
		return nil
	}
	n, seen := t.next[tp]
	if seen && m.Offset < n {
		t.release(held)
		return nil // taken already: never copy a record twice in one transaction
	}
	if !seen {
		// The first record of a partition past its committed position
		// is the partition's oldest one not yet mirrored.
		s.e.metrics.LagSeconds.oldestPending(s.e.link.String(), tp, m.Timestamp)
		t.ckptBytes += s.ckptEntryBytes(tp.Topic)
	}
	t.next[tp] = m.Offset + 1
	t.records++
	t.bytes += len(m.Value) + len(m.Key)
	c := new(copyRecord)
	headers, own := s.provenance(m, c.headers[:0], &c.offset)
	if own {
		if t.skipped == nil {
			t.skipped = map[string]int{}
		}
		t.skipped[m.Topic]++
		t.release(held)
		return nil
	}
	pm := &c.msg
	c.value = m.Value
	*pm = sarama.ProducerMessage{
		Topic: m.Topic, Partition: m.Partition, Value: &c.value,
		Headers: headers, Timestamp: m.Timestamp,
	}
	if m.Key != nil { // a null key stays null
		c.key = m.Key
		pm.Key = &c.key
	}
	c.meta = txnMeta{tp: tp, src: m.Offset, ts: m.Timestamp, bytes: recordBytes(pm), target: t.predict(tp), held: held}
	if c.meta.target >= 0 {
		t.pairs[tp] = append(t.pairs[tp], offsettranslate.Pair{Source: c.meta.src, Target: c.meta.target})
	}
	pm.Metadata = &c.meta
	return pm
}

// ckptFull reports whether a record of tp at offset would add a partition
// whose checkpoint entry no longer fits the transaction's (an exactly-once
// checkpoint holds every partition the transaction touched, and is one
// commit request: see Options.MaxCheckpointBytes). The first partition
// always fits; a record that would not be copied (a partition that left,
// a re-delivery) never counts.
func (t *txn) ckptFull(tp topology.TopicPartition, offset int64) bool {
	s := t.s
	limit := s.e.opts.MaxCheckpointBytes
	if t.ckptBytes+s.ckptEntryBytes("")+maxTopicName <= limit || s.e.opts.Delivery != topology.ExactlyOnce || len(t.next) == 0 {
		return false // far from the bound: the common case, in one comparison
	}
	if _, seen := t.next[tp]; seen {
		return false
	}
	if p, ok := s.parts[tp]; !ok || offset < p.next {
		return false
	}
	return t.ckptBytes+s.ckptEntryBytes(tp.Topic) > limit
}

// copyRecord is a record's copy with what it carries, in one allocation:
// the copy loop makes one per record, and each allocation of its own was
// garbage to collect (a few percent of the mirror's CPU each).
type copyRecord struct {
	msg     sarama.ProducerMessage
	meta    txnMeta
	headers [4]sarama.RecordHeader // the source's (usually few) and provenance's two
	offset  [8]byte                // the source offset header's value
	// The key and value as the producer's encoders: a pointer to them
	// fits an interface without an allocation of its own.
	key, value sarama.ByteEncoder
}

// release gives back n bytes of the budget the transaction holds. A
// record's share goes back once the producer no longer holds it (its copy
// is acknowledged, or it is not sent at all): what the budget bounds is
// the records in memory, not the size of a transaction, so that a backlog
// can commit few large transactions without the mirror holding more.
func (t *txn) release(n int64) {
	t.pulled -= n
	t.s.held.Add(-n)
	t.s.e.buf.release(n)
}

// predict returns the target offset the next record taken for tp will get,
// or -1 when the shard cannot tell. Records reach the producer in the
// order they are taken, and the producer keeps a partition's order, so a
// partition's records follow each other from the tail its last committed
// transaction left (shard.tails), as long as nothing else writes it.
//
// A transaction whose every record has a predicted offset writes its
// offset map as soon as it stops taking records, with its records still in
// flight (see transact): the offset map and the records are then sent
// together instead of one after the other. Nothing is trusted: each
// acknowledgement must carry the predicted offset, or the transaction is
// aborted before it commits (errTargetMoved) and the partition is never
// predicted again by this process.
func (t *txn) predict(tp topology.TopicPartition) int64 {
	if t.s.e.opts.Delivery != topology.ExactlyOnce {
		t.unknown = true
		return -1
	}
	n, ok := t.predicted[tp]
	if !ok {
		n, ok = t.s.tails[tp]
		if !ok || t.s.e.unpredictable(tp) {
			n = -1
		}
	}
	if n < 0 {
		t.unknown = true
		t.predicted[tp] = -1
		return -1
	}
	t.predicted[tp] = n + 1
	return n
}

// offsetMapRecord is b as the record of the offset map this shard writes.
func (s *shard) offsetMapRecord(b offsettranslate.Batch) *sarama.ProducerMessage {
	return &sarama.ProducerMessage{Topic: s.e.link.OffsetsTopic(), Partition: s.offPar,
		Key: sarama.ByteEncoder(offsettranslate.ShardKey(s.id)), Value: sarama.ByteEncoder(offsettranslate.EncodeBatch(b)), Metadata: offsetMapMeta{}}
}

// offsetMapMeta marks the offset map's records among a transaction's
// acknowledgements.
type offsetMapMeta struct{}

// heldBytes is what a fetched record counts against the engine's budget:
// its key, value and headers, and room for its bookkeeping.
func heldBytes(m *sarama.ConsumerMessage) int64 {
	n := int64(len(m.Key) + len(m.Value) + 128)
	for _, h := range m.Headers {
		n += int64(len(h.Key) + len(h.Value) + 16)
	}
	return n
}

// mayQueue reports whether pm can go to the producer now without letting
// the shard's bytes in flight exceed MaxInflightBytes, or those of its
// partition the topic's limit. The first bound keeps what the producer
// holds (each record, and its copy in an encoded request) as small as it
// was when transactions were small, whatever the size of a transaction:
// the producer queues what it is given without a bound of its own.
func (t *txn) mayQueue(pm *sarama.ProducerMessage) bool {
	md, copied := pm.Metadata.(*txnMeta)
	if !copied {
		return true // the offset map
	}
	if t.flying > 0 && t.flying+md.bytes > t.s.e.opts.MaxInflightBytes {
		return false
	}
	limit := t.s.e.topicLimit(md.tp.Topic)
	if t.s.prodLimit <= limit {
		return true
	}
	n := t.inflight[md.tp]
	return n == 0 || n+md.bytes <= limit
}

func (t *txn) queued(pm *sarama.ProducerMessage) {
	t.sent++
	if md, copied := pm.Metadata.(*txnMeta); copied {
		t.inflight[md.tp] += md.bytes
		t.flying += md.bytes
	}
}

// ack takes the acknowledgement of a record sent in the transaction. A
// copy that did not get the offset predicted for it breaks the
// transaction (see transact).
func (t *txn) ack(ok *sarama.ProducerMessage) {
	t.acked++
	md, copied := ok.Metadata.(*txnMeta)
	if !copied {
		t.mapEnd = max(t.mapEnd, ok.Offset+1) // the offset map
		return
	}
	t.inflight[md.tp] -= md.bytes
	t.flying -= md.bytes
	t.release(md.held)
	switch {
	case md.target < 0:
		t.pairs[md.tp] = append(t.pairs[md.tp], offsettranslate.Pair{Source: md.src, Target: ok.Offset})
	case ok.Offset != md.target:
		if t.broken == nil {
			t.s.e.setUnpredictable(md.tp)
			t.broken = fmt.Errorf("shard %d: %w: %s source offset %d was written at target offset %d, not at %d: another writer on %s?",
				t.s.id, errTargetMoved, md.tp, md.src, ok.Offset, md.target, t.s.e.link.Target)
		}
	}
	t.last[md.tp] = max(t.last[md.tp], ok.Offset)
	t.tsOf[md.tp] = max(t.tsOf[md.tp], md.ts.UnixMilli())
	c := t.byTopic[md.tp.Topic]
	c[0]++
	c[1] += ok.Value.Length()
	if ok.Key != nil {
		c[1] += ok.Key.Length()
	}
	t.byTopic[md.tp.Topic] = c
	if t.oldest.IsZero() || md.ts.Before(t.oldest) {
		t.oldest = md.ts
	}
}

// fastSteps bounds the steps a transaction's loop takes between two full
// selects (see transact).
const fastSteps = 64

// transact runs one transaction: it starts with first (nil: a
// progress-only transaction for extra, positions moved past source holes),
// takes and sends records until it closes, and commits. Once begun it is
// committed even when ctx ends meanwhile (a graceful stop commits what is
// in flight); ctx only closes it early. Any failure aborts the transaction
// and is returned: the caller restarts the shard from committed progress.
func (s *shard) transact(ctx context.Context, first *sarama.ConsumerMessage, extra map[topology.TopicPartition]int64) error {
	e := s.e
	eos := e.opts.Delivery == topology.ExactlyOnce
	defer s.txnToken(ctx)()
	if eos {
		if err := s.prod.BeginTxn(); err != nil {
			return s.fail(fmt.Errorf("shard %d: begin transaction: %w", s.id, err))
		}
	}
	t := s.newTxn()
	defer func() { t.release(t.pulled) }()
	if eos {
		// An empty batch of the offset map opens the transaction, so that
		// the producer adds the offset map's partition to it together with
		// the first records' partitions: one AddPartitionsToTxn round trip
		// per transaction instead of a second one before the offset map is
		// written at the end. Readers of the offset map apply an empty batch
		// as nothing.
		s.prod.Input() <- s.offsetMapRecord(offsettranslate.Batch{Shard: s.id})
		t.sent++
	}
	maps.Copy(t.next, extra)
	for tp := range extra {
		t.ckptBytes += s.ckptEntryBytes(tp.Topic)
	}
	var pending *sarama.ProducerMessage // taken, not yet queued
	open := first != nil
	if open {
		pending = t.take(first)
	}
	window := time.NewTimer(s.window())
	defer window.Stop()
	closeAt, stop := window.C, ctx.Done()
	var timeout <-chan time.Time // bounds the wait for the last acknowledgements
	if !open {
		timeout = time.After(e.opts.ProduceTimeout)
	}
	closeIntake := func() {
		if open {
			open, closeAt, stop = false, nil, nil
			timeout = time.After(e.opts.ProduceTimeout)
		}
	}
	fast := 0 // steps taken without the select below since it last ran
	for {
		if open && (t.records >= e.opts.MaxBatchRecords || t.bytes >= e.opts.MaxBatchBytes || t.full) {
			closeIntake()
		}
		if t.broken != nil {
			// Nothing more is sent; the acknowledgements still on their
			// way are taken (the producer cannot abort before), then the
			// transaction is aborted.
			closeIntake()
			pending = nil
		}
		if pending == nil && (!open || len(s.in) == 0) {
			if t.acked == t.sent {
				break
			}
			if !open && eos && !t.unknown && !t.mapSent && t.broken == nil {
				// Closed with records in flight, each with its predicted
				// offset: send the offset map now (see predict).
				t.passMarkers()
				pending = s.offsetMapRecord(t.offsetMap())
				t.mapSent = true
				continue
			}
		}
		// Fast path: try, without blocking, the steps the select below
		// would take when they are ready at once (an acknowledgement, a
		// send, a record to take): a select over every case costs more
		// than the rest of a record's handling. Every fastSteps steps the
		// select runs anyway, so that errors, the window and a stop are
		// seen within that many records.
		if fast < fastSteps {
			fast++
			select {
			case ok := <-s.prod.Successes():
				t.ack(ok)
				continue
			default:
			}
			if pending != nil {
				if t.mayQueue(pending) {
					select {
					case s.prod.Input() <- pending:
						t.queued(pending)
						pending = nil
						continue
					default:
					}
				}
			} else if open {
				select {
				case m := <-s.in:
					pending = t.take(m)
					continue
				default:
				}
			}
		}
		fast = 0
		var in <-chan *sarama.ConsumerMessage
		if open && pending == nil {
			in = s.in
		}
		var input chan<- *sarama.ProducerMessage
		if pending != nil && t.mayQueue(pending) {
			input = s.prod.Input()
		}
		// Acknowledgements are drained while sending: the producer stops
		// taking input once its success channel is full.
		select {
		case m := <-in:
			pending = t.take(m)
		case input <- pending:
			t.queued(pending)
			pending = nil
		case ok := <-s.prod.Successes():
			t.ack(ok)
		case perr := <-s.prod.Errors():
			return s.produceFailed(perr)
		case <-closeAt:
			closeIntake()
		case <-stop:
			closeIntake()
		case <-timeout:
			return s.fail(fmt.Errorf("shard %d: produce to %s: %d of %d records unacknowledged after %v",
				s.id, e.link.Target, t.sent-t.acked, t.sent, e.opts.ProduceTimeout))
		}
	}
	if t.broken != nil {
		return s.fail(t.broken)
	}
	return t.commit(context.WithoutCancel(ctx))
}

// passMarkers moves the progress of each partition the transaction
// touched past the offsets after its last record that hold no committed
// data record (the commit marker of the source's own transaction, aborted
// records), up to the source's last stable offset, as far as the fetcher
// has passed them (fetchPart.skippable). Without it a copy of a
// transactional source ends one marker short of the end in every
// partition, and only the idle pass's progress-only transaction after it
// drains the link: a whole round of the target's transaction protocol,
// which waits for this transaction's markers first. It runs once the
// intake is closed and before the offset map is built, which carries the
// progress.
func (t *txn) passMarkers() {
	for tp, n := range t.next {
		p, ok := t.s.parts[tp]
		if !ok || p.fp == nil {
			continue
		}
		lso, _, ok := p.fp.lastStable()
		if !ok {
			continue
		}
		if to := min(p.fp.skippable(n), lso); to > n {
			t.next[tp] = to
		}
	}
}

// offsetMap is the transaction's batch of the offset map: per partition
// taken, its pairs of source and target offsets and its next source offset.
func (t *txn) offsetMap() offsettranslate.Batch {
	mb := offsettranslate.Batch{Shard: t.s.id, CommittedAtMs: time.Now().UnixMilli()}
	for tp, n := range t.next {
		ps := t.pairs[tp]
		sortPairs(ps)
		mb.Entries = append(mb.Entries, offsettranslate.Entry{Topic: tp.Topic, Partition: tp.Partition, Runs: offsettranslate.RunsFrom(ps), SourceNext: n})
	}
	return mb
}

// commit writes the offset map (unless sent already), adds the progress and commits; then it
// publishes what the transaction copied. Every record sent is acknowledged.
func (t *txn) commit(ctx context.Context) error {
	s, e := t.s, t.s.e
	link := e.link.String()
	eos := e.opts.Delivery == topology.ExactlyOnce
	acked := time.Now()
	if len(t.next) == 0 {
		if eos {
			_ = s.prod.AbortTxn()
		}
		return nil
	}
	if !t.mapSent {
		t.passMarkers()
		m := s.offsetMapRecord(t.offsetMap())
		s.prod.Input() <- m
		select {
		case ok := <-s.prod.Successes():
			t.mapEnd = max(t.mapEnd, ok.Offset+1)
		case perr := <-s.prod.Errors():
			return s.fail(fmt.Errorf("shard %d: write %s on %s: %w", s.id, m.Topic, e.link.Target, perr.Err))
		case <-time.After(e.opts.ProduceTimeout):
			return s.fail(fmt.Errorf("shard %d: write %s on %s: no acknowledgement within %v", s.id, m.Topic, e.link.Target, e.opts.ProduceTimeout))
		}
	}
	var ck map[topology.TopicPartition]linkstate.Progress
	if s.checkpointDue(t, t.records == 0) {
		ck = s.checkpoint(t, t.mapEnd)
	}
	offsets := map[string][]*sarama.PartitionOffsetMetadata{}
	for tp, pe := range ck {
		offsets[tp.Topic] = append(offsets[tp.Topic], &sarama.PartitionOffsetMetadata{Partition: tp.Partition, Offset: pe.Next,
			Metadata: pe.Metadata()})
	}
	if eos {
		if len(offsets) > 0 {
			if err := s.prod.AddOffsetsToTxn(offsets, e.link.ProgressGroup()); err != nil {
				return s.fail(fmt.Errorf("shard %d: add progress to transaction: %w", s.id, err))
			}
		}
		if err := s.prod.CommitTxn(); err != nil {
			return s.fail(fmt.Errorf("shard %d: commit transaction: %w", s.id, err))
		}
	} else if err := linkstate.CommitProgress(ctx, s.dst, e.link.ProgressGroup(), offsets); err != nil {
		return s.fail(fmt.Errorf("shard %d: commit progress: %w", s.id, err))
	}
	done := time.Now()
	if e.log.Enabled(ctx, slog.LevelDebug) {
		e.log.Debug("transaction committed", "shard", s.id, "partitions", len(t.next), "records", t.records,
			"progress", len(ck), "copy", acked.Sub(t.start).Round(time.Millisecond), "commit", done.Sub(acked).Round(time.Millisecond))
	}
	e.metrics.Transactions.WithLabelValues(link, "committed").Inc()
	e.metrics.CommitTime.WithLabelValues(link).Observe(done.Sub(t.start).Seconds())
	for topic, c := range t.byTopic {
		e.metrics.Records.WithLabelValues(link, topic).Add(float64(c[0]))
		e.metrics.Bytes.WithLabelValues(link, topic).Add(float64(c[1]))
	}
	for topic, n := range t.skipped {
		e.metrics.Skipped.WithLabelValues(link, topic).Add(float64(n))
	}
	if !t.oldest.IsZero() {
		e.metrics.Latency.WithLabelValues(link).Observe(done.Sub(t.oldest).Seconds())
	}
	for tp, off := range t.last {
		s.tails[tp] = off + 2
	}
	for tp, n := range t.next {
		if p, ok := s.parts[tp]; ok {
			p.next = n
			p.lastSeen = done
			p.lastTs = max(p.lastTs, t.tsOf[tp])
		}
		e.setProgress(tp, n)
	}
	if ck != nil {
		s.checkpointed(ck, done)
	}
	e.copied(t.next)
	e.noteAdvance()
	return nil
}
