package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/offsettranslate"
	"github.com/drctl/drctl/topology"
)

// ErrNoSuchPartition is wrapped by Run's error when Options select a topic
// or partition the source does not hold among the mirrored ones.
var ErrNoSuchPartition = errors.New("no such mirrored partition")

// Options select what Run verifies. The zero value (with Partition -1 and
// FromOffset -1, see DefaultOptions) verifies every mirrored partition in
// full.
type Options struct {
	// Topic limits the run to one mirrored topic ("" every one).
	Topic string
	// Partition limits the run to one partition of Topic (-1 every one).
	Partition int32
	// Since starts each partition's range at its first source record at
	// most this old (0: not used).
	Since time.Duration
	// FromOffset starts each partition's range at this source offset (-1:
	// not used).
	FromOffset int64
	// Sample compares every Sample-th record the offset map holds in the
	// range only (0 or 1: all), and reads only what it compares: each
	// side is fetched at the sampled offsets. A sampled run proves
	// nothing: it reports differences seen, and does not look for
	// standby records no source record maps to, nor for source records
	// the map lacks.
	Sample int
	// Details is how many differences each partition reports in detail.
	Details int
	// Parallel is how many partitions are verified at once.
	Parallel int
	// Retired says the link no longer runs: the roles flipped, and its
	// target is the active cluster, taking writes of its own. The standby
	// range of each partition then ends at the last copy the map holds:
	// the records after it are the new active's, not the link's.
	Retired bool
	// Resume starts the partitions it names where an earlier run stopped
	// (the mirror's verifier, from its watermark): the source range at
	// Source, the standby range no later than Target (-1: at the copy of
	// Source), so a record written into the standby between the two runs'
	// ranges is still found. It overrides FromOffset and Since there.
	Resume map[topology.TopicPartition]Resume
	// Map, when set, is the link's offset map as read by an earlier run:
	// Run reads only what was added since (the mirror's verifier keeps
	// one across its rounds). Nil: the whole map is read.
	Map *offsettranslate.Follower
	// Progress, when set, is called after each partition, one call at a
	// time.
	Progress func(Progress)
	// Now is the clock of Since and the report's times (tests).
	Now func() time.Time
}

// Resume is where a partition's range starts: Source on the source, and
// on the standby no later than Target (-1: the copy of Source).
type Resume struct{ Source, Target int64 }

// DefaultOptions verify every mirrored partition in full.
func DefaultOptions() Options {
	return Options{Partition: -1, FromOffset: -1, Details: 10, Parallel: 4}
}

// Progress is how far a run is.
type Progress struct {
	Partitions, Done        int
	SourceRecords, Compared int64
}

// Status is the verdict on one partition.
type Status string

const (
	// Identical: every committed source record of the range was compared
	// with the standby record the map names and found identical, and the
	// standby holds no record in the range that no source record maps to.
	Identical Status = "identical"
	// Differs: at least one difference was found.
	Differs Status = "differs"
	// NoDifferenceSeen: a sampled run found no difference among the
	// records it compared; that proves nothing about the others.
	NoDifferenceSeen Status = "no-difference-seen"
	// NotVerified: the partition could not be compared; Reason says why.
	NotVerified Status = "not-verified"
)

// PartitionReport is what a run found on one partition. Offsets are
// ranges [from, to).
type PartitionReport struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Status    Status `json:"status"`
	// Reason says why the partition was not verified, or notes what
	// bounds the range.
	Reason string `json:"reason,omitempty"`
	// The source range compared, and the standby range looked in.
	SourceFrom int64 `json:"source_from"`
	SourceTo   int64 `json:"source_to"`
	TargetFrom int64 `json:"target_from"`
	TargetTo   int64 `json:"target_to"`
	// ProvenSourceTo and ProvenTargetTo end the stretch proven identical:
	// source [SourceFrom, ProvenSourceTo) = standby [TargetFrom,
	// ProvenTargetTo). -1 when nothing is proven (sampled, not verified).
	ProvenSourceTo int64 `json:"proven_source_to"`
	ProvenTargetTo int64 `json:"proven_target_to"`
	// SourceEnd is the source's last stable offset when the run read it:
	// the source offsets [SourceTo, SourceEnd) were not mirrored (yet, or,
	// on a retired link, ever).
	SourceEnd int64 `json:"source_end"`
	// SourceRecords counts the committed source records in the range (a
	// sampled run, which does not read the source whole: the records the
	// offset map holds in the range); Compared those compared with their
	// copy, Identical those found identical.
	SourceRecords int64 `json:"source_records"`
	Compared      int64 `json:"compared"`
	Identical     int64 `json:"identical"`
	// SourceGone counts standby records in the range whose source record
	// the source no longer holds (compacted, or removed from its head
	// since it was copied): not compared, not differences.
	SourceGone int64 `json:"source_gone"`
	// SourceRead and TargetRead count the committed records the run read
	// from each side: a full run reads each range once, a sampled one
	// the batches that hold its samples.
	SourceRead int64 `json:"source_read"`
	TargetRead int64 `json:"target_read"`
	// TimestampsCompared is false when the standby topic uses
	// LogAppendTime (the broker, not the mirror, set its timestamps).
	TimestampsCompared bool           `json:"timestamps_compared"`
	Differences        int64          `json:"differences"`
	ByKind             map[Kind]int64 `json:"by_kind,omitempty"`
	// Details are the first differences, in the order found.
	Details []Difference `json:"details,omitempty"`
}

// Report is the outcome of one run over a link.
type Report struct {
	Link       string    `json:"link"`
	Source     string    `json:"source"`
	Target     string    `json:"target"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	// Retired: the link no longer runs (the roles flipped); its standby,
	// now the active, was looked at up to the last copy only.
	Retired bool `json:"retired,omitempty"`
	// Note says why this link was verified, when it is not the live one;
	// the front-end sets it.
	Note string `json:"note,omitempty"`
	// Sample is 1 for a full run, N when every Nth record was compared.
	Sample     int               `json:"sample"`
	Partitions []PartitionReport `json:"partitions"`
	Summary    Summary           `json:"summary"`
}

// Summary adds up a report's partitions.
type Summary struct {
	Partitions       int   `json:"partitions"`
	Identical        int   `json:"identical"`
	Differing        int   `json:"differing"`
	NoDifferenceSeen int   `json:"no_difference_seen"`
	NotVerified      int   `json:"not_verified"`
	SourceRecords    int64 `json:"source_records"`
	Compared         int64 `json:"compared"`
	Differences      int64 `json:"differences"`
	SourceRead       int64 `json:"source_read"`
	TargetRead       int64 `json:"target_read"`
}

// Proven reports whether every partition was verified identical.
func (r *Report) Proven() bool {
	return r.Summary.Partitions > 0 && r.Summary.Identical == r.Summary.Partitions
}

// Run verifies the standby of link against its source, through the link's
// offset map, reading both clusters of the session.
//
// Per partition it reads, in this order: the standby's last stable offset,
// then the offset map (so every mirrored record below that offset is in
// the map: the map record commits with the data), then the source range
// [first mapped record or the option's start, the mirror's read position)
// and the standby's records from the first one's copy up to that last
// stable offset, side by side. Records the mirror copies meanwhile lie
// past the range and are not compared.
//
// An unreachable cluster is an error wrapping kafkaconn.ErrUnreachable; a
// selected topic or partition the source does not mirror wraps
// ErrNoSuchPartition. A partition that cannot be compared (no map yet, a
// read that failed) is reported NotVerified with the reason, not an error.
func Run(ctx context.Context, clusters *kafkaconn.Clusters, link topology.Link, opts Options) (*Report, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	rep := &Report{Link: link.String(), Source: link.Source, Target: link.Target, Retired: opts.Retired, StartedAt: now().UTC(), Sample: max(opts.Sample, 1)}
	clusters.Connect(ctx, link.Source, link.Target)
	src, err := clusters.Need(link.Source)
	if err != nil {
		return nil, err
	}
	dst, err := clusters.Need(link.Target)
	if err != nil {
		return nil, err
	}
	tps, err := selected(src, clusters.Topology(), opts)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", link.Source, err)
	}
	v, err := prepare(ctx, src, dst, link, tps, opts)
	if err != nil {
		return nil, err
	}
	rep.Partitions = make([]PartitionReport, len(tps))
	var (
		mu   sync.Mutex
		prog = Progress{Partitions: len(tps)}
		work = make(chan int)
		wg   sync.WaitGroup
	)
	for range max(opts.Parallel, 1) {
		wg.Go(func() {
			for i := range work {
				pr := v.partition(ctx, tps[i])
				mu.Lock()
				rep.Partitions[i] = pr
				prog.Done++
				prog.SourceRecords += pr.SourceRecords
				prog.Compared += pr.Compared
				if opts.Progress != nil {
					opts.Progress(prog)
				}
				mu.Unlock()
			}
		})
	}
	for i := range tps {
		work <- i
	}
	close(work)
	wg.Wait()
	rep.FinishedAt = now().UTC()
	for _, p := range rep.Partitions {
		s := &rep.Summary
		s.Partitions++
		s.SourceRecords += p.SourceRecords
		s.Compared += p.Compared
		s.Differences += p.Differences
		s.SourceRead += p.SourceRead
		s.TargetRead += p.TargetRead
		switch p.Status {
		case Identical:
			s.Identical++
		case Differs:
			s.Differing++
		case NoDifferenceSeen:
			s.NoDifferenceSeen++
		default:
			s.NotVerified++
		}
	}
	return rep, nil
}

// selected lists the mirrored source partitions opts select.
func selected(src sarama.Client, topo *topology.Topology, opts Options) ([]topology.TopicPartition, error) {
	all, err := linkstate.MirroredPartitions(src, topo)
	if err != nil {
		return nil, err
	}
	out := slices.DeleteFunc(all, func(tp topology.TopicPartition) bool {
		return opts.Topic != "" && tp.Topic != opts.Topic || opts.Partition >= 0 && tp.Partition != opts.Partition
	})
	switch {
	case len(out) > 0:
		return out, nil
	case opts.Topic != "" && opts.Partition >= 0:
		return nil, fmt.Errorf("%w: %s/%d: the source has no such partition of a mirrored topic; drctl mirror lag lists them", ErrNoSuchPartition, opts.Topic, opts.Partition)
	case opts.Topic != "":
		return nil, fmt.Errorf("%w: topic %s does not exist on the source; drctl mirror lag lists the mirrored topics", ErrNoSuchPartition, opts.Topic)
	}
	return nil, fmt.Errorf("%w: the source holds no topic that mirror.topics selects", ErrNoSuchPartition)
}

// run is what every partition of one run shares.
type run struct {
	src, dst   sarama.Client
	link       topology.Link
	opts       Options
	follower   *offsettranslate.Follower
	mapErr     error // why there is no map at all
	targetEnds map[topology.TopicPartition]int64
	// targetEndsAfter are the standby's ends read again after the map.
	targetEndsAfter map[topology.TopicPartition]int64
	sourceStart     map[topology.TopicPartition]int64
	sourceEnd       map[topology.TopicPartition]int64
	from            map[topology.TopicPartition]int64 // the option's start, per partition
	logAppend       map[string]bool                   // standby topics with LogAppendTime
	// recreated says, per source topic that is not the incarnation the
	// link recorded copying, why nothing of it can be proven.
	recreated map[string]string
}

func prepare(ctx context.Context, src, dst sarama.Client, link topology.Link, tps []topology.TopicPartition, opts Options) (*run, error) {
	follower := opts.Map
	if follower == nil {
		follower = offsettranslate.NewFollower(link.OffsetsTopic())
	}
	v := &run{src: src, dst: dst, link: link, opts: opts, follower: follower,
		from: map[topology.TopicPartition]int64{}, logAppend: map[string]bool{}, recreated: map[string]string{}}
	// The standby's ends come first: every mirrored record below them is
	// then in the map read next.
	var onTarget []topology.TopicPartition
	if err := dst.RefreshMetadata(); err != nil {
		return nil, fmt.Errorf("standby %s: metadata: %w", link.Target, err)
	}
	topics := map[string]bool{}
	for _, tp := range tps {
		topics[tp.Topic] = true
		parts, err := dst.Partitions(tp.Topic)
		if err == nil && slices.Contains(parts, tp.Partition) {
			onTarget = append(onTarget, tp)
		}
	}
	var err error
	if v.targetEnds, err = kafkaread.StableOffsets(ctx, dst, onTarget); err != nil {
		return nil, fmt.Errorf("standby %s: end offsets: %w", link.Target, err)
	}
	if err := v.follower.Poll(ctx, dst); err != nil && !errors.Is(err, offsettranslate.ErrInconsistent) {
		if !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
			return nil, fmt.Errorf("standby %s: %w", link.Target, err)
		}
		v.mapErr = fmt.Errorf("the standby %s holds no offset map of %s (%s): has drctl mirror run ever run for this link?", link.Target, link, link.OffsetsTopic())
	}
	if v.targetEndsAfter, err = kafkaread.StableOffsets(ctx, dst, onTarget); err != nil {
		return nil, fmt.Errorf("standby %s: end offsets: %w", link.Target, err)
	}
	if v.sourceStart, err = kafkaread.StartOffsets(ctx, src, tps); err != nil {
		return nil, fmt.Errorf("source %s: start offsets: %w", link.Source, err)
	}
	if v.sourceEnd, err = kafkaread.StableOffsets(ctx, src, tps); err != nil {
		return nil, fmt.Errorf("source %s: end offsets: %w", link.Source, err)
	}
	for _, tp := range tps {
		r, resumed := opts.Resume[tp]
		switch {
		case resumed:
			v.from[tp] = r.Source
		case opts.FromOffset >= 0:
			v.from[tp] = opts.FromOffset
		case opts.Since > 0:
			now := time.Now
			if opts.Now != nil {
				now = opts.Now
			}
			off, err := src.GetOffset(tp.Topic, tp.Partition, now().Add(-opts.Since).UnixMilli())
			if err != nil {
				return nil, fmt.Errorf("source %s: %s: offset of the first record since %s: %w", link.Source, tp, opts.Since, err)
			}
			if off < 0 { // no record that recent
				off = v.sourceEnd[tp]
			}
			v.from[tp] = off
		}
	}
	if err := v.checkIncarnations(ctx, topics); err != nil {
		return nil, err
	}
	admin, err := sarama.NewClusterAdminFromClient(dst)
	if err != nil {
		return nil, fmt.Errorf("standby %s: %w", link.Target, err)
	}
	// The admin shares the session's client: closing it would close the
	// client, so it is left to the session.
	var resources []*sarama.ConfigResource
	for topic := range topics {
		resources = append(resources, &sarama.ConfigResource{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{"message.timestamp.type"}})
	}
	results, err := admin.DescribeConfigs(resources, sarama.DescribeConfigsOptions{})
	if err != nil {
		return nil, fmt.Errorf("standby %s: timestamp types of the topics: %w", link.Target, err)
	}
	for _, r := range results {
		// A topic missing on the standby has an error here, and
		// nothing of it to compare.
		for _, e := range r.Configs {
			if r.ErrorCode == 0 && e.Name == "message.timestamp.type" && e.Value == "LogAppendTime" {
				v.logAppend[r.Name] = true
			}
		}
	}
	return v, nil
}

// checkIncarnations compares each selected source topic's id with the
// one the link recorded copying (its topic ledger on the target). A topic
// deleted and created again under its name since (a reseed wipes and
// recreates every topic of a stale cluster) holds other records at the
// same offsets: the map says nothing of them. A link that recorded no id
// for a topic is not checked.
func (v *run) checkIncarnations(ctx context.Context, topics map[string]bool) error {
	ledger, err := linkstate.ReadTopicLedger(ctx, v.dst, v.link)
	if err != nil {
		return fmt.Errorf("standby %s: the link's record of its topics: %w", v.link.Target, err)
	}
	var names []string
	for t := range topics {
		if ledger[t].SourceID != "" {
			names = append(names, t)
		}
	}
	ids, err := kafkaread.TopicIDs(ctx, v.src, names)
	if err != nil {
		return fmt.Errorf("source %s: topic ids: %w", v.link.Source, err)
	}
	for _, t := range names {
		if id, ok := ids[t]; ok && id != "" && id != ledger[t].SourceID {
			v.recreated[t] = fmt.Sprintf("%s's topic %s is not the one the link %s copied (its id changed: deleted and created again since, as a reseed or drctl mirror reseed-topic does); the records the offset map names are gone from %s, and nothing of %s can be proven through this map",
				v.link.Source, t, v.link, v.link.Source, t)
		}
	}
	return nil
}

// partition verifies one partition.
func (v *run) partition(ctx context.Context, tp topology.TopicPartition) PartitionReport {
	pr := PartitionReport{Topic: tp.Topic, Partition: tp.Partition, Status: NotVerified, TimestampsCompared: !v.logAppend[tp.Topic],
		SourceFrom: -1, SourceTo: -1, TargetFrom: -1, TargetTo: -1, ProvenSourceTo: -1, ProvenTargetTo: -1}
	pr.SourceEnd = v.sourceEnd[tp]
	if v.mapErr != nil {
		pr.Reason = v.mapErr.Error()
		return pr
	}
	if why, ok := v.recreated[tp.Topic]; ok {
		pr.Reason = why
		return pr
	}
	runs, st, inMap := v.follower.Index().Runs(tp.Topic, tp.Partition)
	if st.Err != nil {
		pr.Reason = fmt.Sprintf("the offset map of %s is inconsistent (%v); nothing can be proven through it", tp, st.Err)
		return pr
	}
	srcStart, srcEnd := v.sourceStart[tp], v.sourceEnd[tp]
	targetEnd, onTarget := v.targetEnds[tp]
	sp := span{runs: runs, sample: v.opts.Sample, details: v.opts.Details, skipTimestamp: v.logAppend[tp.Topic], mapTargetEnd: max(st.TargetEnd, 0)}
	from, bounded := v.from[tp]
	switch {
	case len(runs) > 0:
		sp.sourceFrom, sp.sourceTo = max(from, srcStart, runs[0].Source), st.SourceNext
		if !bounded && runs[0].Source > srcStart {
			pr.Reason = fmt.Sprintf("the range starts at %d, the first record the offset map holds: the source records before it were not mirrored (the mirror started later) or the map's retention removed them", runs[0].Source)
		}
	case inMap && st.SourceNext >= 0:
		// The mirror passed only holes: there is no record to compare,
		// and none may be on the standby.
		sp.sourceFrom, sp.sourceTo = max(from, srcStart), st.SourceNext
	case srcStart >= srcEnd:
		sp.sourceFrom, sp.sourceTo = srcStart, srcStart
	default:
		pr.Reason = fmt.Sprintf("the offset map holds nothing of %s yet (not mirrored yet, or the map's retention removed it)", tp)
		return pr
	}
	if after, ok := v.targetEndsAfter[tp]; ok && onTarget && after > targetEnd {
		// A mirror transaction that committed after the standby's end
		// was read and before the map was is in the map, its data past
		// that end: the standby's end read after the map covers it.
		// Those records are a later run's, not missing. (Copies past
		// both ends are missing: the standby lost them.)
		if lim := sourceBelow(runs, targetEnd, sp.sourceTo); sourceBelow(runs, after, sp.sourceTo) > lim {
			sp.sourceTo = min(sp.sourceTo, lim)
		}
	}
	sp.sourceFrom = min(sp.sourceFrom, sp.sourceTo)
	sp.targetFrom = targetOf(runs, sp.sourceFrom, st.TargetEnd)
	if r, ok := v.opts.Resume[tp]; ok && r.Target >= 0 && sp.sample <= 1 {
		// The earlier run read the standby up to r.Target: a record
		// written since, before this range's first copy, is unexpected.
		// Copies of records the earlier run compared, committed after
		// it read the standby's end, are read past (source gone).
		sp.targetFrom = min(sp.targetFrom, r.Target)
	}
	sp.targetTo = sp.targetFrom
	if onTarget && targetEnd > sp.targetFrom {
		sp.targetTo = targetEnd
	}
	switch {
	case v.opts.Retired:
		// The target took writes of its own since the flip: the link
		// answers for its copies only.
		sp.targetTo = max(sp.targetFrom, min(sp.targetTo, sp.mapTargetEnd))
	case sp.sample <= 1 && len(runs) == 0:
		sp.targetFrom = 0 // no copy anywhere: any standby record is unexpected
		if onTarget {
			sp.targetTo = targetEnd
		}
	}
	pr.SourceFrom, pr.SourceTo, pr.TargetFrom, pr.TargetTo = sp.sourceFrom, sp.sourceTo, sp.targetFrom, sp.targetTo
	if sp.sample > 1 {
		t, err := v.sampled(ctx, tp, sp)
		fill(&pr, t, sp.sample, err)
		return pr
	}
	t, err := compare(sp, records(ctx, v.src, tp, sp.sourceFrom, sp.sourceTo), records(ctx, v.dst, tp, sp.targetFrom, sp.targetTo))
	if err == nil && (len(t.tail) > 0 || t.tailOverflow > 0) {
		// Tail records may be copies whose map record was not readable
		// yet when the map was read: one more look decides.
		if err = v.follower.Poll(ctx, v.dst); err != nil && errors.Is(err, offsettranslate.ErrInconsistent) {
			err = nil
		}
		if err == nil {
			later, _, _ := v.follower.Index().Runs(tp.Topic, tp.Partition)
			t.settleTail(later, sp.sourceTo)
		}
	}
	fill(&pr, t, sp.sample, err)
	return pr
}

// sampled compares the sampled records of one partition, fetching each
// side at the sampled offsets only.
func (v *run) sampled(ctx context.Context, tp topology.TopicPartition, sp span) (*tally, error) {
	src, err := newBatchReader(ctx, v.src, tp)
	if err != nil {
		return &tally{}, err
	}
	dst, err := newBatchReader(ctx, v.dst, tp)
	if err != nil {
		return &tally{}, err
	}
	return compareSampled(sp, src, dst)
}

// fill puts what compare found on a partition into its report.
func fill(pr *PartitionReport, t *tally, sample int, err error) {
	pr.SourceRecords, pr.Compared, pr.Identical, pr.SourceGone = t.SourceRecords, t.Compared, t.Identical, t.SourceGone
	pr.SourceRead, pr.TargetRead = t.SourceRead, t.TargetRead
	pr.Differences, pr.Details = t.Differences(), t.Details
	for k, n := range t.Counts {
		if n > 0 {
			if pr.ByKind == nil {
				pr.ByKind = map[Kind]int64{}
			}
			pr.ByKind[k] = n
		}
	}
	switch {
	case err != nil:
		pr.Status = NotVerified
		pr.Reason = fmt.Sprintf("reading stopped after %d source records of the range: %v", t.SourceRecords, err)
		if pr.Differences > 0 {
			pr.Status = Differs
		}
	case pr.Differences > 0:
		pr.Status = Differs
		if sample <= 1 {
			pr.ProvenSourceTo, pr.ProvenTargetTo = t.ProvenSource, t.ProvenTarget
		}
	case sample > 1:
		pr.Status = NoDifferenceSeen
	default:
		pr.Status = Identical
		pr.ProvenSourceTo, pr.ProvenTargetTo = t.ProvenSource, t.ProvenTarget
	}
}

// Range is what Compare compares: the source records of [SourceFrom,
// SourceTo) with the standby records of [TargetFrom, TargetTo).
type Range struct {
	SourceFrom, SourceTo int64
	TargetFrom, TargetTo int64
	// Sample compares every Sample-th record runs map in the source
	// range only (0 or 1: all), looking each up in both streams.
	Sample int
	// Details is how many differences are kept in detail.
	Details int
	// SkipTimestamp leaves timestamps out (a LogAppendTime standby topic).
	SkipTimestamp bool
}

// Compare compares one partition's committed source records with its
// committed standby records through runs, the partition's offset map
// (offsettranslate.Index.Runs), reading each stream once, in order. It is
// the comparison Run makes, without the clusters: Run also looks up
// unmapped records at the standby's tail in a map read later.
func Compare(runs []offsettranslate.Run, source, standby Records, r Range) (PartitionReport, error) {
	pr := PartitionReport{SourceFrom: r.SourceFrom, SourceTo: r.SourceTo, TargetFrom: r.TargetFrom, TargetTo: r.TargetTo,
		ProvenSourceTo: -1, ProvenTargetTo: -1, TimestampsCompared: !r.SkipTimestamp}
	end := int64(0)
	if len(runs) > 0 {
		end = runs[len(runs)-1].TargetEnd()
	}
	sp := span{runs: runs, sourceFrom: r.SourceFrom, sourceTo: r.SourceTo, targetFrom: r.TargetFrom, targetTo: r.TargetTo,
		mapTargetEnd: end, sample: r.Sample, details: r.Details, skipTimestamp: r.SkipTimestamp}
	var (
		t   *tally
		err error
	)
	if r.Sample > 1 {
		src, dst := newStreamReader(source), newStreamReader(standby)
		defer src.stop()
		defer dst.stop()
		t, err = compareSampled(sp, src, dst)
	} else if t, err = compare(sp, source, standby); err == nil {
		t.settleTail(runs, r.SourceTo)
	}
	fill(&pr, t, r.Sample, err)
	return pr, err
}

// sourceBelow is the source offset of the first mapped record whose copy
// lies at or past target offset end, or def when every copy lies below it.
func sourceBelow(runs []offsettranslate.Run, end, def int64) int64 {
	for _, r := range runs {
		switch {
		case r.Target >= end:
			return r.Source
		case r.TargetEnd() > end:
			return r.Source + (end - r.Target)
		}
	}
	return def
}

// targetOf is the target offset of the first mapped record at or after
// source offset s, or end when there is none.
func targetOf(runs []offsettranslate.Run, s, end int64) int64 {
	i, _ := slices.BinarySearchFunc(runs, s, func(r offsettranslate.Run, s int64) int {
		switch {
		case r.SourceEnd() <= s:
			return -1
		case r.Source > s:
			return 1
		}
		return 0
	})
	if i == len(runs) {
		return max(end, 0)
	}
	return runs[i].Target + max(0, s-runs[i].Source)
}
