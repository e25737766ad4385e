package mirror

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// A shard reads its source partitions with a fetcher of its own rather than
// sarama's consumer. sarama's partition consumer keeps the records it
// fetched pointing into the whole fetch response until they are handed
// over, so with many partitions per shard many responses stay alive, each
// pinned by a few records (170-210 MB of a 1,000-partition mirror's heap,
// see bench/results/diary.md). The fetcher instead:
//
//   - sends, each round, one read_committed fetch request per source leader
//     broker covering all the shard's partitions led by it, in parallel,
//     outside any fetch session; a request may wait at the source for
//     records, briefly while partitions join or recover and up to FetchWait
//     once they are settled (roundWait), and is answered as soon as one
//     of its partitions has a record; while its partitions stream, a
//     request may instead wait briefly to gather a batch (gather);
//   - bounds each partition's share and so the whole response: a partition
//     that returned nothing last time gets a small share (idleShare), the
//     others split what is left of respBytes (at most partBytes each), so a
//     response holds about respBytes however many partitions the shard has,
//     and a few busy partitions among many idle ones still fetch in bulk;
//     both sizes grow while the source, not the copy, sets the shard's
//     pace, as across a WAN (fetchsize.go). A
//     batch larger than its share comes whole when its partition is the
//     first of a request (KIP-74), so a partition that came back empty though
//     it has data goes first in its next request;
//   - decodes the response with kafkaread.CommittedRecords (control batches
//     and aborted transactions dropped as read_committed requires), copies
//     each record's key, value and headers into one small buffer of its own,
//     and drops the response before handing anything over;
//   - hands the records to the shard in offset order through the engine's
//     byte budget, in the fetch loop itself, while the next round's
//     requests (from the positions after those records) are in flight: a
//     round trip to a distant source overlaps the hand-over instead of
//     following it. At most one round waits to be handed over, and rounds
//     are handed over in the order they were fetched, which keeps each
//     partition's order across leader changes;
//   - notes each partition's last stable offset from its fetch response
//     (lastStable), so that the shard knows the source's ends without a
//     request of its own while records flow.
//
// Errors never stop the fetcher: a partition whose leader moved or whose
// broker connection broke is looked up anew after a pause of the Brief
// retry policy; one whose fetch says UNKNOWN_TOPIC_OR_PARTITION,
// UNKNOWN_TOPIC_ID, INCONSISTENT_TOPIC_ID or OFFSET_OUT_OF_RANGE fetches
// nothing more until the source's topic id is checked against the id the
// partition was started for: a topic deleted and created again under its
// name is a different log, and copying it from the old position would mix
// two histories in one target partition. Only then is an out-of-range
// position resolved (retention loss counted; a position past the log's end
// refused, reported, and asked again after a pause, since a source broker
// that restarts reports low ends for a moment). Fetch version 12 names
// topics, not ids: a deletion and re-creation that both fall between two
// fetches of a partition, with no error in between, is not seen here (the
// topic sync reports it at its next pass, and the next start of the
// partition refuses it).

// fetchResponseCeiling is the MaxBytes of every fetch request. The
// response is bounded by the partitions' shares instead (whose sum is at
// most about respBytes), because kfake leaves the aborted-transaction list
// out of a partition that the response-level limit cut short, and such a
// partition's aborted records would read as committed.
const fetchResponseCeiling = 64 << 20

// Bounds of the fetcher's requests (see the comment at the top): a
// partition's share is at least minPartBytes, an idle one's at most
// idleShareMax.
const (
	minPartBytes     = 8 << 10
	idleShareMax     = 32 << 10
	defaultRespBytes = 2 << 20
)

// fetchPart is one source partition in a fetcher.
type fetchPart struct {
	tp topology.TopicPartition
	// id is the source topic id the partition was started for ("":
	// unknown, not checked).
	id string
	// stop is closed when the partition is removed; mu is held while one
	// of its records is handed over, so that once remove returns nothing
	// more of it is.
	stop     chan struct{}
	stopOnce sync.Once
	mu       sync.Mutex
	// handedEnd is the offset after the last record handed over (-1: none
	// yet) and clearedTo the offset up to which every committed data record
	// of the partition has been handed over (the fetch position after a
	// hand-over, past control batches and aborted transactions). The fetch
	// loop stores handedEnd before clearedTo; see skippable for why that
	// order matters. Not under mu: give holds mu while it waits for room in
	// the shard's buffer, which the shard drains.
	handedEnd, clearedTo atomic.Int64

	// Owned by the fetch loop (set once by add before the loop sees it).
	at      int64 // next offset to fetch
	boost   int32 // the partition's share after a partial batch (0: none)
	busy    bool  // its last fetch returned records
	first   bool  // goes first in its next request (KIP-74)
	suspect bool  // its topic id is checked before it fetches again
	oor     bool  // its position was out of range: resolve it after the check
	refresh bool  // its leader is looked up anew
	// leader is where its last request went: kept until a fetch of the
	// partition fails (refresh), so that a round does not look up every
	// partition's leader in the client's metadata again (15% of an idle
	// 10,000-partition mirror's CPU).
	leader  *sarama.Broker
	fails   int
	retryAt time.Time

	// seen is the partition's last stable offset in its latest fetch
	// response, and when that response came (nil: none yet). Written by
	// the fetch loop, read by the shard.
	seen atomic.Pointer[endSeen]
}

// endSeen is a last stable offset a fetch response reported.
type endSeen struct {
	lso int64
	at  time.Time
}

// lastStable returns the last stable offset of p's latest fetch response and
// when it came; ok is false before the first response without error.
func (p *fetchPart) lastStable() (lso int64, at time.Time, ok bool) {
	e := p.seen.Load()
	if e == nil {
		return 0, time.Time{}, false
	}
	return e.lso, e.at, true
}

func (p *fetchPart) stopped() bool {
	select {
	case <-p.stop:
		return true
	default:
		return false
	}
}

// backoff pauses p after a failure, by the Brief retry policy (at most a
// second).
func (p *fetchPart) backoff() {
	p.retryAt = time.Now().Add(kafkaread.Brief.Pause(p.fails))
	p.fails++
}

// fetchSink is where a fetcher's records and troubles go: the shard.
type fetchSink struct {
	out  chan<- *sarama.ConsumerMessage
	buf  *budget
	held *atomic.Int64
	// outOfRange resolves an out-of-range position of a partition whose
	// topic id was checked: the offset to go on from, or an error (one
	// wrapping errRefused is a position past the log's end, already
	// reported). The fetcher asks again after a pause.
	outOfRange func(ctx context.Context, tp topology.TopicPartition, at int64) (int64, error)
	// recreated reports a partition whose topic has another id now.
	recreated func(tp topology.TopicPartition, id string)
	// failed counts and logs a fetch error of a partition.
	failed func(tp topology.TopicPartition, err error)
	// passed, if set, gets a token (without blocking) when a response
	// moves a partition's position past offsets that hold no record to
	// hand over (transaction markers, aborted records) after its last
	// record: the shard may move the progress past them now, not at its
	// next IdleCheck.
	passed chan<- struct{}
}

// fetcher reads a shard's source partitions; see the comment at the top.
type fetcher struct {
	cl      sarama.Client
	version int16
	size    *fetchSizer
	// wait is how long a request may wait at the source for records while
	// the fetcher's partitions are settled, settle (settleTime) after the
	// last change; see roundWait. gather: see gather.
	wait, settle, gather time.Duration
	// changedAt is when a partition was last added or removed (UnixNano).
	changedAt atomic.Int64
	sink      fetchSink
	log       *slog.Logger

	mu    sync.Mutex
	parts map[topology.TopicPartition]*fetchPart
	kick  chan struct{}

	rr int // rotates the partitions' order among rounds
	// errs gathers a round's partition errors, reported once per
	// distinct error at the end of the round (a leader change of a
	// thousand partitions is one report, not a thousand).
	errs   map[string]*roundErr
	cancel context.CancelFunc
	done   chan struct{}
}

// fetchWaits are how long a fetcher's requests may wait at the source:
// idle while its partitions are settled (roundWait), gather while they
// stream (gather; not positive: never).
type fetchWaits struct{ idle, gather time.Duration }

// newFetcher returns a fetcher whose partitions' shares are at most
// partBytes and whose responses about respBytes, both growing while the
// source sets the pace until a response's bound reaches most (fetchsize.go).
func newFetcher(cl sarama.Client, partBytes, respBytes, most int32, waits fetchWaits, sink fetchSink, log *slog.Logger) (*fetcher, error) {
	version, err := kafkaread.FetchVersion(cl.Config().Version)
	if err != nil {
		return nil, err
	}
	return &fetcher{
		cl: cl, version: version, size: newFetchSizer(partBytes, respBytes, most),
		wait: waits.idle, gather: waits.gather, settle: settleTime, sink: sink, log: log,
		parts: map[topology.TopicPartition]*fetchPart{}, kick: make(chan struct{}, 1),
	}, nil
}

// start runs the fetch loop until close.
func (f *fetcher) start(ctx context.Context) {
	ctx, f.cancel = context.WithCancel(ctx)
	f.done = make(chan struct{})
	go func() {
		defer close(f.done)
		f.loop(ctx)
	}()
}

// close removes every partition and waits for the fetch loop to end.
func (f *fetcher) close() {
	f.mu.Lock()
	all := slices.Collect(maps.Values(f.parts))
	f.mu.Unlock()
	for _, p := range all {
		f.remove(p)
	}
	if f.cancel != nil {
		f.cancel()
		<-f.done
	}
}

// add starts fetching tp from offset at; id is the source topic id the
// position belongs to. It costs no request.
func (f *fetcher) add(tp topology.TopicPartition, at int64, id string) *fetchPart {
	return f.addAll([]fetchStart{{tp: tp, at: at, id: id}})[0]
}

// fetchStart is a partition to add: fetched from at, for source topic id.
type fetchStart struct {
	tp topology.TopicPartition
	at int64
	id string
}

// addAll adds every partition of starts at once, as add does each: no
// round sees only some of them. It returns their fetchParts in order.
func (f *fetcher) addAll(starts []fetchStart) []*fetchPart {
	ps := make([]*fetchPart, len(starts))
	var replaced []*fetchPart
	f.mu.Lock()
	for i, st := range starts {
		p := &fetchPart{tp: st.tp, id: st.id, at: st.at, stop: make(chan struct{})}
		p.handedEnd.Store(-1)
		p.clearedTo.Store(st.at)
		if old := f.parts[st.tp]; old != nil {
			replaced = append(replaced, old)
		}
		f.parts[st.tp] = p
		ps[i] = p
	}
	f.mu.Unlock()
	for _, old := range replaced {
		f.stopPart(old)
	}
	if len(starts) > 0 {
		f.changedAt.Store(time.Now().UnixNano())
		f.wake()
	}
	return ps
}

// remove stops p: once it returns, no record of p is handed over any more
// (records handed over before are the shard's to drop).
func (f *fetcher) remove(p *fetchPart) {
	f.mu.Lock()
	if f.parts[p.tp] == p {
		delete(f.parts, p.tp)
	}
	f.mu.Unlock()
	f.changedAt.Store(time.Now().UnixNano())
	f.stopPart(p)
}

// stopPart closes p.stop, then waits for a hand-over of p in progress
// (which gives up at once) to end.
func (f *fetcher) stopPart(p *fetchPart) {
	p.stopOnce.Do(func() { close(p.stop) })
	p.mu.Lock()
	p.mu.Unlock() //nolint:staticcheck // an empty critical section: waits for give
}

func (f *fetcher) wake() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// fetched is one partition's records of one response, copied out of it.
type fetched struct {
	p       *fetchPart
	msgs    []*sarama.ConsumerMessage
	next    int64
	empty   bool // nothing returned though the partition has data
	partial bool
	lso     int64     // the response's last stable offset (-1: none)
	at      time.Time // when the response came
	err     error
	// reported: err is the request's, reported once for all its
	// partitions.
	reported bool
}

func (f *fetcher) loop(ctx context.Context) {
	// pending is the last round fetched, not handed over yet.
	var pending []fetched
	for ctx.Err() == nil {
		f.mu.Lock()
		parts := slices.Collect(maps.Values(f.parts))
		f.mu.Unlock()
		slices.SortFunc(parts, func(a, b *fetchPart) int { return a.tp.Compare(b.tp) })
		now := time.Now()
		var ready, suspects []*fetchPart
		for _, p := range parts {
			switch {
			case p.stopped(), p.retryAt.After(now):
			case p.suspect:
				suspects = append(suspects, p)
			default:
				ready = append(ready, p)
			}
		}
		if len(suspects) > 0 {
			ready = append(ready, f.checkIDs(ctx, suspects)...)
		}
		byLeader := f.route(ctx, ready)
		if len(byLeader) == 0 {
			delivered := f.deliver(ctx, pending)
			pending = nil
			if !delivered {
				return
			}
			f.flushErrs()
			f.idle(ctx, nextRetry(parts, now))
			continue
		}
		// The next round is fetched while the last one is handed over; its
		// positions already follow the last round's records (advance).
		inRound := 0
		for _, ps := range byLeader {
			inRound += len(ps)
		}
		wait := f.roundWait(parts, inRound, len(byLeader), now)
		round := make(chan []fetched, 1)
		go func() { round <- f.fetchAll(ctx, byLeader, wait) }()
		delivered := f.deliver(ctx, pending)
		var results []fetched
		waited := false
		select {
		case results = <-round:
		default:
			results, waited = <-round, true
		}
		if !delivered {
			return
		}
		f.pace(pending, results, waited)
		for _, r := range results {
			f.advance(r)
		}
		pending = results
		f.flushErrs()
	}
}

// pace tells the sizer who set the pace of a round (fetchsize.go): last
// was handed over while next was fetched, and the loop waited for next
// after the hand-over (waited) or found it there. Only rounds that both
// found a backlog tell.
func (f *fetcher) pace(last, next []fetched, waited bool) {
	if !foundBacklog(last) || !foundBacklog(next) {
		return
	}
	if waited {
		f.size.starved()
	} else {
		f.size.fed()
	}
}

// foundBacklog says whether some partition of a round had more committed
// data than its response carried.
func foundBacklog(round []fetched) bool {
	for _, r := range round {
		if r.backlog() {
			return true
		}
	}
	return false
}

// backlog: the partition had more committed data than the response
// carried.
func (r fetched) backlog() bool {
	return r.err == nil && len(r.msgs) > 0 && r.next < r.lso
}

// Waits of a fetch round at the source: f.wait while the partitions are
// settled, unsettledWait otherwise. A source answers a waiting fetch as soon
// as one of its partitions has a record, so the wait delays no record of a
// partition in the request; it does delay one that is not: a partition
// added, or due for a retry, joins the next round, after the one in flight
// has answered (a broker serves one connection's requests in order, so a
// second request could not overtake it).
const (
	unsettledWait = 100 * time.Millisecond
	// settleTime is how long after the last partition was added or
	// removed the fetcher's rounds keep the short wait: a link starting,
	// or a topic sync pass adding topics, adds partitions in several steps.
	settleTime = 5 * time.Second
)

// roundWait returns how long the next round, asking brokers source
// brokers, may wait at the source: the short unsettledWait while a
// partition was added or removed within f.settle, or some of parts are left
// out of the round (waiting for a retry or a topic id check), or the round
// asks more than one broker (a round is handed over once every broker has
// answered, so a record one broker returns at once would wait for another's
// idle wait), and f.wait once every partition is in it and has been for a
// while. So an idle link of thousands of partitions asks
// each source broker a few times a second instead of ten (at 10,000
// partitions that halved the source broker's idle CPU; bench/results/diary.md,
// bench/results/diary.md), while partitions that join or recover are not held back by
// the long wait of a round they are not in.
func (f *fetcher) roundWait(parts []*fetchPart, inRound, brokers int, now time.Time) time.Duration {
	if f.wait <= unsettledWait {
		return f.wait
	}
	if brokers > 1 {
		return unsettledWait
	}
	live := 0
	for _, p := range parts {
		if !p.stopped() {
			live++
		}
	}
	if inRound < live || now.Sub(time.Unix(0, f.changedAt.Load())) < f.settle {
		return unsettledWait
	}
	return f.wait
}

// deliver hands every record of a fetched round to the shard: each
// partition's in order, the partitions' in turns of about handTurn bytes.
// A transaction sends the producer what it takes in that order, and an
// idempotent producer has one request in flight per broker, which carries
// at most a batch's bound (max.message.bytes, 1 MiB by default) of each
// partition: handed over one partition after the other, a request carried
// one partition's megabyte, one round trip each, which bound the copy when
// the target is far (bench/results/diary.md). In turns, a request
// carries a batch of each partition. It returns false when ctx ended.
func (f *fetcher) deliver(ctx context.Context, round []fetched) bool {
	if len(round) == 1 {
		return f.handOver(ctx, round[0])
	}
	next := make([]int, len(round)) // per partition: its next record to hand over
	for left := len(round); left > 0; {
		for i, r := range round {
			if next[i] < 0 {
				continue
			}
			removed := false
			for turn := 0; next[i] < len(r.msgs) && turn < handTurn; next[i]++ {
				m := r.msgs[next[i]]
				if removed = !f.give(r.p, m); removed {
					break
				}
				turn += len(m.Key) + len(m.Value)
			}
			if ctx.Err() != nil {
				return false
			}
			switch {
			case removed: // the rest of its records are not handed over
			case next[i] == len(r.msgs):
				f.handedAll(r)
			default:
				continue // its next turn
			}
			next[i], left = -1, left-1
		}
	}
	return ctx.Err() == nil
}

// handTurn is how many bytes of a partition's records deliver hands over
// before the next partition's turn.
const handTurn = 64 << 10

type roundErr struct {
	tp  topology.TopicPartition
	err error
	n   int
}

// note gathers a partition's error for the end of the round.
func (f *fetcher) note(tp topology.TopicPartition, err error) {
	if f.errs == nil {
		f.errs = map[string]*roundErr{}
	}
	k := err.Error()
	if e, ok := f.errs[k]; ok {
		e.n++
		return
	}
	f.errs[k] = &roundErr{tp: tp, err: err, n: 1}
}

func (f *fetcher) flushErrs() {
	for _, e := range f.errs {
		err := e.err
		if e.n > 1 {
			err = fmt.Errorf("%w (and %d more partitions)", err, e.n-1)
		}
		f.sink.failed(e.tp, err)
	}
	clear(f.errs)
}

// nextRetry returns the earliest retry after since of the partitions that
// wait after a failure (zero: none waits).
func nextRetry(parts []*fetchPart, since time.Time) time.Time {
	var next time.Time
	for _, p := range parts {
		if !p.stopped() && p.retryAt.After(since) && (next.IsZero() || p.retryAt.Before(next)) {
			next = p.retryAt
		}
	}
	return next
}

// idle waits for a partition to be added or removed, or until the next
// retry (forever when none is due).
func (f *fetcher) idle(ctx context.Context, until time.Time) {
	var due <-chan time.Time
	if !until.IsZero() {
		t := time.NewTimer(max(time.Until(until), time.Millisecond))
		defer t.Stop()
		due = t.C
	}
	select {
	case <-ctx.Done():
	case <-f.kick:
	case <-due:
	}
}

// checkIDs looks up the topic ids of suspect partitions in one request and
// returns those that may fetch again.
func (f *fetcher) checkIDs(ctx context.Context, suspects []*fetchPart) []*fetchPart {
	var topics []string
	for _, p := range suspects {
		if !slices.Contains(topics, p.tp.Topic) {
			topics = append(topics, p.tp.Topic)
		}
	}
	ids, err := kafkaread.TopicIDs(ctx, f.cl, topics)
	if err != nil {
		for _, p := range suspects {
			f.note(p.tp, err)
			p.backoff()
		}
		return nil
	}
	var ok []*fetchPart
	for _, p := range suspects {
		id, exists := ids[p.tp.Topic]
		switch {
		case !exists:
			// Deleted (the topic sync reports it and removes the
			// partition), or not yet visible: ask again later.
			p.backoff()
			continue
		case p.id != "" && id != "" && id != p.id:
			// The topic sync holds the new incarnation back and removes
			// the partition; until then it is checked again and again.
			f.sink.recreated(p.tp, id)
			p.backoff()
			continue
		}
		if p.oor {
			at, err := f.sink.outOfRange(ctx, p.tp, p.at)
			if err != nil {
				// A refusal (the log ends before the position) is checked
				// again too: a source broker that restarts may report a
				// high-water mark below what it served before for a moment.
				if !errors.Is(err, errRefused) {
					f.note(p.tp, err)
				}
				p.backoff()
				continue
			}
			p.at, p.oor = at, false
		}
		p.suspect, p.refresh = false, true
		ok = append(ok, p)
	}
	return ok
}

// errRefused marks a partition the mirror refuses to copy from where it
// stands (outOfRange reported why).
var errRefused = errors.New("partition refused")

// route groups the partitions by their leader, refreshing the metadata of
// the topics whose leader must be looked up anew.
func (f *fetcher) route(ctx context.Context, ready []*fetchPart) map[*sarama.Broker][]*fetchPart {
	var stale []string
	for _, p := range ready {
		if p.refresh && !slices.Contains(stale, p.tp.Topic) {
			stale = append(stale, p.tp.Topic)
		}
	}
	if len(stale) > 0 {
		if _, err := kafkaread.Await(ctx, func() (struct{}, error) { return struct{}{}, f.cl.RefreshMetadata(stale...) }); err != nil {
			f.log.Debug("source metadata refresh failed", "topics", len(stale), "err", err)
		}
	}
	by := map[*sarama.Broker][]*fetchPart{}
	for _, p := range ready {
		if !p.refresh && p.leader != nil {
			by[p.leader] = append(by[p.leader], p)
			continue
		}
		b, err := f.cl.Leader(p.tp.Topic, p.tp.Partition)
		if err != nil {
			p.leader = nil
			f.note(p.tp, fmt.Errorf("find leader: %w", err))
			if errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
				p.suspect = true
			}
			p.refresh = true
			p.backoff()
			continue
		}
		p.refresh, p.leader = false, b
		by[b] = append(by[b], p)
	}
	return by
}

// fetchAll sends one request per leader, in parallel, and returns every
// partition's outcome, copied out of the responses.
func (f *fetcher) fetchAll(ctx context.Context, byLeader map[*sarama.Broker][]*fetchPart, wait time.Duration) []fetched {
	f.rr++
	brokers := slices.SortedFunc(maps.Keys(byLeader), func(a, b *sarama.Broker) int { return cmp.Compare(a.ID(), b.ID()) })
	outs := make([][]fetched, len(brokers))
	var wg sync.WaitGroup
	for i, b := range brokers {
		ps := f.requestOrder(byLeader[b])
		wg.Go(func() { outs[i] = f.fetchFrom(ctx, b, ps, wait) })
	}
	wg.Wait()
	var all []fetched
	for _, o := range outs {
		all = append(all, o...)
	}
	return all
}

// requestOrder orders the partitions of one request: those that came back
// empty though they have data first, then the others from a rotating
// start.
func (f *fetcher) requestOrder(ps []*fetchPart) []*fetchPart {
	out := make([]*fetchPart, 0, len(ps))
	for _, p := range ps {
		if p.first {
			out = append(out, p)
		}
	}
	start := f.rr % len(ps)
	for i := range ps {
		p := ps[(start+i)%len(ps)]
		if !p.first {
			out = append(out, p)
		}
	}
	return out
}

// shares returns the partition shares of a request for n partitions of
// which busy returned records last time, within a partition's largest
// share partBytes and the response's bound respBytes: see the comment at
// the top.
func shares(n, busy int, partBytes, respBytes int32) (idle, active int32) {
	idle = min(idleShareMax, max(minPartBytes, respBytes/int32(n)))
	active = partBytes
	if busy > 0 {
		left := max(0, int64(respBytes)-int64(n-busy)*int64(idle))
		active = int32(min(int64(partBytes), max(int64(idle), left/int64(busy))))
	}
	return idle, active
}

// gather returns the MinBytes and MaxWaitTime of a request of which some
// partitions returned records last time (they stream): the source answers
// once it holds an eighth of the response's bound (respBytes) for the
// request, or after gather (the round's own wait, roundWait, when that is
// shorter). Without it each request is answered at its first record, so a
// shard copying a steady stream below its capacity asks once per round
// trip, a request and a response of a few records each on a loopback or
// LAN, and the source broker, the shard and the target (one small
// transaction after the other) spend their CPU on it: at 5,000 records/s
// over 12 partitions a 10 ms gather took a third off the mirror's CPU and
// half off its p99 latency (bench/results/diary.md). A backlog is not
// held: a partition's bytes count up to its share, so a request whose
// busy partition has its share's worth waiting is answered at once (the
// minimum is never above a busy partition's share, active).
func gather(respBytes, active int32, gather, wait time.Duration) (minBytes, maxWait int32) {
	minBytes = max(1, min(respBytes/8, active))
	maxWait = int32(max(time.Millisecond, min(gather, wait)) / time.Millisecond)
	return minBytes, maxWait
}

// fetchFrom sends one fetch for ps to b, which may wait up to wait for
// records, and decodes the response.
func (f *fetcher) fetchFrom(ctx context.Context, b *sarama.Broker, ps []*fetchPart, wait time.Duration) []fetched {
	req := &sarama.FetchRequest{
		Version:     f.version,
		MaxWaitTime: int32(wait / time.Millisecond),
		MinBytes:    1,
		MaxBytes:    fetchResponseCeiling,
		Isolation:   sarama.ReadCommitted,
	}
	if f.version >= 7 {
		req.SessionEpoch = -1 // a full fetch that opens no session
	}
	busy := 0
	for _, p := range ps {
		if p.busy {
			busy++
		}
	}
	part, most := f.size.sizes()
	idle, active := shares(len(ps), busy, part, most)
	if f.gather > 0 && busy > 0 {
		req.MinBytes, req.MaxWaitTime = gather(most, active, f.gather, wait)
	}
	for _, p := range ps {
		share := idle
		if p.busy {
			share = active
		}
		req.AddBlock(p.tp.Topic, p.tp.Partition, p.at, max(share, p.boost), -1)
	}
	sent := time.Now()
	resp, err := kafkaread.Await(ctx, func() (*sarama.FetchResponse, error) { return b.Fetch(req) })
	if err == nil && resp.ErrorCode != 0 {
		err = sarama.KError(resp.ErrorCode)
	}
	at := time.Now()
	out := make([]fetched, len(ps))
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		// One report for the request; a broken connection is opened
		// again at the next lookup.
		f.sink.failed(ps[0].tp, fmt.Errorf("fetch %d partition(s) from broker %s: %w", len(ps), b.Addr(), err))
		_ = b.Close()
	}
	backlog := false
	var scratch []kafkaread.Record
	for i, p := range ps {
		out[i] = fetched{p: p, err: err, reported: err != nil, lso: -1}
		if err == nil {
			out[i] = decodeBlock(p, resp.GetBlock(p.tp.Topic, p.tp.Partition), &scratch)
			out[i].at = at
			backlog = backlog || out[i].backlog()
		}
	}
	if backlog {
		f.size.observe(at.Sub(sent))
	}
	return out
}

// decodeBlock copies p's committed records out of its response block. A
// partition missing from the response (a response cut short) got nothing.
// scratch is room for the block's records on their way, which the blocks
// of one response share.
func decodeBlock(p *fetchPart, block *sarama.FetchResponseBlock, scratch *[]kafkaread.Record) fetched {
	r := fetched{p: p, next: p.at, lso: -1}
	if block == nil {
		return r
	}
	if !errors.Is(block.Err, sarama.ErrNoError) {
		r.err = block.Err
		return r
	}
	r.lso = block.LastStableOffset
	recs := (*scratch)[:0]
	next, partial, err := kafkaread.CommittedRecords(block, p.at, math.MaxInt64, func(rec kafkaread.Record) error {
		recs = append(recs, rec)
		return nil
	})
	r.msgs = ownedMessages(p.tp, recs)
	clear(recs) // nothing keeps the response alive
	*scratch = recs
	if err != nil {
		r.err = err
		return r
	}
	r.next, r.partial = next, partial
	r.empty = next == p.at && block.LastStableOffset > p.at
	return r
}

// ownedMessages copies recs out of their fetch response, in order. The
// records' bytes (keys, values and headers) are laid out one after the
// other in buffers of about ownedChunkBytes, and their messages in arrays
// of the same records: an allocation per record rounded each one up to its
// size class (1,152 bytes for a 1 KiB record with two headers) and made
// an object per record to collect. A chunk lives until its last record's
// copy is acknowledged; a partition's records are copied in order, so that
// is about as long as each of them would have lived on its own. A null
// key, value or header value stays null.
func ownedMessages(tp topology.TopicPartition, recs []kafkaread.Record) []*sarama.ConsumerMessage {
	if len(recs) == 0 {
		return nil
	}
	out := make([]*sarama.ConsumerMessage, 0, len(recs))
	for len(recs) > 0 {
		k, n := 1, recordDataBytes(recs[0])
		for k < len(recs) {
			b := recordDataBytes(recs[k])
			if n+b > ownedChunkBytes {
				break
			}
			k, n = k+1, n+b
		}
		out = ownChunk(tp, recs[:k], n, out)
		recs = recs[k:]
	}
	return out
}

// ownedChunkBytes bounds the bytes of the records that share one buffer
// (one record larger than it has a buffer of its own): the largest of the
// allocator's size classes, so that a chunk wastes no rounding beyond it,
// and small beside a partition's share of a fetch.
const ownedChunkBytes = 32 << 10

// recordDataBytes is what ownedMessages copies of rec.
func recordDataBytes(rec kafkaread.Record) int {
	n := len(rec.Key) + len(rec.Value)
	for _, h := range rec.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// ownChunk copies recs, whose bytes add up to n, into one buffer and one
// array of messages, and appends the messages to out.
func ownChunk(tp topology.TopicPartition, recs []kafkaread.Record, n int, out []*sarama.ConsumerMessage) []*sarama.ConsumerMessage {
	buf := make([]byte, 0, n)
	own := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		buf = append(buf, b...)
		return buf[len(buf)-len(b) : len(buf) : len(buf)]
	}
	owned := make([]ownedRecord, len(recs))
	for i, rec := range recs {
		o := &owned[i]
		m := &o.msg
		*m = sarama.ConsumerMessage{
			Topic: tp.Topic, Partition: tp.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp,
			Key: own(rec.Key), Value: own(rec.Value),
		}
		if k := len(rec.Headers); k > 0 {
			hs, ps := o.headers[:0], o.ptrs[:0]
			if k > len(o.headers) {
				hs, ps = make([]sarama.RecordHeader, 0, k), make([]*sarama.RecordHeader, 0, k)
			}
			for _, h := range rec.Headers {
				hs = append(hs, sarama.RecordHeader{Key: own(h.Key), Value: own(h.Value)})
				ps = append(ps, &hs[len(hs)-1])
			}
			m.Headers = ps
		}
		out = append(out, m)
	}
	return out
}

// ownedRecord is a fetched record's message with room for two headers.
type ownedRecord struct {
	msg     sarama.ConsumerMessage
	headers [2]sarama.RecordHeader
	ptrs    [2]*sarama.RecordHeader
}

// skippable returns the offset the partition's committed progress next
// may move to without copying anything, or next itself: when every record
// handed over so far lies below next (copied, or dropped as a
// re-delivery), the offsets from next up to the fetch position hold no
// committed data record (only transaction markers and aborted records),
// because the fetcher hands over every committed data record it passes.
// It lets an idle shard move past trailing markers without probing the
// source (a probe costs a few round trips, and an idle pass makes only a
// few).
//
// clearedTo is read before handedEnd: a clearedTo read is stored after every
// record below it was handed over and handedEnd moved past it, so a
// committed data record at or above next and below that clearedTo shows in
// the handedEnd read after it. (Read the other way round, a record handed
// over between the two reads could be skipped: lost.)
func (p *fetchPart) skippable(next int64) int64 {
	cleared := p.clearedTo.Load()
	if p.handedEnd.Load() > next || cleared <= next {
		return next
	}
	return cleared
}

// Fetch errors that make the fetcher check the partition's topic id.
var (
	errUnknownTopicID      = sarama.KError(100)
	errInconsistentTopicID = sarama.KError(103)
)

// advance moves r's partition on past r (its next position, share and
// order, or its pause after an error) as soon as r is fetched, before r's
// records are handed over: the next round's request for the partition
// starts where r ends.
func (f *fetcher) advance(r fetched) {
	p := r.p
	if r.err != nil {
		if !r.reported {
			f.note(p.tp, r.err)
		}
		switch {
		case errors.Is(r.err, sarama.ErrOffsetOutOfRange):
			p.suspect, p.oor = true, true
		case errors.Is(r.err, sarama.ErrUnknownTopicOrPartition), errors.Is(r.err, errUnknownTopicID), errors.Is(r.err, errInconsistentTopicID):
			p.suspect = true
		}
		p.refresh = true
		p.backoff()
		return
	}
	if r.lso >= 0 {
		p.seen.Store(&endSeen{lso: r.lso, at: r.at})
	}
	p.at, p.fails, p.busy = r.next, 0, len(r.msgs) > 0
	switch {
	case r.partial:
		p.boost, p.first = min(max(2*p.boost, 2*f.size.part), 1<<30), true
	case r.empty:
		p.first = true
	default:
		p.first, p.boost = false, 0
	}
}

// handOver gives r's records to the shard in order, then records that
// every committed record below r's end was handed over (handedAll). It
// returns false when ctx ended.
func (f *fetcher) handOver(ctx context.Context, r fetched) bool {
	if ctx.Err() != nil {
		return false
	}
	for _, m := range r.msgs {
		if !f.give(r.p, m) {
			return ctx.Err() == nil
		}
	}
	f.handedAll(r)
	return ctx.Err() == nil
}

// handedAll records, once every record of r was handed over, that every
// committed record of its partition below r's end was (clearedTo), and
// wakes the shard when r moved past offsets with nothing to hand over. A
// failed fetch hands nothing and clears nothing.
func (f *fetcher) handedAll(r fetched) {
	p := r.p
	if r.err != nil {
		return
	}
	if cleared := p.clearedTo.Load(); r.next > cleared {
		p.clearedTo.Store(r.next)
		end := cleared
		if n := len(r.msgs); n > 0 {
			end = r.msgs[n-1].Offset + 1
		}
		if r.next > end && f.sink.passed != nil {
			select {
			case f.sink.passed <- struct{}{}:
			default:
			}
		}
	}
}

// give hands m to the shard once the engine's budget has room for it; it
// returns false, having handed nothing, when p was removed first.
func (f *fetcher) give(p *fetchPart, m *sarama.ConsumerMessage) bool {
	n := heldBytes(m)
	if !f.sink.buf.acquire(n, p.stop) {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped() {
		f.sink.buf.release(n)
		return false
	}
	f.sink.held.Add(n)
	select {
	case f.sink.out <- m:
		p.handedEnd.Store(m.Offset + 1)
		return true
	case <-p.stop:
	}
	f.sink.held.Add(-n)
	f.sink.buf.release(n)
	return false
}
