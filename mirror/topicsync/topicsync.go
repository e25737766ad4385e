package topicsync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// Options tune a Syncer.
type Options struct {
	// Prefix renames topics on the target. Only identity naming ("") is
	// implemented; New rejects anything else.
	Prefix string
	// ExcludeConfigs are topic config keys never copied from the source and
	// never touched on the target, in addition to the built-in list (see
	// configs.go). They win over every other rule.
	ExcludeConfigs []string
	// SettleTimeout bounds how long a pass that changed the target waits
	// for the changes to become visible (topic and partitions present, with
	// leaders, configs in effect). Zero means 5 s.
	SettleTimeout time.Duration
	// Ownership, when set, is asked about every selected source topic with
	// its source topic id before anything is written. owned: drctl created
	// the target topic for this source topic, so it follows the source's
	// settings in full, cleanup.policy included. hold, when not empty, keeps
	// the topic out of the pass: it becomes the topic's Conflict and
	// nothing is written to it (a topic recreated on the source, whose old
	// copy waits for the operator's choice).
	Ownership func(name, sourceID string) (owned bool, hold string)
	// Version is the Kafka version the target admin client is configured
	// for (its sarama.Config.Version; zero: sarama.DefaultVersion): it picks
	// the version of the CreateTopics requests that create several topics
	// at once.
	Version sarama.KafkaVersion
	// Ready, when set, is told during a pass of topics that are ready
	// before the pass ends, so that the mirror may copy them at once: first
	// the selected topics that need no change, then, while the pass still
	// writes to or waits for others, each batch of written topics as soon as
	// the target shows them. Each topic is told at most once per pass, with
	// the TopicResult it will have in the pass's report; calls come one at a
	// time from the pass, which waits for each (keep them short).
	Ready func([]TopicResult)
	// BeforeCreate, when set, is called once per pass with the names of
	// the topics the pass is about to create on the target, before any of
	// them is created; when it fails, none of them is created in this pass
	// (each gets the error) and the other changes go on. The mirror uses it
	// to fence the standby's new topics before they exist, so that a grant
	// by prefix already on the standby never meets a topic unfenced.
	BeforeCreate func(ctx context.Context, names []string) error
}

// Syncer keeps the target's selected topics in the source's shape. Its
// methods are safe for concurrent use; passes run one at a time.
type Syncer struct {
	src, dst sarama.ClusterAdmin
	mirrors  func(topic string) bool
	policy   policy
	settle   time.Duration
	owner    func(name, sourceID string) (bool, string)
	version  sarama.KafkaVersion
	ready    func([]TopicResult)
	before   func(ctx context.Context, names []string) error
	// batchRecords bounds the metadata records of one CreateTopics request
	// (createBatchRecords; lowered by tests).
	batchRecords int
	// opRecords is the most metadata records the target's controller
	// writes for one operation (kraftOpRecords; lowered by tests).
	opRecords int
	// listWait bounds the settle wait for a topic the target does not list
	// yet (listWait; lowered by tests).
	listWait time.Duration

	mu sync.Mutex
}

// maxRounds bounds how often the settle step re-applies changes that the
// target does not reflect back, so a broker that rewrites a value cannot make
// a pass loop until its deadline.
const maxRounds = 2

// New returns a Syncer that copies the topics mirrors selects from src (the
// live active cluster) to dst (the standby); pass the topology's Mirrors. It
// only reads src.
func New(src, dst sarama.ClusterAdmin, mirrors func(topic string) bool, opts Options) (*Syncer, error) {
	if src == nil || dst == nil || mirrors == nil {
		return nil, errors.New("topicsync: the source and the target admin client and the topic selection are required")
	}
	if opts.Prefix != "" {
		return nil, fmt.Errorf("topicsync: topic prefix %q: only identity naming is supported; remove the prefix", opts.Prefix)
	}
	if slices.Contains(opts.ExcludeConfigs, "") {
		return nil, errors.New("topicsync: empty config key in the config exclusions; remove it")
	}
	settle := opts.SettleTimeout
	if settle <= 0 {
		settle = 5 * time.Second
	}
	owner := opts.Ownership
	if owner == nil {
		owner = func(string, string) (bool, string) { return false, "" }
	}
	version := opts.Version
	if version == (sarama.KafkaVersion{}) {
		version = sarama.DefaultVersion
	}
	return &Syncer{src: src, dst: dst, mirrors: mirrors, policy: newPolicy(opts.ExcludeConfigs), settle: settle, owner: owner,
		version: version, ready: opts.Ready, before: opts.BeforeCreate, batchRecords: createBatchRecords, opRecords: kraftOpRecords, listWait: listWait}, nil
}

// selected reports whether a source topic is to be mirrored.
func (s *Syncer) selected(name string) bool {
	return s.mirrors(name)
}

// Sync runs one pass: it lists the source's selected, non-internal topics,
// compares each with the target, and creates, grows or reconfigures the
// target topic to match. A topic that cannot be synced gets its own Conflict
// or Err in the report; the others go on.
//
// When nothing changed, a pass costs one metadata and one describe-configs
// request per cluster and writes nothing. After writes it waits (at most
// Options.SettleTimeout) until the target shows them, so a topic the report
// lists as ready exists on the target with all its partitions led.
//
// Sync returns an error, and no report, when a cluster cannot be observed at
// all. When ctx ends mid-pass it returns the partial report and ctx's error;
// single requests are bounded by the admin clients' own timeouts.
func (s *Syncer) Sync(ctx context.Context) (Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return Report{}, fmt.Errorf("topicsync: %w", err)
	}

	src, err := observe(s.src, "source", nil, s.selected, nil)
	if err != nil {
		return Report{}, fmt.Errorf("topicsync: %w; check that the source cluster is reachable and that drctl may describe its topics and their configs", err)
	}
	names := src.names()
	wanted := make(map[string]bool, len(names))
	for _, n := range names {
		wanted[n] = true
	}
	dst, err := observe(s.dst, "target", nil, func(n string) bool { return wanted[n] }, nil)
	if err != nil {
		return Report{}, fmt.Errorf("topicsync: %w; check that the target cluster is reachable and that drctl may describe its topics and their configs", err)
	}

	var tgt target
	var brokersErr error
	for _, n := range names {
		if src.topics[n] != nil && dst.topics[n] == nil && dst.errs[n] == nil {
			tgt, brokersErr = s.targetFacts()
			break
		}
	}

	results := make([]TopicResult, len(names))
	var jobs []applyJob
	for i, name := range names {
		r := &results[i]
		r.Name = name
		so := src.topics[name]
		if so == nil {
			r.Err = src.errs[name]
			continue
		}
		r.Partitions = so.partitions
		r.SourceID = so.id
		r.MaxMessageBytes = maxMessageBytes(so)
		owned, hold := s.owner(name, so.id)
		if hold != "" {
			r.Conflict = hold
			continue
		}
		if err := dst.errs[name]; err != nil {
			r.Err = err
			continue
		}
		do := dst.topics[name]
		if do == nil && brokersErr != nil {
			r.Err = brokersErr
			continue
		}
		c := s.policy.decide(so, do, tgt, owned)
		r.Held, r.Notes, r.Conflict = c.held, c.notes, c.conflict
		if do != nil {
			r.ReplicationFactor = do.rf
		}
		if c.conflict != "" || !c.writes() {
			continue
		}
		if err := ctx.Err(); err != nil {
			r.Err = fmt.Errorf("target: not synced: %w", err)
			continue
		}
		jobs = append(jobs, applyJob{i: i, c: c, do: do})
	}
	jobs = s.prepareCreates(ctx, jobs, results)
	if s.ready != nil && len(jobs) > 0 {
		// Those that need nothing are ready now, whatever the writes take.
		writing := make(map[int]bool, len(jobs))
		for _, j := range jobs {
			writing[j.i] = true
		}
		var now []TopicResult
		for i, r := range results {
			if !writing[i] && r.Ready() {
				now = append(now, r)
			}
		}
		if len(now) > 0 {
			s.ready(now)
		}
	}
	// Each topic is watched for its changes to show from the moment its
	// writes are done, while the others are still being written.
	written := make(chan []int, len(jobs))
	var settling sync.WaitGroup
	settling.Go(func() { s.settleWrites(ctx, src, results, written) })
	s.applyAll(jobs, results, written)
	close(written)
	settling.Wait()

	rep := Report{Topics: results}
	if err := ctx.Err(); err != nil {
		return rep, fmt.Errorf("topicsync: pass interrupted: %w", err)
	}
	return rep, nil
}

// prepareCreates calls the BeforeCreate hook with the topics jobs create
// and returns jobs without those creations when it fails, each of their
// results holding the hook's error.
func (s *Syncer) prepareCreates(ctx context.Context, jobs []applyJob, results []TopicResult) []applyJob {
	if s.before == nil {
		return jobs
	}
	var names []string
	for _, j := range jobs {
		if j.c.create {
			names = append(names, results[j.i].Name)
		}
	}
	if len(names) == 0 {
		return jobs
	}
	err := s.before(ctx, names)
	if err == nil {
		return jobs
	}
	kept := jobs[:0]
	for _, j := range jobs {
		if j.c.create {
			results[j.i].Err = fmt.Errorf("target: not created yet: %w", err)
			continue
		}
		kept = append(kept, j)
	}
	return kept
}

// applyJob is a change to make on one target topic (results[i]).
type applyJob struct {
	i  int
	c  change
	do *observed
}

// applyParallel bounds the requests a pass makes at the same time.
const applyParallel = 16

// applyAll makes the changes of jobs, recording each in its result, and
// reports which succeeded; done, when not nil, receives the result indexes
// of the successes as soon as their writes are made, those of one create
// request together (so that the settler looks for them, and Options.Ready
// hears of them, as one batch); it must have room for one send per job.
// The writes of different topics are independent: a pass that creates or
// alters hundreds of topics makes its requests side by side, not one after
// another (each waits for the controller), and creates its new topics
// several to a request (see createBatches).
func (s *Syncer) applyAll(jobs []applyJob, results []TopicResult, done chan<- []int) []bool {
	ok := make([]bool, len(jobs))
	succeeded := func(js ...int) {
		if len(js) == 0 {
			return
		}
		is := make([]int, len(js))
		for n, j := range js {
			ok[j] = true
			is[n] = jobs[j].i
		}
		if done != nil {
			done <- is
		}
	}
	sem := make(chan struct{}, applyParallel)
	var wg sync.WaitGroup
	run := func(f func()) {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			f()
		}()
	}
	var creates []int
	for j, job := range jobs {
		if job.c.create {
			creates = append(creates, j)
			continue
		}
		run(func() {
			r := &results[job.i]
			if err := s.apply(r.Name, job.c, job.do, r); err != nil {
				r.Err = err
				return
			}
			succeeded(j)
		})
	}
	for _, batch := range s.createBatches(jobs, creates) {
		run(func() {
			details := make(map[string]*sarama.TopicDetail, len(batch))
			for _, j := range batch {
				details[results[jobs[j].i].Name] = topicDetail(jobs[j].c)
			}
			errs := s.createTopics(details)
			var created []int
			for _, j := range batch {
				r := &results[jobs[j].i]
				if err := errs[r.Name]; err != nil {
					r.Err = s.createError(jobs[j].c, err)
					continue
				}
				r.Created = true
				r.ReplicationFactor = jobs[j].c.rf
				r.ConfigsChanged = mergeKeys(r.ConfigsChanged, keys(jobs[j].c.configs))
				created = append(created, j)
			}
			succeeded(created...)
		})
	}
	wg.Wait()
	return ok
}

// createBatchRecords bounds the metadata records one CreateTopics request
// makes the target's controller write: a topic record, one per partition
// and one per config of each topic. A KRaft controller refuses a request
// of more than 10,000 records with POLICY_VIOLATION for every topic in it
// ("would exceed the maximum length of 10000"). createBatchTopics bounds
// its topics.
const (
	createBatchRecords = 5000
	createBatchTopics  = 100
)

// kraftOpRecords is the most metadata records a KRaft controller writes
// for one operation: a topic with more partitions than that cannot be
// created in one request by anyone.
const kraftOpRecords = 10000

// createRecords is the metadata records creating the topic of c writes.
func createRecords(c change) int {
	return 1 + int(c.partitions) + len(c.configs)
}

// createTimeout is how long the target's controller may take to create
// one request's topics.
const createTimeout = 30 * time.Second

// createBatches groups the create jobs jobs[creates] into requests, in
// order: each within createBatchTopics topics and s.batchRecords records,
// except a topic larger than that alone, which goes alone.
func (s *Syncer) createBatches(jobs []applyJob, creates []int) [][]int {
	var out [][]int
	var cur []int
	records := 0
	for _, j := range creates {
		n := createRecords(jobs[j].c)
		if len(cur) > 0 && (len(cur) >= createBatchTopics || records+n > s.batchRecords) {
			out = append(out, cur)
			cur, records = nil, 0
		}
		cur = append(cur, j)
		records += n
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// topicDetail is the CreateTopics entry of the change c.
func topicDetail(c change) *sarama.TopicDetail {
	entries := make(map[string]*string, len(c.configs))
	for k, v := range c.configs {
		entries[k] = &v
	}
	return &sarama.TopicDetail{NumPartitions: c.partitions, ReplicationFactor: c.rf, ConfigEntries: entries}
}

// createTopics creates the topics of details on the target in one request
// and returns each one's error (nil: created). A topic the request could
// not answer for (no answer from the controller, a controller that moved,
// a topic missing from the response) is created on its own with sarama's
// CreateTopic, which finds the controller again and retries.
func (s *Syncer) createTopics(details map[string]*sarama.TopicDetail) map[string]error {
	errs := make(map[string]error, len(details))
	var again []string
	if len(details) == 1 {
		for name := range details {
			again = append(again, name)
		}
	} else if resp, err := s.createRequest(details); err != nil {
		again = slices.Collect(maps.Keys(details))
	} else {
		for name := range details {
			te, ok := resp.TopicErrors[name]
			switch {
			case !ok || te == nil:
				again = append(again, name)
			case errors.Is(te.Err, sarama.ErrNoError):
				errs[name] = nil
			case errors.Is(te.Err, sarama.ErrNotController):
				again = append(again, name)
			default:
				errs[name] = te
			}
		}
	}
	for _, name := range again {
		errs[name] = s.dst.CreateTopic(name, details[name], false)
	}
	return errs
}

// createRequest sends one CreateTopics request for details to the target's
// controller.
func (s *Syncer) createRequest(details map[string]*sarama.TopicDetail) (*sarama.CreateTopicsResponse, error) {
	b, err := s.dst.Controller()
	if err != nil {
		return nil, err
	}
	return b.CreateTopics(sarama.NewCreateTopicsRequest(s.version, details, createTimeout, false))
}

// targetFacts reads what creating topics on the target needs: its broker
// count (an error when unknown) and the timestamp windows its brokers limit
// by default. The windows are best effort: when the broker's configs cannot
// be read, topics are created without them and the settle step lifts them.
func (s *Syncer) targetFacts() (target, error) {
	bs, _, err := s.dst.DescribeCluster()
	if err != nil {
		return target{}, fmt.Errorf("target: describe cluster: %w; grant drctl's principal DESCRIBE on the target cluster; it is retried on the next pass", err)
	}
	if len(bs) == 0 {
		return target{}, errors.New("target: describe cluster: no brokers listed; it is retried on the next pass")
	}
	tgt := target{brokers: len(bs)}
	res, err := s.dst.DescribeConfigs([]*sarama.ConfigResource{{Type: sarama.BrokerResource, Name: strconv.Itoa(int(bs[0].ID()))}}, sarama.DescribeConfigsOptions{})
	if err == nil && len(res) == 1 && res[0].ErrorCode == sarama.ErrNoError {
		for _, e := range res[0].Configs {
			// A broker's default for a topic key is its "log."-prefixed key.
			if w, ok := strings.CutPrefix(e.Name, "log."); ok && slices.Contains(timestampWindows, w) && e.Value != noLimit {
				tgt.limits = append(tgt.limits, w)
			}
		}
	}
	slices.Sort(tgt.limits)
	return tgt, nil
}

// apply makes the changes c on the existing target topic name (do is the
// topic as observed) and records them in r. It stops at the first failing
// request. Creates are made by applyAll, several to a request.
func (s *Syncer) apply(name string, c change, do *observed, r *TopicResult) error {
	if c.partitions > 0 {
		if err := s.dst.CreatePartitions(name, c.partitions, nil, false); err != nil {
			return targetError(fmt.Sprintf("add partitions (%d -> %d)", do.partitions, c.partitions), "ALTER", err)
		}
		r.PartitionsAdded += c.partitions - do.partitions
	}
	if len(c.set) > 0 || len(c.remove) > 0 {
		entries := make(map[string]sarama.IncrementalAlterConfigsEntry, len(c.set)+len(c.remove))
		for k, v := range c.set {
			entries[k] = sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v}
		}
		for _, k := range c.remove {
			entries[k] = sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationDelete}
		}
		if err := s.dst.IncrementalAlterConfig(sarama.TopicResource, name, entries, false); err != nil {
			return targetError("alter configs "+fmt.Sprint(append(keys(c.set), c.remove...)), "ALTER_CONFIGS", err)
		}
		r.ConfigsChanged = mergeKeys(r.ConfigsChanged, keys(c.set))
		r.ConfigsRemoved = mergeKeys(r.ConfigsRemoved, c.remove)
	}
	return nil
}

// settleWrites waits until the target shows the changes made to the topics
// whose result indexes arrive on written, a batch at a time (closed once
// every write is made), re-applying what a first round left undone (for
// example a timestamp limit inherited from the target's broker defaults). A
// topic is watched from the moment its own writes are made, so that the
// pass ends soon after the last topic settles rather than a settle wait
// after the last write: a broker creating hundreds of topics shows the
// first ones long before it answers the last create. Options.SettleTimeout
// runs from the last write, and again from each look that found topics
// settled: a controller answers a create of a hundred topics at once and
// its broker creates their logs for seconds after, at a steady pace, so a
// deadline from the last write alone gave up on hundreds of topics that
// were on their way. A topic not settled within the timeout of the last
// progress, or when ctx ends, gets an ErrNotSettled error. A topic the
// target does not list yet, or not with all its partitions, is waited for
// longer (listWait from the last progress): its create or partitions were
// accepted by the controller and only the broker's metadata is behind, as
// it is while it creates the logs of thousands of partitions; giving up
// then only made the next pass try the create again, refused with
// TOPIC_ALREADY_EXISTS, and left the topic uncopied for passes after the
// broker listed it.
func (s *Syncer) settleWrites(ctx context.Context, src view, results []TopicResult, written <-chan []int) {
	var (
		pending  []int
		writing  = true
		timer    *time.Timer
		deadline <-chan time.Time
		rounds   = make(map[int]int)
		why      = make(map[int]string)
		unlisted = make(map[int]bool)
		wait     = settleFirstWait
		progress time.Time // the last write done or look that settled topics
	)
	take := func(is []int, ok bool) {
		if ok {
			pending = append(pending, is...)
			return
		}
		writing = false
		timer = time.NewTimer(s.settle)
		deadline = timer.C
		progress = time.Now()
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	giveUp := func(what string) {
		for is := range written {
			pending = append(pending, is...)
		}
		for _, i := range pending {
			if why[i] == "" {
				why[i] = "not checked yet"
			}
			results[i].Err = fmt.Errorf("target: %w %s (%s); it is checked again on the next pass", ErrNotSettled, what, why[i])
		}
	}
	for {
	drain:
		for writing {
			select {
			case is, ok := <-written:
				take(is, ok)
			default:
				break drain
			}
		}
		if len(pending) == 0 {
			if !writing {
				return
			}
			select {
			case is, ok := <-written:
				take(is, ok)
				wait = settleFirstWait
			case <-ctx.Done():
				giveUp("before " + ctx.Err().Error())
				return
			}
			continue
		}
		before := pending
		pending = s.settleRound(src, results, pending, rounds, why, unlisted)
		s.tellSettled(results, before, pending)
		if len(pending) < len(before) && timer != nil {
			timer.Reset(s.settle) // progress: the timeout runs afresh
			progress = time.Now()
		}
		if len(pending) == 0 {
			continue // wait for the next write, or return
		}
		select {
		case <-ctx.Done():
			giveUp("before " + ctx.Err().Error())
			return
		case <-deadline:
			if left := s.listWait - time.Since(progress); left > 0 && slices.ContainsFunc(pending, func(i int) bool { return unlisted[i] }) {
				timer.Reset(left) // the broker's metadata is behind its controller
				continue
			}
			giveUp(fmt.Sprintf("within %v", s.settle))
			return
		case <-time.After(wait):
		}
		limit := settleMaxWait
		if writing {
			limit = settleMaxWait / 2 // topics are still coming: look more often
		}
		wait = min(2*wait, limit)
	}
}

// tellSettled tells Options.Ready of the topics of before (pending before a
// settle round) that the round settled: those not in after that are ready.
func (s *Syncer) tellSettled(results []TopicResult, before, after []int) {
	if s.ready == nil || len(before) == len(after) {
		return
	}
	still := make(map[int]bool, len(after))
	for _, i := range after {
		still[i] = true
	}
	var settled []TopicResult
	for _, i := range before {
		if !still[i] && results[i].Ready() {
			settled = append(settled, results[i])
		}
	}
	if len(settled) > 0 {
		s.ready(settled)
	}
}

// settleFirstWait and settleMaxWait bound the pause between two looks at
// topics written and not yet settled; it doubles from the first to the last.
const (
	settleFirstWait = 20 * time.Millisecond
	settleMaxWait   = 500 * time.Millisecond
)

// listWait is how long a pass waits, from its last progress, for the target
// to list a topic or partitions its controller accepted: as long as the
// controller is given to create one request's topics.
const listWait = createTimeout

// settleRound looks once at the written topics results[pending],
// re-applies changes the target does not show, and returns the topics still
// pending, each with why it is; unlisted says which of them the target does
// not list yet, or not with all their partitions.
func (s *Syncer) settleRound(src view, results []TopicResult, pending []int, rounds map[int]int, why map[int]string, unlisted map[int]bool) []int {
	names := make([]string, len(pending))
	for j, i := range pending {
		names[j] = results[i].Name
	}
	// Configs are read only for topics that could settle now: listed with
	// all their partitions led.
	whole := func(name string, o *observed) bool {
		so := src.topics[name]
		return so != nil && o.partitions >= so.partitions && o.leaderless == 0
	}
	dst, err := observe(s.dst, "target", names, func(string) bool { return true }, whole)
	if err != nil {
		for _, i := range pending {
			why[i] = err.Error()
		}
		return pending
	}
	var still []int
	var again []applyJob
	for _, i := range pending {
		r := &results[i]
		so := src.topics[r.Name]
		do := dst.topics[r.Name]
		unlisted[i] = dst.errs[r.Name] == nil && (do == nil || do.partitions < so.partitions)
		switch {
		case dst.errs[r.Name] != nil:
			why[i] = dst.errs[r.Name].Error()
		case do == nil:
			why[i] = "topic not listed yet"
		case do.partitions < so.partitions:
			why[i] = fmt.Sprintf("%d of %d partitions listed", do.partitions, so.partitions)
		case do.leaderless > 0:
			why[i] = fmt.Sprintf("%d partition(s) without a leader", do.leaderless)
		default:
			r.ReplicationFactor = do.rf
			owned, _ := s.owner(r.Name, so.id)
			c := s.policy.decide(so, do, target{}, owned)
			if c.conflict != "" {
				// Someone else changed the topic meanwhile.
				r.Conflict = c.conflict
				continue
			}
			if !c.writes() {
				continue
			}
			if rounds[i] >= maxRounds {
				r.Err = fmt.Errorf("target: configs %v do not take effect after %d attempts; check the target broker's config policy, or exclude the keys from config sync", append(keys(c.set), c.remove...), maxRounds)
				continue
			}
			rounds[i]++
			again = append(again, applyJob{i: i, c: c, do: do})
			continue
		}
		still = append(still, i)
	}
	for j, ok := range s.applyAll(again, results, nil) {
		if ok {
			why[again[j].i] = "changes applied, not yet visible"
			still = append(still, again[j].i)
		}
	}
	return still
}

// createError is targetError for a topic the target did not create. A
// topic whose creation alone is more records than the controller writes
// for one operation gets its own fix: the controller's POLICY_VIOLATION
// then is about its size, not about a copied config.
func (s *Syncer) createError(c change, err error) error {
	if n := createRecords(c); n > s.opRecords && errors.Is(err, sarama.ErrPolicyViolation) {
		// Every step below keeps within the bound, configs included.
		step := s.opRecords - 1 - len(c.configs)
		return fmt.Errorf("target: create topic: %w; its %d partitions are more than the target's controller creates in one operation (%d metadata records, the topic and its configs included): create the topic on the target yourself with at most %d partitions, then add partitions at most %d at a time (kafka-topics.sh --alter --partitions) up to %d; drctl mirrors into it once it exists",
			err, c.partitions, s.opRecords, step, s.opRecords-1, c.partitions)
	}
	return targetError("create topic", "CREATE", err)
}

// targetError wraps a failed write to the target with the operation and the
// fix. acl is the ACL operation the write needs.
func targetError(op, acl string, err error) error {
	fix := "it is retried on the next pass"
	switch {
	case errors.Is(err, sarama.ErrTopicAuthorizationFailed), errors.Is(err, sarama.ErrClusterAuthorizationFailed):
		fix = "grant drctl's principal " + acl + " on the topic on the target cluster"
	case errors.Is(err, sarama.ErrInvalidConfig), errors.Is(err, sarama.ErrPolicyViolation):
		fix = "the target rejected a copied config: align the clusters' Kafka versions and policies, or exclude the key from config sync"
	case errors.Is(err, sarama.ErrTopicAlreadyExists):
		fix = "the topic appeared on the target meanwhile; it is checked again on the next pass"
	}
	return fmt.Errorf("target: %s: %w; %s", op, err, fix)
}

func keys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

// mergeKeys adds ks to the sorted set into.
func mergeKeys(into, ks []string) []string {
	for _, k := range ks {
		i := sort.SearchStrings(into, k)
		if i < len(into) && into[i] == k {
			continue
		}
		into = append(into, "")
		copy(into[i+1:], into[i:])
		into[i] = k
	}
	return into
}
