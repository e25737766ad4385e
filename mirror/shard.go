package mirror

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/linkstate"
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
	fetch *fetcher // reads the source partitions into in (fetcher.go)
	// starts prepares the partitions that join the shard (partstart.go).
	starts *starter
	in     chan *sarama.ConsumerMessage
	// passed wakes the shard when its fetcher moved past offsets with
	// nothing to copy (fetchSink.passed), so that an idle pass moves the
	// progress past them at once.
	passed chan struct{}
	// held is the bytes of the engine's budget this shard holds: records
	// admitted to in and not yet released by their transaction (see
	// txn.release).
	held   atomic.Int64
	offPar int32 // partition of the offsets topic this shard writes
	// prodLimit is the producer's MaxMessageBytes (see Engine.shardLimit).
	prodLimit int

	// gen and refreshed: the engine's partitions generation and the time
	// when the shard last compared its partitions with the engine's.
	gen       uint64
	refreshed time.Time

	lastStable time.Time // when the source ends were last read
	lastRecord time.Time // when the shard last copied a record
	lastStart  time.Time // when partitions last started copying
	// endsRead delivers the background read of the source ends that
	// refreshEnds started (at most one at a time; endsReading).
	endsRead     chan endsResult
	endsReading  bool
	lastObserved time.Time // when the ends were last written to the target
	obs          *observer // writes the observations (observed.go)
	// holding is the pause the shard holds (copying nothing), "" when
	// copying (see holdPaused).
	holding string
	// tails is, per target partition this shard wrote in a committed
	// transaction, the offset its next record will get if the shard stays
	// its only writer: the last record's offset + 2 (the commit marker
	// takes one). See txn.predict.
	tails map[topology.TopicPartition]int64
	// ckptAt: when the shard last wrote a checkpoint; refreshedCkpt: when
	// last one of every partition it owns (see checkpoint.go).
	ckptAt, refreshedCkpt time.Time
	// progressGroup is the link's progress group (its name sizes a
	// checkpoint's entries); carry is a record the last transaction left
	// for the next, which starts with it: its partition's progress would
	// not have fitted that transaction's checkpoint (see ckptFull).
	progressGroup string
	carry         *sarama.ConsumerMessage
}

// partState is what a shard knows of one source partition.
type partState struct {
	tp       topology.TopicPartition
	fp       *fetchPart // its place in the shard's fetcher (nil: not fetched)
	next     int64      // next source offset to copy (committed progress)
	stable   int64      // last stable offset seen on the source (-1 unknown)
	stableAt time.Time
	lastTs   int64     // source timestamp (ms) of the last record copied
	lastSeen time.Time // when a record of this partition last arrived
	// ckptNext and ckptAt: the progress of the partition's latest
	// checkpoint this shard wrote, and when (zero: none since it started
	// the partition). See checkpoint.go.
	ckptNext int64
	ckptAt   time.Time
}

type txnMeta struct {
	tp    topology.TopicPartition
	src   int64
	ts    time.Time
	bytes int // recordBytes of the copy
	// held is what the source record counts against the engine's budget,
	// released when the copy is acknowledged (see txn.release).
	held int64
	// target is the offset the copy is predicted to get on the target
	// (see txn.predict), -1 when not predicted.
	target int64
}

// run owns the shard until ctx ends or an error stops it. On return every
// transaction it opened is committed or aborted and its clients closed.
func (s *shard) run(ctx context.Context) (err error) {
	s.parts = map[topology.TopicPartition]*partState{}
	s.tails = map[topology.TopicPartition]int64{}
	s.in = make(chan *sarama.ConsumerMessage, s.e.opts.ChannelBuffer)
	s.progressGroup = s.e.link.ProgressGroup()
	s.passed = make(chan struct{}, 1)
	s.endsRead = make(chan endsResult, 1)
	s.obs = &observer{s: s}
	defer s.close()
	if err := s.open(ctx); err != nil {
		return err
	}
	s.starts = newStarter(ctx, s)
	s.starts.watch()
	defer s.starts.stop() // before close: its reads use the clients
	tick := time.NewTicker(s.e.opts.IdleCheck)
	defer tick.Stop()
	var passedAt time.Time     // when a wake of the fetcher's last ran an idle pass
	var later <-chan time.Time // a wake held back until passedGap has passed
	for {
		wake := s.e.partsWaker() // before the refresh: no change is missed
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
		passed := false
		// A record the last transaction left for this one comes first.
		if first, s.carry = s.carry, nil; first == nil {
			select {
			case first = <-s.in:
			case <-tick.C:
				// The shard is idle only when no record waits.
				select {
				case first = <-s.in:
				default:
				}
			case <-s.passed:
				// The fetcher passed offsets with nothing to copy: move the
				// progress past them now (from what the fetcher saw, without
				// a request), unless a record waits, or passedGap after the
				// last such pass.
				select {
				case first = <-s.in:
				default:
					if wait := passedGap - time.Since(passedAt); wait > 0 {
						if later == nil {
							later = time.After(wait)
						}
						continue
					}
					passed = true
				}
			case <-later:
				later, passed = nil, true
			case <-wake:
				continue // start or stop partitions first
			case <-s.starts.done:
				continue // start the partitions prepared
			case <-ctx.Done():
			}
		}
		// Copying, the ends come without a request on this path; idle,
		// they are read.
		copying := s.copying(first != nil, passed)
		if passed {
			passedAt = time.Now()
		}
		if copying {
			s.refreshEnds(ctx)
		} else if time.Since(s.lastStable) >= s.e.opts.IdleCheck {
			if _, err := s.refreshStable(ctx); err != nil {
				warn(ctx, s.log, "cannot read source end offsets", "err", err)
			}
		}
		s.observe(ctx)
		if first != nil {
			// A record in hand is committed even when ctx ends meanwhile:
			// a graceful stop commits what is in flight.
			if err := s.transact(ctx, first, nil); err != nil {
				return err
			}
			s.lastRecord = time.Now()
			continue
		}
		if ctx.Err() != nil {
			return nil
		}
		if err := s.idle(ctx, copying); err != nil {
			return err
		}
	}
}

// copying says whether the shard counts as copying: a record in hand, or
// offsets the fetcher passed, or a record copied within the last IdleCheck,
// or partitions started within it. An idle shard reads the source's ends
// itself, on the connection its fetcher uses: just after a start that
// read held up the first records of the new partitions, which were on
// their way (0.1 to 0.6 s per batch of a 10,000-partition launch;
// bench/results/diary.md).
func (s *shard) copying(inHand, passed bool) bool {
	now := time.Now()
	return inHand || passed || now.Sub(s.lastRecord) < s.e.opts.IdleCheck || now.Sub(s.lastStart) < s.e.opts.IdleCheck
}

// open creates the producer (fencing any earlier holder of the shard's
// transactional id), then checks the role state and the shard count on the
// target, so that a link a failover retired, or one resharded since this
// process started, can never write again: the failover (and linkstate.Reshard)
// record the change on the target before they fence, and every write needs
// an initialised producer. The source is dialled meanwhile (across a WAN a
// dial is several round trips) and read only once the check passed.
func (s *shard) open(ctx context.Context) error {
	e := s.e
	type dialed struct {
		cl  sarama.Client
		err error
	}
	srcDial := make(chan dialed, 1)
	go func() {
		cl, err := e.dial(ctx, e.srcCluster, partialMetadata)
		if err == nil {
			connect(cl)
		}
		srcDial <- dialed{cl, err}
	}()
	// source waits for the dial, or for ctx: connect is bound by the
	// client's timeouts only, and a shard that stops (the source is down,
	// the roles move) must not wait for them.
	var src *dialed
	source := func() dialed {
		if src == nil {
			select {
			case d := <-srcDial:
				src = &d
			case <-ctx.Done():
				go func() {
					if d := <-srcDial; d.cl != nil {
						_ = d.cl.Close()
					}
				}()
				src = &dialed{err: ctx.Err()}
			}
		}
		return *src
	}
	defer func() {
		if d := source(); s.srcCl == nil && d.cl != nil {
			_ = d.cl.Close() // open failed before it took the client
		}
	}()
	var err error
	s.dst, err = e.dial(ctx, e.dstCluster, partialMetadata)
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
	// After the initialisation, as the role check: a reshard changes the
	// count before it fences every id, so a shard that initialised its id
	// before the fence is fenced by it, and one that did after sees the new
	// count here and never writes under the old mapping.
	if err := e.checkShardCount(s.dst); err != nil {
		return err
	}
	if d := source(); d.err != nil {
		return d.err
	}
	s.srcCl = source().cl
	s.fetch, err = newFetcher(s.srcCl, e.opts.FetchBytes, e.opts.FetchResponseBytes, fetchGrowth(e.opts), fetchWaits{idle: e.opts.FetchWait, gather: e.opts.FetchGather}, fetchSink{
		out: s.in, buf: e.buf, held: &s.held, passed: s.passed,
		outOfRange: s.outOfRange, recreated: s.recreated, failed: func(tp topology.TopicPartition, err error) { s.fetchFailed(ctx, tp, err) },
	}, s.log)
	if err != nil {
		return fmt.Errorf("shard %d: fetch from %s: %w", s.id, e.link.Source, err)
	}
	link, shard := e.link.String(), strconv.Itoa(int(s.id))
	s.fetch.size.report = func(d time.Duration) { e.metrics.FetchRoundTrip.WithLabelValues(link, shard).Set(d.Seconds()) }
	respBytes := e.metrics.FetchResponseBytes.WithLabelValues(link, shard)
	s.fetch.size.reportResp = func(n int32) { respBytes.Set(float64(n)) }
	s.fetch.size.changed()
	s.fetch.start(ctx)
	parts, err := e.offsetsPartitions(ctx, s.dst)
	if err != nil {
		return err
	}
	s.offPar = s.id % parts
	return nil
}

func (s *shard) close() {
	s.obs.close()
	if s.prod != nil {
		if s.prod.TxnStatus()&sarama.ProducerTxnFlagInTransaction != 0 {
			s.abort()
		}
		_ = s.prod.Close()
	}
	for _, p := range s.parts {
		s.stopPartition(p)
	}
	// Records still buffered are dropped (the next run of the shard reads
	// them again from its committed progress): give their bytes back once
	// the fetcher can add no more.
	if s.fetch != nil {
		s.fetch.close()
		s.e.metrics.FetchRoundTrip.DeleteLabelValues(s.e.link.String(), strconv.Itoa(int(s.id)))
		s.e.metrics.FetchResponseBytes.DeleteLabelValues(s.e.link.String(), strconv.Itoa(int(s.id)))
	}
	s.e.buf.release(s.held.Swap(0))
	if s.srcCl != nil {
		_ = s.srcCl.Close()
	}
	if s.dst != nil {
		_ = s.dst.Close()
	}
}

// connect opens cl's connections to the cluster's brokers now: with
// partial metadata a client connects at its first request, and across a
// WAN its handshakes (versions, SASL, metadata: about 7 round trips) then
// come after the shard's role check and its first topic sync instead of
// during them. A failure is left to the first request to meet.
func connect(cl sarama.Client) {
	if cl.RefreshMetadata() != nil {
		return
	}
	for _, b := range cl.Brokers() {
		_ = b.Open(cl.Config()) // already open (or opening): fine
		_, _ = b.Connected()
	}
}

// refreshPartitions stops the partitions that left the shard (a conflict,
// a deleted topic) and starts copying those that joined it, once the
// starter has prepared them (see partstart.go).
func (s *shard) refreshPartitions(ctx context.Context) error {
	if limit := s.e.shardLimit(s.id); limit > s.prodLimit {
		return fmt.Errorf("shard %d: %w (%d -> %d bytes)", s.id, errResize, s.prodLimit, limit)
	}
	// The partitions change with a topic sync or a block, or when a
	// blocked partition's pause ends: between transactions, look again
	// only after a change or once per IdleCheck, or when the starter has
	// prepared partitions.
	gen := s.e.partsGen.Load()
	changed := gen != s.gen || time.Since(s.refreshed) >= s.e.opts.IdleCheck
	ready := s.starts.take()
	if !changed && len(ready) == 0 {
		return nil
	}
	if changed {
		s.gen, s.refreshed = gen, time.Now()
	}
	want := map[topology.TopicPartition]bool{}
	for _, tp := range s.e.partitionsOf(s.id) {
		want[tp] = true
	}
	removed := false
	for tp, p := range s.parts {
		if !want[tp] {
			s.stopPartition(p)
			delete(s.parts, tp)
			s.starts.forget(tp, false)
			removed = true
		}
	}
	added := 0
	// s.order lists exactly the partitions of s.parts, whatever changed:
	// a partition left in it after its removal crashed the process.
	defer func() {
		if removed || added > 0 {
			s.order = s.order[:0]
			for tp := range s.parts {
				s.order = append(s.order, tp)
			}
		}
	}()
	if changed {
		// After the removals: a partition that left and came back is
		// prepared again.
		defer s.starts.kick()
	}
	for _, r := range ready {
		n, err := s.install(ctx, r, want)
		added += n
		if err != nil {
			return err
		}
	}
	return nil
}

// install starts copying the partitions r prepared that the shard still
// has (want) and returns how many it started. A partition whose start
// failed is retried at a later refresh; a failed progress read fails the
// shard.
func (s *shard) install(ctx context.Context, r *prepared, want map[topology.TopicPartition]bool) (int, error) {
	if r.err != nil {
		for _, p := range r.parts {
			s.starts.forget(p.tp, false)
		}
		return 0, fmt.Errorf("shard %d: read progress on %s: %w", s.id, s.e.link.Target, r.err)
	}
	var fetch []fetchStart
	for i, p := range r.parts {
		switch {
		case r.errs[i] != nil:
			s.starts.forget(p.tp, true)
			if ctx.Err() != nil {
				continue
			}
			s.e.metrics.Errors.WithLabelValues(s.e.link.String(), "source").Inc()
			warn(ctx, s.log, "cannot start partition", "partition", p.tp.String(), "err", r.errs[i])
		case !want[p.tp]:
			s.starts.forget(p.tp, false) // it left the shard meanwhile
		case s.parts[p.tp] != nil: // copying already
		default:
			s.parts[p.tp] = p
			fetch = append(fetch, fetchStart{tp: p.tp, at: p.next, id: r.ids[i]})
		}
	}
	if len(fetch) == 0 {
		return 0, nil
	}
	// The fetcher gets them all at once, so that its next round asks for
	// every one: added one by one, a round could take some and the next
	// the rest, and a second transaction for the rest would wait for the
	// first one's commit markers (seconds with a thousand partitions).
	for i, fp := range s.fetch.addAll(fetch) {
		s.parts[fetch[i].tp].fp = fp
	}
	s.lastStart = time.Now()
	s.log.Info("partitions started", "added", len(fetch), "copying", len(s.parts), "took", time.Since(r.began).Round(time.Millisecond))
	return len(fetch), nil
}

// startParallel bounds the partitions a shard starts at the same time
// (each start costs a few requests to the source).
const startParallel = 32

// srcEnds are a source partition's log start and last stable offset.
type srcEnds struct{ Start, Stable int64 }

// startPartition sets where p's fetching starts, from its progress (see
// resumeAt); the caller hands it to the fetcher. ends, when known, are the
// partition's source ends (else they are asked for). It may run
// concurrently with the starts of other partitions of the shard.
func (s *shard) startPartition(ctx context.Context, p *partState, ends *srcEnds) error {
	if ends == nil {
		e, err := kafkaread.PartitionEnds(ctx, s.srcCl, p.tp.Topic, p.tp.Partition)
		if err != nil {
			return err
		}
		ends = &srcEnds{Start: e.Start, Stable: e.Stable}
	}
	from := ends.Start
	if p.next >= 0 {
		var err error
		if from, err = s.resumeAt(ctx, p.tp, p.next, *ends); err != nil {
			return err
		}
	}
	p.next = from
	return nil
}

// resumeAt returns where copying tp goes on from next, the first source
// offset not mirrored yet. A position below the source's log start means
// retention removed records before they were mirrored: they are recorded
// in the link's lost topic on the target (kept until an operator
// acknowledges them), counted, and copying goes on from the log start;
// while the record cannot be written the partition does not start, so no
// loss is passed over without a record. A position beyond the
// source's end means the topic was recreated or truncated: the partition is
// refused, loudly (an error wrapping errRefused), since copying the new log
// would mix two histories in one target partition.
func (s *shard) resumeAt(ctx context.Context, tp topology.TopicPartition, next int64, ends srcEnds) (int64, error) {
	switch {
	case next < ends.Start:
		lost := ends.Start - next
		r := linkstate.LostRange{Topic: tp.Topic, Partition: tp.Partition, From: next, To: ends.Start - 1, Records: lost, At: time.Now().UTC()}
		if err := linkstate.RecordLost(ctx, s.dst, s.e.link, r); err != nil {
			s.e.noteTrouble(tp, fmt.Sprintf("%d records removed by retention on %s before they were mirrored (offsets %d to %d), not recorded yet: %v",
				lost, s.e.link.Source, next, ends.Start-1, err))
			return 0, err
		}
		s.e.metrics.Lost.WithLabelValues(s.e.link.String(), tp.Topic).Add(float64(lost))
		s.e.noteTrouble(tp, fmt.Sprintf("%d records removed by retention on %s before they were mirrored (offsets %d to %d)",
			lost, s.e.link.Source, next, ends.Start-1))
		s.log.Error("records lost to source retention", "partition", tp.String(), "lost", lost, "from", next, "to", ends.Start-1)
		return ends.Start, nil
	case next > ends.Stable:
		// Progress never passes the last stable offset: the mirror
		// copies committed records only.
		msg := fmt.Sprintf("mirrored position %d is beyond the source's end %d: the topic was recreated or truncated on %s; delete the target topic on %s to mirror it again, or exclude it",
			next, ends.Stable, s.e.link.Source, s.e.link.Target)
		s.e.noteTrouble(tp, msg)
		return 0, fmt.Errorf("%w: %s", errRefused, msg)
	}
	return next, nil
}

// sameIncarnation checks that the source topic of tp is the incarnation
// the link mirrors (the topic ledger's id, as the engine last published
// it) and returns its id. ids are the source's topic ids (ierr: the
// lookup's error). A recreated topic is reported and refused.
func (s *shard) sameIncarnation(tp topology.TopicPartition, ids map[string]string, ierr error) (string, error) {
	if ierr != nil {
		return "", ierr
	}
	id, ok := ids[tp.Topic]
	if !ok {
		return "", fmt.Errorf("topic %s is not on %s: %w", tp.Topic, s.e.link.Source, sarama.ErrUnknownTopicOrPartition)
	}
	want := s.e.topicID(tp.Topic)
	if want != "" && id != "" && id != want {
		s.recreated(tp, id)
		return "", fmt.Errorf("%w: topic %s has id %s on %s, the mirror copies id %s", errRefused, tp.Topic, id, s.e.link.Source, want)
	}
	return cmp.Or(want, id), nil
}

// outOfRange resolves a fetch position the source called out of range,
// once the fetcher has checked the topic's id (see resumeAt).
func (s *shard) outOfRange(ctx context.Context, tp topology.TopicPartition, at int64) (int64, error) {
	ends, err := kafkaread.PartitionEnds(ctx, s.srcCl, tp.Topic, tp.Partition)
	if err != nil {
		return 0, err
	}
	return s.resumeAt(ctx, tp, at, srcEnds{Start: ends.Start, Stable: ends.Stable})
}

// recreated reports tp, whose source topic has a new id: nothing of the new
// incarnation is copied (the topic sync holds the topic back).
func (s *shard) recreated(tp topology.TopicPartition, id string) {
	s.e.noteTrouble(topology.TopicPartition{Topic: tp.Topic, Partition: -1}, linkstate.RecreatedMessage(s.e.link, tp.Topic))
	s.log.Error("source topic recreated: not copying its new incarnation", "partition", tp.String(), "source_id", id, "mirrored_id", s.e.topicID(tp.Topic))
}

// fetchFailed counts and logs a fetch error of tp.
func (s *shard) fetchFailed(ctx context.Context, tp topology.TopicPartition, err error) {
	s.e.metrics.Errors.WithLabelValues(s.e.link.String(), "source").Inc()
	warn(ctx, s.log, "source fetch error", "partition", tp.String(), "err", err)
}

func topicsOf(tps []topology.TopicPartition) []string {
	var out []string
	for _, tp := range tps {
		if !slices.Contains(out, tp.Topic) {
			out = append(out, tp.Topic)
		}
	}
	return out
}

func (s *shard) stopPartition(p *partState) {
	delete(s.tails, p.tp) // another shard may write it meanwhile
	if p.fp != nil {
		s.fetch.remove(p.fp)
	}
}

// produceFailed ends the transaction over a refused record. When the
// refusal is the partition's own (see partitionScoped) the partition is
// blocked first, so that the shard restarts without it.
func (s *shard) produceFailed(perr *sarama.ProducerError) error {
	tp := topology.TopicPartition{Topic: perr.Msg.Topic, Partition: perr.Msg.Partition}
	if md, ok := perr.Msg.Metadata.(*txnMeta); ok && md.tp.Topic != "" && partitionScoped(perr.Err) {
		known := partState{next: -1, stable: -1}
		if p, ok := s.parts[tp]; ok {
			known = *p
		}
		s.e.block(tp, known, fmt.Errorf("source offset %d: %w", md.src, perr.Err))
		return fmt.Errorf("%w: %w", errPartitionBlocked, s.fail(fmt.Errorf("shard %d: produce to %s %s: %w", s.id, s.e.link.Target, tp, perr.Err)))
	}
	return s.fail(fmt.Errorf("shard %d: produce to %s %s: %w", s.id, s.e.link.Target, tp, perr.Err))
}

// abort aborts the open transaction. The producer returns every record
// still in flight (on its unbuffered Successes and Errors) before it sends
// the abort: they are read and dropped meanwhile, or the abort would wait
// for them forever.
func (s *shard) abort() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-s.prod.Successes():
			case perr := <-s.prod.Errors():
				s.log.Debug("dropped with the aborted transaction", "err", perr)
			case <-done:
				return
			}
		}
	})
	_ = s.prod.AbortTxn()
	close(done)
	wg.Wait()
}

// fail aborts the open transaction and classifies err.
func (s *shard) fail(err error) error {
	link := s.e.link.String()
	if s.prod != nil && s.prod.TxnStatus()&sarama.ProducerTxnFlagInTransaction != 0 {
		s.abort()
	}
	s.e.metrics.Transactions.WithLabelValues(link, "aborted").Inc()
	if kafkaread.ProducerFenced(s.prod, err) {
		s.e.metrics.Errors.WithLabelValues(link, "fenced").Inc()
		return fmt.Errorf("%w: %v", ErrFenced, err)
	}
	s.e.metrics.Errors.WithLabelValues(link, "target").Inc()
	return err
}

// idle runs between batches when no record is waiting: it moves the
// progress of caught-up partitions past trailing source offsets that hold
// no committed record (transaction markers, aborted records), so that a
// drained link shows zero lag. While copying (records within the last
// IdleCheck) it uses the ends the shard knows and sends no request to the
// source (see refreshEnds); once idle it reads the ends, and probes
// partitions whose consumer has been quiet.
func (s *shard) idle(ctx context.Context, copying bool) error {
	var stable map[topology.TopicPartition]int64
	if copying {
		// The newest end each partition's fetcher saw (its latest
		// response, not only the once-per-IdleCheck view), so that the
		// progress reaches a drained source's end at once.
		stable = make(map[topology.TopicPartition]int64, len(s.order))
		for _, tp := range s.order {
			p := s.parts[tp]
			if p.stable >= 0 {
				stable[tp] = p.stable
			}
			if p.fp != nil {
				if lso, at, ok := p.fp.lastStable(); ok && at.After(p.stableAt) {
					stable[tp] = lso
				}
			}
		}
	} else {
		var err error
		if stable, err = s.refreshStable(ctx); err != nil {
			s.e.metrics.Errors.WithLabelValues(s.e.link.String(), "source").Inc()
			warn(ctx, s.log, "cannot read source end offsets", "err", err)
			return nil
		}
	}
	skip := map[topology.TopicPartition]int64{}
	probes := 0
	for _, tp := range s.order {
		p := s.parts[tp]
		lso, ok := stable[tp]
		if !ok || lso <= p.next {
			continue
		}
		if p.fp != nil {
			if to := min(p.fp.skippable(p.next), lso); to > p.next {
				skip[tp] = to
				continue
			}
		}
		// Probe only a partition whose consumer has been quiet: a few
		// offsets short of the end (trailing markers), or quiet for long
		// (a large aborted transaction). A probe costs a few requests, so
		// an idle pass makes a bounded number of them.
		quiet := time.Since(p.lastSeen)
		if copying || quiet < s.e.opts.IdleCheck || (lso-p.next > 64 && quiet < 10*s.e.opts.IdleCheck) || probes >= maxProbes {
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
		// Nothing to move past: write the checkpoint the shard owes, if
		// one is due (see checkpoint.go).
		owed := s.owed()
		if len(owed) == 0 {
			return nil
		}
		return s.transact(ctx, nil, owed)
	}
	if len(skip) > 1 {
		// As many as one checkpoint holds; the next pass moves the rest.
		keep := s.boundedCheckpoint(slices.Collect(maps.Keys(skip)), s.e.opts.MaxCheckpointBytes)
		if len(keep) < len(skip) {
			bounded := make(map[topology.TopicPartition]int64, len(keep))
			for _, tp := range keep {
				bounded[tp] = skip[tp]
			}
			skip = bounded
		}
	}
	return s.transact(ctx, nil, skip)
}

var errStop = errors.New("stop")

// errResize restarts a shard whose producer is too small for a topic that
// joined it (a larger max.message.bytes).
var errResize = errors.New("a topic with larger records joined the shard: reopening its producer")

// passedGap spaces the idle passes that wakes of the fetcher start (see
// fetchSink.passed): a source that aborts transaction after transaction
// wakes the shard for each, and a pass that moves progress is a
// transaction on the target (without the gap, 150 aborts in 60 ms cost 12
// to 16 of them).
const passedGap = 100 * time.Millisecond

// maxProbes bounds the hole probes of one idle pass.
const maxProbes = 16

// provenance appends to headers the headers of the copy: the source's
// headers without drctl's own, then the origin (kept from an earlier hop,
// else the source cluster) and this hop's source offset, whose value it
// writes into off. The bool reports that the record came from the target
// cluster in the first place and must not go back (loop prevention),
// unless the link copies its own origin (a reseed).
func (s *shard) provenance(m *sarama.ConsumerMessage, headers []sarama.RecordHeader, off *[8]byte) ([]sarama.RecordHeader, bool) {
	origin := s.e.srcID
	for _, h := range m.Headers {
		switch string(h.Key) {
		case topology.HeaderOrigin:
			origin = h.Value
		case topology.HeaderSourceOffset:
		default:
			headers = append(headers, *h)
		}
	}
	if !s.e.opts.CopyOwnOrigin && string(origin) == string(s.e.dstID) {
		return nil, true
	}
	binary.BigEndian.PutUint64(off[:], uint64(m.Offset))
	headers = append(headers, sarama.RecordHeader{Key: headerOriginKey, Value: origin},
		sarama.RecordHeader{Key: headerSourceOffsetKey, Value: off[:]})
	return headers, false
}

// The provenance headers' keys, shared by every copy: the producer only
// reads them.
var (
	headerOriginKey       = []byte(topology.HeaderOrigin)
	headerSourceOffsetKey = []byte(topology.HeaderSourceOffset)
)

func sortPairs(ps []offsettranslate.Pair) {
	// Acknowledgements of one partition arrive in order; sort defensively
	// with insertion sort, which is linear on sorted input.
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && ps[j].Target < ps[j-1].Target; j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}
