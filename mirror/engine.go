package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/offsetcommit"
	"github.com/drctl/drctl/internal/poll"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/topology"
)

// Options tune one link's engine. Zero values take the defaults.
type Options struct {
	Delivery topology.Delivery
	// Shards is the link's shard count. 0 keeps the count the link ran
	// with (the shards topic on the target records it), or NewLinkShards
	// of the selected source partitions for a link that never ran; any other count must match what the link
	// ran with (linkstate.Reshard changes it). The engine settles the count at its
	// first start and keeps it: a count changed under a running engine
	// stops it (ShardCountError).
	Shards int32
	// Epoch is the role-state epoch the link was started for (-1: no role
	// state check at all, for tests of the copy alone). After every
	// initialisation of its transactional id a shard reads the target's
	// role state and refuses to write unless Allowed says yes: a failover
	// records the new roles on the target before it fences the link.
	Epoch   int64
	Allowed func(rolestate.State) bool
	// CopyOwnOrigin turns off loop prevention: records whose origin is the
	// target are copied too. A reseed needs it; steady mirroring does not.
	CopyOwnOrigin bool

	// A transaction takes records for TxnLinger at most while the shard
	// keeps up, for up to TxnInterval with a backlog, and commits early
	// when its partitions are idle (group commit, see txn.go).
	TxnInterval time.Duration // longest time a transaction takes records (500ms)
	TxnLinger   time.Duration // its shortest window without a backlog (5ms)
	// TxnConcurrency, when above 0, is how many of the engine's shards
	// may run a transaction at once while they keep up; a shard whose
	// buffer holds a backlog (half full or more) does not wait. Fewer
	// transactions in flight cost a saturated target less, and each
	// carries more records (0: no limit; see docs/mirror.md).
	TxnConcurrency  int
	MaxBatchRecords int // most records per transaction (100,000)
	MaxBatchBytes   int // most key+value bytes per transaction (16 MiB)
	// MaxInflightBytes bounds a shard's copies sent to the target and not
	// yet acknowledged (0: the shard's part of 16 MiB, at least 2 MiB; see
	// shardSizes; a single larger record still goes).
	MaxInflightBytes int
	// FetchBytes bounds a partition's share of a fetch (2 MiB): a busy
	// partition alone in its shard's request may fill the whole response,
	// which matters across a WAN, where a partition gets one response per
	// round trip.
	FetchBytes int32
	// FetchResponseBytes bounds a shard's fetch response: its partitions
	// share it, each getting at least 8 KiB (0: the shard's part of 16
	// MiB, at least 2 MiB; see shardSizes and fetcher.go).
	// Across a WAN both sizes grow while the shard waits on the source,
	// up to 4 times and to half the shard's share of MaxBufferedBytes
	// (fetchsize.go).
	FetchResponseBytes int32
	// FetchWait is how long a fetch may wait at the source for new
	// records (500ms, a Java consumer's fetch.max.wait.ms). The source
	// answers as soon as a record is there, so it delays no record; it sets
	// how often an idle shard asks, which at 10,000 partitions is what an
	// idle link costs the source broker (bench/results/diary.md).
	FetchWait time.Duration
	// FetchGather is how long a fetch of partitions that are streaming
	// (one of them returned records in its last fetch) may wait at the
	// source to gather a batch before it is answered (10ms; negative:
	// never, every fetch is answered at its first record). See gather in
	// fetcher.go: it adds at most this to a record's latency, and a shard
	// copying a steady stream asks its source about once per FetchGather
	// instead of once per round trip.
	FetchGather   time.Duration
	ChannelBuffer int // records buffered per shard (2048)
	// MaxBufferedBytes bounds the source records the engine holds between
	// fetch and commit, over all its shards (64 MiB; see budget).
	MaxBufferedBytes  int64
	IdleCheck         time.Duration // how often an idle shard refreshes lag (1s)
	ProduceTimeout    time.Duration // bound on one acknowledgement (60s)
	TopicSyncInterval time.Duration // how often topics are synced (5s)
	SessionTimeout    time.Duration // worker group session timeout (10s)
	OffsetsRetention  time.Duration // retention of the offset map (7 days)
	// ProgressEvery is how often an exactly-once shard checkpoints its
	// progress in the progress group (1s); between checkpoints the offset
	// map carries it (checkpoint.go). Negative: in every transaction.
	ProgressEvery time.Duration
	// MaxCheckpointBytes bounds the estimated size of the progress one
	// transaction commits (offsetcommit.MaxBytes, 512 KiB): a group
	// coordinator writes it as one batch, which Kafka refuses above
	// __consumer_offsets' max.message.bytes. A transaction takes records
	// of at most as many partitions as fit (checkpoint.go).
	MaxCheckpointBytes int
	BlockedRetry       time.Duration // pause of a partition the target refuses (1m)
	// StallTimeout: a link behind the source that makes no progress for
	// this long is stalled, and the daemon's /healthz fails (2m).
	StallTimeout time.Duration

	Logger  *slog.Logger
	Metrics *Metrics
}

// DefaultTxnInterval is the longest a transaction takes records, reached
// only with a backlog (see txn.go). A backlog's exactly-once copy runs at
// the speed of its transactions' count: the target's brokers spend about as
// much CPU on a transaction's requests and markers as on megabytes of its
// records, so a long window lets a catching-up shard commit a few large
// transactions instead of many small ones.
const DefaultTxnInterval = 500 * time.Millisecond

func (o *Options) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if o.Delivery == "" {
		o.Delivery = topology.ExactlyOnce
	}
	o.Shards = max(o.Shards, 0)
	if o.Allowed == nil {
		o.Allowed = func(rolestate.State) bool { return true }
	}
	def(&o.TxnInterval, DefaultTxnInterval)
	def(&o.TxnLinger, 5*time.Millisecond)
	o.TxnLinger = min(o.TxnLinger, o.TxnInterval)
	def(&o.FetchWait, 500*time.Millisecond)
	if o.FetchGather == 0 {
		o.FetchGather = 10 * time.Millisecond
	}
	def(&o.IdleCheck, time.Second)
	def(&o.ProduceTimeout, 60*time.Second)
	def(&o.TopicSyncInterval, 5*time.Second)
	def(&o.SessionTimeout, 10*time.Second)
	def(&o.OffsetsRetention, 7*24*time.Hour)
	if o.ProgressEvery == 0 {
		o.ProgressEvery = time.Second
	}
	if o.MaxCheckpointBytes <= 0 {
		o.MaxCheckpointBytes = offsetcommit.MaxBytes
	}
	def(&o.BlockedRetry, time.Minute)
	def(&o.StallTimeout, 2*time.Minute)
	if o.MaxBatchRecords <= 0 {
		o.MaxBatchRecords = 100_000
	}
	if o.MaxBatchBytes <= 0 {
		o.MaxBatchBytes = 16 << 20
	}
	if o.FetchBytes <= 0 {
		o.FetchBytes = defaultRespBytes
	}
	if o.Shards > 0 {
		o.shardSizes()
	}
	if o.MaxBufferedBytes <= 0 {
		o.MaxBufferedBytes = 64 << 20
	}
	if o.ChannelBuffer <= 0 {
		o.ChannelBuffer = 2048
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
}

// linkBytes is what a link's shards share of fetch responses and of
// copies in flight: each shard gets an even part of it, and never less
// than defaultRespBytes. With 2 shards each fetches up to 8 MiB and keeps
// up to 8 MiB in flight, as much as 8 shards of 2 MiB together: sizes of
// 2 MiB took 15-25% off a 2-shard link's exactly-once copy of a backlog,
// and even sizes made it faster than 8 shards (bench/results/diary.md).
const linkBytes = 16 << 20

// shardSizes sets the per-shard sizes left at 0 (FetchResponseBytes,
// MaxInflightBytes) once the shard count is known.
func (o *Options) shardSizes() {
	share := max(defaultRespBytes, linkBytes/int(max(o.Shards, 1)))
	if o.FetchResponseBytes <= 0 {
		o.FetchResponseBytes = int32(share)
	}
	if o.MaxInflightBytes <= 0 {
		o.MaxInflightBytes = share
	}
}

// Engine runs one link in this process: it keeps the target's topics in
// shape, joins the link's worker group, and copies the shards it is given.
// Several processes may run the same link; they share its shards.
type Engine struct {
	topo       *topology.Topology
	link       topology.Link
	opts       Options
	srcCluster *topology.Cluster
	dstCluster *topology.Cluster
	metrics    *Metrics
	log        *slog.Logger
	srcID      []byte
	dstID      []byte
	resetFor   string // the target cluster id the last target reset was for (under mu)
	// adopted: opts.Shards was 0 and the engine took the link's count at
	// its first start (ensureInternalTopics).
	adopted bool

	mu       sync.Mutex
	byShard  map[int32][]topology.TopicPartition
	limits   map[string]int32  // source max.message.bytes of each ready topic
	ids      map[string]string // source topic id of each ready topic (the ledger's)
	synced   bool
	progress map[topology.TopicPartition]int64
	stable   map[topology.TopicPartition]int64
	trouble  map[topology.TopicPartition]string
	// warnedTopics: the topics whose trouble was logged as a warning, with
	// it (under mu; see publish).
	warnedTopics map[string]string
	blocked      map[topology.TopicPartition]blockedPart
	owned        map[int32]bool
	buf          *budget
	// txnTokens holds one token per transaction in flight while shards
	// keep up (Options.TxnConcurrency; nil: no limit).
	txnTokens chan struct{}
	// partsGen changes whenever the partitions of a shard may have
	// changed (a topic sync, a block, a block cleared); see partsChanged.
	partsGen atomic.Uint64
	// partsWake is closed and replaced at each change of partsGen, so
	// that a waiting shard starts its new partitions at once, not at its
	// next IdleCheck (a second of every link's start).
	wakeMu    sync.Mutex
	partsWake chan struct{}
	health    linkHealth
	// resetNote: when and why the target was last found to have lost its
	// data; written to the ends topic for status.
	resetNote string
	// paused is the id of the pause that stops the copying ("": none;
	// see linkstate.Pause, SetPaused).
	paused string
	// moved holds the target partitions where a copy did not get the
	// offset predicted for it (errTargetMoved): something else writes them,
	// and no shard of this process predicts their offsets again.
	moved sync.Map
}

// errTargetMoved: a target partition's offsets moved under the shard, so
// its transaction is aborted and the shard restarts without predicting
// that partition's offsets (see txn.predict).
var errTargetMoved = errors.New("target offsets moved")

func (e *Engine) setUnpredictable(tp topology.TopicPartition) { e.moved.Store(tp, true) }

func (e *Engine) unpredictable(tp topology.TopicPartition) bool {
	_, ok := e.moved.Load(tp)
	return ok
}

// NewEngine prepares the link source -> target of topo.
func NewEngine(topo *topology.Topology, source, target string, opts Options) (*Engine, error) {
	opts.defaults()
	src, dst := topo.Clusters[source], topo.Clusters[target]
	if src == nil || dst == nil || source == target {
		return nil, fmt.Errorf("mirror: no link %s -> %s in topology %s", source, target, topo.Name)
	}
	link := topo.Link(source, target)
	return &Engine{
		topo: topo, link: link, opts: opts, srcCluster: src, dstCluster: dst,
		metrics: opts.Metrics, log: opts.Logger.With("link", link.String()),
		byShard: map[int32][]topology.TopicPartition{}, progress: map[topology.TopicPartition]int64{},
		stable: map[topology.TopicPartition]int64{}, trouble: map[topology.TopicPartition]string{}, warnedTopics: map[string]string{}, owned: map[int32]bool{},
		blocked: map[topology.TopicPartition]blockedPart{}, buf: newBudget(opts.MaxBufferedBytes),
		txnTokens: txnTokens(opts.TxnConcurrency),
	}, nil
}

// txnTokens returns the tokens of Options.TxnConcurrency (nil: no limit).
func txnTokens(n int) chan struct{} {
	if n <= 0 {
		return nil
	}
	return make(chan struct{}, n)
}

// Link returns the engine's link.
func (e *Engine) Link() topology.Link { return e.link }

// partialMetadata keeps a client's metadata to the topics it uses, for the
// many clients of a mirror (two per shard, each shard's producer, the
// workers' group) that never list the cluster's topics: with sarama's
// default every one of them would hold, and refresh, the metadata of every
// topic of its cluster, so that the mirror's memory grew with the size of
// clusters and not with what it mirrors.
func partialMetadata(c *sarama.Config) { c.Metadata.Full = false }

func (e *Engine) dial(ctx context.Context, c *topology.Cluster, tune func(*sarama.Config)) (sarama.Client, error) {
	dctx, cancel := context.WithTimeout(ctx, c.Timeout+5*time.Second)
	defer cancel()
	return kafkaconn.Dial(dctx, c, tune)
}

// Run copies until ctx ends (then it commits what is in flight and
// returns nil), the link is retired (ErrLinkRetired) or it was asked for
// another shard count than it ran with (*ShardCountError). Trouble with
// either cluster is retried with backoff, counted and logged, never fatal.
func (e *Engine) Run(ctx context.Context) error {
	defer e.metrics.ForgetLink(e.link.String())
	retry := poll.Backoff{Initial: time.Second, Max: 10 * time.Second}
	for {
		began := time.Now()
		err := e.runOnce(ctx)
		if _, ok := errors.AsType[*ShardCountError](err); ok {
			return err
		}
		if ctx.Err() != nil || errors.Is(err, ErrLinkRetired) {
			if errors.Is(err, ErrLinkRetired) {
				return err
			}
			return nil
		}
		e.metrics.Errors.WithLabelValues(e.link.String(), "engine").Inc()
		if time.Since(began) >= healthyRun {
			retry.Reset() // the link ran well before this trouble
		}
		wait := retry.Next()
		e.log.Error("mirror link stopped; retrying", "err", err, "retry_in", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// healthyRun is how long a link must have run before its trouble counts
// as new: the retries start again from a second.
const healthyRun = time.Minute

func (e *Engine) runOnce(ctx context.Context) error {
	// Both clusters at once: one of them may be a WAN away.
	var (
		src, dst       sarama.Client
		srcErr, dstErr error
		dials          sync.WaitGroup
	)
	dials.Go(func() { src, srcErr = e.dial(ctx, e.srcCluster, nil) })
	dials.Go(func() { dst, dstErr = e.dial(ctx, e.dstCluster, nil) })
	dials.Wait()
	defer func() {
		for _, cl := range []sarama.Client{src, dst} {
			if cl != nil {
				_ = cl.Close()
			}
		}
	}()
	if srcErr != nil {
		return srcErr
	}
	if dstErr != nil {
		return dstErr
	}
	sid, err := kafkaconn.ClusterID(src)
	if err != nil {
		return fmt.Errorf("source %s: %w", e.link.Source, err)
	}
	did, err := kafkaconn.ClusterID(dst)
	if err != nil {
		return fmt.Errorf("target %s: %w", e.link.Target, err)
	}
	if sid == did {
		return fmt.Errorf("source %s and target %s are the same cluster (id %s): fix the bootstrap addresses", e.link.Source, e.link.Target, sid)
	}
	if e.dstID != nil && string(e.dstID) != did && !e.resetAlready(did) {
		e.targetReset(fmt.Sprintf("the target %s now has cluster id %s (was %s): it lost its data", e.link.Target, did, e.dstID), did)
	}
	e.srcID, e.dstID = []byte(sid), []byte(did)
	if err := e.ensureInternalTopics(ctx, src, dst); err != nil {
		return err
	}
	syncer, err := newTopicSyncer(src, dst, e.dstCluster, e.link, e.topo.Mirrors, e.fenceNewTopics(src, dst))
	if err != nil {
		return err
	}
	defer syncer.close()
	syncer.changed = e.publishTopicChanges
	syncer.early = e.publishMore
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	var lost error
	go func() {
		defer wg.Done()
		if lost = e.syncTopicsLoop(runCtx, syncer, src, dst); lost != nil {
			cancel()
		}
	}()
	go func() {
		defer wg.Done()
		e.syncGroups(runCtx, src, dst)
	}()
	err = e.work(runCtx)
	cancel()
	wg.Wait()
	if lost != nil {
		return lost
	}
	return err
}

// syncTopicsLoop keeps target topics in shape, publishes the partitions
// each shard copies and measures the link's lag. It returns an error, to
// restart the link from scratch, when the target lost its data.
func (e *Engine) syncTopicsLoop(ctx context.Context, syncer topicSyncer, src, dst sarama.Client) error {
	t := time.NewTicker(e.opts.TopicSyncInterval)
	defer t.Stop()
	for {
		if why, id := e.targetChange(ctx, dst); why != "" {
			e.targetReset(why, id)
			return fmt.Errorf("%s; rebuilding the link", why)
		}
		began := time.Now()
		ready, troubles, err := syncer.sync(ctx)
		if e.log.Enabled(ctx, slog.LevelDebug) {
			e.log.Debug("topics synced", "ready", len(ready), "not_ready", len(troubles), "took", time.Since(began).Round(time.Millisecond),
				"first_trouble", firstTrouble(troubles))
		}
		if err != nil {
			e.metrics.Errors.WithLabelValues(e.link.String(), "topics").Inc()
			warn(ctx, e.log, "topic sync failed", "err", err)
		} else {
			e.publish(ready, troubles)
		}
		e.measureLink(ctx, src, dst)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// partsChanged says that the partitions of a shard may have changed.
func (e *Engine) partsChanged() {
	e.partsGen.Add(1)
	e.wakeMu.Lock()
	if e.partsWake != nil {
		close(e.partsWake)
	}
	e.partsWake = make(chan struct{})
	e.wakeMu.Unlock()
}

// partsWaker returns a channel closed at the next partsChanged.
func (e *Engine) partsWaker() <-chan struct{} {
	e.wakeMu.Lock()
	defer e.wakeMu.Unlock()
	if e.partsWake == nil {
		e.partsWake = make(chan struct{})
	}
	return e.partsWake
}

func (e *Engine) publish(ready map[string]readyTopic, troubles map[string]string) {
	by := map[int32][]topology.TopicPartition{}
	limits := map[string]int32{}
	ids := map[string]string{}
	for topic, rt := range ready {
		limits[topic] = rt.MaxMessageBytes
		ids[topic] = rt.SourceID
		for p := int32(0); p < rt.Partitions; p++ {
			s := ShardOf(topic, p, e.opts.Shards)
			by[s] = append(by[s], topology.TopicPartition{Topic: topic, Partition: p})
		}
	}
	for _, tps := range by {
		slices.SortFunc(tps, topology.TopicPartition.Compare)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.byShard, e.synced, e.limits, e.ids = by, true, limits, ids
	e.partsChanged()
	// A topic kept out for the same reason two passes in a row is told
	// once, at warning level: a refused create, a conflict. One pass's
	// trouble is often passing (a topic the target still creates), and at
	// hundreds of topics a warning each would bury the log.
	for topic, msg := range troubles {
		if e.trouble[topology.TopicPartition{Topic: topic, Partition: -1}] == msg && e.warnedTopics[topic] != msg {
			e.warnedTopics[topic] = msg
			e.log.Warn("topic not mirrored; it is tried again every topic sync pass", "topic", topic, "why", msg)
		}
	}
	for topic := range e.warnedTopics {
		if _, ok := troubles[topic]; !ok {
			delete(e.warnedTopics, topic)
		}
	}
	// Topic-level troubles are this pass's; partition-level ones stay
	// until the partition copies again.
	for tp := range e.trouble {
		if tp.Partition < 0 {
			delete(e.trouble, tp)
		}
	}
	for topic, msg := range troubles {
		e.trouble[topology.TopicPartition{Topic: topic, Partition: -1}] = msg
	}
}

// publishMore adds the partitions of ready to those the shards copy, ahead
// of the end of a topic sync pass (whose publish then sets the whole
// picture): a pass that creates hundreds of topics hands over each batch as
// soon as the target shows it, so that the shards start copying them while
// the target still creates the rest. It never removes a partition.
func (e *Engine) publishMore(ready map[string]readyTopic) {
	e.mu.Lock()
	defer e.mu.Unlock()
	have := map[topology.TopicPartition]bool{}
	for _, tps := range e.byShard {
		for _, tp := range tps {
			if _, ok := ready[tp.Topic]; ok {
				have[tp] = true
			}
		}
	}
	added := map[int32][]topology.TopicPartition{}
	for topic, rt := range ready {
		for p := int32(0); p < rt.Partitions; p++ {
			tp := topology.TopicPartition{Topic: topic, Partition: p}
			if !have[tp] {
				s := ShardOf(topic, p, e.opts.Shards)
				added[s] = append(added[s], tp)
			}
		}
	}
	if len(added) == 0 {
		return
	}
	if e.limits == nil {
		e.limits, e.ids = map[string]int32{}, map[string]string{}
	}
	for topic, rt := range ready {
		e.limits[topic], e.ids[topic] = rt.MaxMessageBytes, rt.SourceID
	}
	by := maps.Clone(e.byShard)
	if by == nil {
		by = map[int32][]topology.TopicPartition{}
	}
	// New slices: partitionsOf hands out the old ones.
	for s, tps := range added {
		all := append(slices.Clone(by[s]), tps...)
		slices.SortFunc(all, topology.TopicPartition.Compare)
		by[s] = all
	}
	e.byShard = by
	e.partsChanged()
}

// partitionsOf returns the partitions shard copies now: those of ready
// topics, less the blocked ones in their retry pause.
func (e *Engine) partitionsOf(shard int32) []topology.TopicPartition {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.blocked) == 0 {
		return e.byShard[shard]
	}
	now := time.Now()
	var out []topology.TopicPartition
	for _, tp := range e.byShard[shard] {
		if !e.blockedNowLocked(tp, now) {
			out = append(out, tp)
		}
	}
	return out
}

// topicID returns the source topic id the link mirrors for topic ("":
// unknown).
func (e *Engine) topicID(topic string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ids[topic]
}

func (e *Engine) setProgress(tp topology.TopicPartition, next int64) {
	e.mu.Lock()
	e.progress[tp] = next
	lso, ok := e.stable[tp]
	e.mu.Unlock()
	if ok {
		e.metrics.partitionLag(e.link.String(), tp, lso, next)
	}
}

func (e *Engine) setStable(tp topology.TopicPartition, lso int64) {
	e.mu.Lock()
	e.stable[tp] = lso
	next, ok := e.progress[tp]
	e.mu.Unlock()
	if ok {
		e.metrics.partitionLag(e.link.String(), tp, lso, next)
	}
}

func (e *Engine) noteTrouble(tp topology.TopicPartition, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.trouble[tp] = msg
}

// Troubles returns what the engine could not copy and why, for status.
func (e *Engine) Troubles() map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]string{}
	for tp, msg := range e.trouble {
		name := tp.Topic
		if tp.Partition >= 0 {
			name = tp.String()
		}
		out[name] = msg
	}
	if e.resetNote != "" {
		out[e.link.Target] = e.resetNote
	}
	return out
}

// OwnedShards returns the shards this process copies now.
func (e *Engine) OwnedShards() []int32 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Sorted(maps.Keys(e.owned))
}

// Ready reports whether the engine has synced topics and owns shards.
func (e *Engine) Ready() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.synced && len(e.owned) > 0
}

// leads reports whether this process owns the link's shard 0: of the
// processes sharing a link, the one that runs the work done once per link
// beside the copy (DaemonOptions.Beside).
func (e *Engine) leads() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.synced && e.owned[0]
}

func (e *Engine) setOwned(shard int32, owned bool) {
	e.mu.Lock()
	if owned {
		e.owned[shard] = true
	} else {
		delete(e.owned, shard)
	}
	n := len(e.owned)
	e.mu.Unlock()
	e.metrics.ShardsOwned.WithLabelValues(e.link.String()).Set(float64(n))
	if !owned {
		e.metrics.forgetPartitions(e.link.String(), e.partitionsOf(shard))
	}
}

// newProducer creates the shard's producer on the target. For
// exactly-once it is transactional, and creating it initialises the
// shard's transactional id, which fences every earlier holder.
//
// maxBytes sizes it (Producer.MaxMessageBytes): every record a source topic
// of the shard accepted must fit.
func (e *Engine) newProducer(shard int32, maxBytes int) (sarama.AsyncProducer, error) {
	cfg, err := e.dstCluster.SaramaConfig()
	if err != nil {
		return nil, err
	}
	kafkaconn.CopyProducer(cfg)
	partialMetadata(cfg)
	cfg.Producer.MaxMessageBytes = max(maxBytes, defaultProducerBytes)
	// A shard rides out a partition that is not ready to be written for
	// longer than the second other producers give it: a broker that just
	// created hundreds of partitions names itself their leader in metadata
	// seconds before it accepts writes to them, and a shard that gave up
	// restarted, aborting a transaction whose markers then waited for the
	// same partitions, so that its producer could not be opened again for
	// tens of seconds (CONCURRENT_TRANSACTIONS). ProduceTimeout still bounds
	// the whole wait.
	shardRetries(cfg)
	if e.opts.Delivery == topology.ExactlyOnce {
		cfg.Producer.Transaction.ID = e.link.TransactionalID(shard)
		cfg.Producer.Transaction.Timeout = 60 * time.Second
		// The coordinator answers CONCURRENT_TRANSACTIONS to a transaction
		// that starts while the previous one's markers are being written,
		// which with early commits is the usual case: retry after a few
		// milliseconds, not sarama's 100 ms.
		cfg.Producer.Transaction.Retry.BackoffFunc = txnRetryBackoff
	}
	return sarama.NewAsyncProducer(e.dstCluster.Bootstrap, cfg)
}

// shardProduceRetries is how often a shard's producer retries a write the
// target refused for a reason that passes (a leader not ready or moving):
// the first kafkaconn.ProducerRetries retries kafkaconn.ProducerRetryBackoff
// apart, as every producer of drctl, then shardSlowRetryBackoff apart,
// about 10 s in all (shardRetryBackoff). Fewer retries further apart ride
// out as long as 100 retries 100 ms apart did, and cost less: sarama keeps
// a slot per retry level in the producer of every target partition, 32
// bytes each, so 100 levels took 3,456 bytes per partition (47: 1,536),
// 35 MB of a 10,000-partition link's live heap (bench/results/diary.md).
const shardProduceRetries = kafkaconn.ProducerRetries + 36

// shardSlowRetryBackoff is the pause between a shard's retries once the
// first kafkaconn.ProducerRetries have failed.
const shardSlowRetryBackoff = 250 * time.Millisecond

// shardRetries sets a shard producer's retries: see shardProduceRetries.
func shardRetries(cfg *sarama.Config) {
	cfg.Producer.Retry.Max = shardProduceRetries
	cfg.Producer.Retry.BackoffFunc = shardRetryBackoff
}

// shardRetryBackoff is the pause before a shard producer's retry number
// retries (from 1): see shardProduceRetries.
func shardRetryBackoff(retries, _ int) time.Duration {
	if retries <= kafkaconn.ProducerRetries {
		return kafkaconn.ProducerRetryBackoff
	}
	return shardSlowRetryBackoff
}

// txnRetryBackoff waits 5 ms before the first retry of a transaction
// request and doubles up to 100 ms.
func txnRetryBackoff(retries, _ int) time.Duration {
	return min(5*time.Millisecond<<min(retries, 5), 100*time.Millisecond)
}

// firstTrouble is the trouble of the first topic by name ("" when none),
// an example for the debug log.
func firstTrouble(troubles map[string]string) string {
	if len(troubles) == 0 {
		return ""
	}
	name := slices.Min(slices.Collect(maps.Keys(troubles)))
	return name + ": " + troubles[name]
}
