package mirror

import (
	"context"
	"sync"
	"time"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

// starter prepares the partitions that join a shard in the background: it
// reads their committed progress on the target and their ends and topic
// ids on the source, while the shard goes on copying; the shard installs
// what is prepared between transactions (refreshPartitions).
//
// Prepared in the shard's own loop, a partition that joined during a
// transaction waited for the commit and then for its reads, one after the
// other: in a 10,000-partition launch, where the target creates topics a
// hundred at a time while the first ones copy, a shard's transaction ran
// for seconds and the reads of its next 250 partitions took another 0.5 to
// 2 s (bench/results/diary.md).
//
// Reading a joining partition's progress while the shard's transaction is
// open is safe: the partition is in no open transaction of the shard
// (partitions join and leave between transactions), no other shard writes
// it, and the reads wait for any transaction in doubt (linkstate.Settled).
type starter struct {
	s      *shard
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// done wakes the shard loop when a preparation finished (capacity 1).
	done chan struct{}

	mu sync.Mutex
	// known: the partitions the shard copies, or that are being prepared
	// or prepared and not installed yet; a kick prepares the others.
	known map[topology.TopicPartition]bool
	busy  bool // a preparation runs (at most one at a time)
	ready []*prepared
	// failedAt: partitions whose start failed, retried IdleCheck later
	// (as the shard's refresh retried them).
	failedAt map[topology.TopicPartition]time.Time
}

// prepared is one preparation's outcome: parts[i] is ready to copy unless
// errs[i] says why not; err (the progress read's) fails the shard.
type prepared struct {
	began time.Time
	parts []*partState
	ids   []string
	errs  []error
	err   error
}

func newStarter(ctx context.Context, s *shard) *starter {
	st := &starter{s: s, done: make(chan struct{}, 1),
		known: map[topology.TopicPartition]bool{}, failedAt: map[topology.TopicPartition]time.Time{}}
	st.ctx, st.cancel = context.WithCancel(ctx)
	return st
}

// watch kicks a preparation at every change of the engine's partitions,
// so that partitions joining while the shard is in a transaction are read
// meanwhile.
func (st *starter) watch() {
	st.wg.Go(func() {
		for {
			wake := st.s.e.partsWaker()
			st.kick()
			select {
			case <-wake:
			case <-st.ctx.Done():
				return
			}
		}
	})
}

// stop ends the preparations and waits for them: the shard closes the
// clients they read with.
func (st *starter) stop() {
	st.cancel()
	st.wg.Wait()
}

// kick starts preparing the shard's partitions that are not known yet,
// unless a preparation runs (it kicks again when it ends).
func (st *starter) kick() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.busy || st.ctx.Err() != nil {
		return
	}
	now := time.Now()
	var added []topology.TopicPartition
	for _, tp := range st.s.e.partitionsOf(st.s.id) {
		if st.known[tp] {
			continue
		}
		if at, ok := st.failedAt[tp]; ok && now.Sub(at) < st.s.e.opts.IdleCheck {
			continue
		}
		added = append(added, tp)
	}
	if len(added) == 0 {
		return
	}
	for _, tp := range added {
		st.known[tp] = true
		delete(st.failedAt, tp)
	}
	st.busy = true
	st.wg.Go(func() {
		r := st.s.prepare(st.ctx, added)
		st.mu.Lock()
		st.busy = false
		st.ready = append(st.ready, r)
		st.mu.Unlock()
		select {
		case st.done <- struct{}{}:
		default:
		}
		st.kick()
	})
}

// take returns the preparations finished since the last take.
func (st *starter) take() []*prepared {
	st.mu.Lock()
	defer st.mu.Unlock()
	r := st.ready
	st.ready = nil
	return r
}

// forget makes tp unknown again: it left the shard, or its start failed
// (failed: retried no sooner than IdleCheck from now).
func (st *starter) forget(tp topology.TopicPartition, failed bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.known, tp)
	if failed {
		st.failedAt[tp] = time.Now()
	} else {
		delete(st.failedAt, tp)
	}
}

// prepare reads what starting added needs: their progress on the target,
// then, for each, where its copy goes on (startPartition). It may run
// while the shard copies; it touches no state of the shard's loop.
func (s *shard) prepare(ctx context.Context, added []topology.TopicPartition) *prepared {
	r := &prepared{began: time.Now()}
	// The progress on the target, the source ends of every added
	// partition (one request per broker and kind) and their topics' ids
	// (one metadata request), all at once: a shard of thousands of
	// partitions starts them together rather than one round trip after
	// another, and the target's answer, slow while it creates topics,
	// overlaps the source's. On one broker's connection sarama still sends
	// the source reads one after another; with several brokers they
	// overlap too.
	var (
		progress         map[topology.TopicPartition]linkstate.Progress
		starts, stables  map[topology.TopicPartition]int64
		ids              map[string]string
		serr, lerr, ierr error
		reads            sync.WaitGroup
	)
	reads.Go(func() {
		progress, r.err = linkstate.ReadProgressFull(ctx, s.dst, s.e.link, added, linkstate.Settled, s.e.topicID)
	})
	reads.Go(func() { starts, serr = kafkaread.StartOffsets(ctx, s.srcCl, added) })
	reads.Go(func() { stables, lerr = kafkaread.StableOffsets(ctx, s.srcCl, added) })
	reads.Go(func() { ids, ierr = kafkaread.TopicIDs(ctx, s.srcCl, topicsOf(added)) })
	reads.Wait()
	if r.err != nil {
		r.parts = make([]*partState, len(added))
		for i, tp := range added {
			r.parts[i] = &partState{tp: tp}
		}
		return r
	}
	r.parts = make([]*partState, len(added))
	r.errs = make([]error, len(added))
	r.ids = make([]string, len(added))
	sem := make(chan struct{}, startParallel)
	var wg sync.WaitGroup
	for i, tp := range added {
		p := &partState{tp: tp, next: -1, stable: -1, lastSeen: time.Now()}
		if pe, ok := progress[tp]; ok {
			p.next, p.lastTs = pe.Next, pe.LastTs
		}
		var ends *srcEnds
		if serr == nil && lerr == nil {
			st, ok1 := starts[tp]
			lso, ok2 := stables[tp]
			if ok1 && ok2 {
				ends = &srcEnds{Start: st, Stable: lso}
			}
		}
		r.parts[i] = p
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			id, err := s.sameIncarnation(tp, ids, ierr)
			if err != nil {
				r.errs[i] = err
				return
			}
			r.ids[i] = id
			r.errs[i] = s.startPartition(ctx, p, ends)
		}()
	}
	wg.Wait()
	return r
}
