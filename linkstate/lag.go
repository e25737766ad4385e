package linkstate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// PartitionLag is how far the mirror is behind on one source partition.
type PartitionLag struct {
	Topic     string `json:"topic" yaml:"topic"`
	Partition int32  `json:"partition" yaml:"partition"`
	// SourceEnd is the source's last stable offset (the read_committed end).
	SourceEnd int64 `json:"source_end" yaml:"source_end"`
	// Mirrored is the next source offset the mirror will copy (-1: the
	// partition was never mirrored).
	Mirrored int64 `json:"mirrored" yaml:"mirrored"`
	// Records is SourceEnd minus Mirrored (or minus the log start when never
	// mirrored): what the standby would miss if the active died now. It
	// counts transaction markers and aborted records that lie in the range.
	Records int64 `json:"records" yaml:"records"`
	// Seconds is the age of the oldest committed source record not yet
	// mirrored; 0 when none is pending.
	Seconds float64 `json:"seconds" yaml:"seconds"`
	// Lost counts records that left the source (retention, DeleteRecords)
	// before the mirror copied them: the log start is past Mirrored.
	Lost  int64  `json:"lost" yaml:"lost"`
	Error string `json:"error,omitempty" yaml:"error,omitempty"`
}

// LagReport is the lag of one link.
type LagReport struct {
	Link         string         `json:"link" yaml:"link"`
	MeasuredAt   time.Time      `json:"measured_at" yaml:"measured_at"`
	Partitions   []PartitionLag `json:"partitions" yaml:"partitions"`
	TotalRecords int64          `json:"total_records" yaml:"total_records"`
	MaxSeconds   float64        `json:"max_seconds" yaml:"max_seconds"`
	TotalLost    int64          `json:"total_lost" yaml:"total_lost"`
	// Losses are the link's recorded losses to source retention that no
	// operator has acknowledged yet (drctl mirror ack-lost), pending or
	// not; LostUnacknowledged sums their records. LossesError says why
	// they could not be read (then Losses says nothing).
	Losses             []LostRange `json:"losses,omitempty" yaml:"losses,omitempty"`
	LostUnacknowledged int64       `json:"lost_unacknowledged" yaml:"lost_unacknowledged"`
	LossesError        string      `json:"losses_error,omitempty" yaml:"losses_error,omitempty"`
	// TopicChanges lists mirrored topics deleted or recreated on the
	// source; their copies are kept on the target.
	TopicChanges []TopicChange `json:"topic_changes,omitempty" yaml:"topic_changes,omitempty"`
	// Reset says when and why the link was rebuilt because its target lost
	// its data ("" when it never was).
	Reset string `json:"reset,omitempty" yaml:"reset,omitempty"`
}

// Caught reports whether every partition is mirrored up to its source end.
func (r *LagReport) Caught() bool {
	for _, p := range r.Partitions {
		if p.Records > 0 || p.Error != "" {
			return false
		}
	}
	return true
}

// MeasureLag compares the source's last stable offsets with the link's
// committed progress on the target, for every selected source topic,
// through the command's session (its clients of the link's clusters,
// dialled only if the session has not yet).
func MeasureLag(ctx context.Context, clusters *kafkaconn.Clusters, link topology.Link) (*LagReport, error) {
	topo := clusters.Topology()
	clusters.Connect(ctx, link.Source, link.Target)
	src, err := clusters.Need(link.Source)
	if err != nil {
		return nil, err
	}
	dst, err := clusters.Need(link.Target)
	if err != nil {
		return nil, err
	}
	tps, err := MirroredPartitions(src, topo)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", link.Source, err)
	}
	// A checkpoint of an older incarnation of a topic (written late, after
	// reseed-topic) would count the new one's records as mirrored, and a
	// failover's drain would end before they are.
	mirrored, err := sourceIncarnations(ctx, src, tps)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", link.Source, err)
	}
	progress, err := progressNext(ReadProgressFull(ctx, dst, link, tps, CommittedSoFar, mirrored))
	if err != nil {
		return nil, fmt.Errorf("target %s: progress of %s: %w", link.Target, link, err)
	}
	// The progress is read before the ends, so that the lag is never
	// under-counted; the source's ends and starts are read together.
	var starts map[topology.TopicPartition]int64
	var startsErr error
	startsRead := make(chan struct{})
	go func() {
		defer close(startsRead)
		starts, startsErr = kafkaread.StartOffsets(ctx, src, tps)
	}()
	stable, err := kafkaread.StableOffsets(ctx, src, tps)
	<-startsRead
	if err != nil {
		return nil, fmt.Errorf("source %s: end offsets: %w", link.Source, err)
	}
	if startsErr != nil {
		return nil, fmt.Errorf("source %s: start offsets: %w", link.Source, startsErr)
	}
	rep := &LagReport{Link: link.String(), MeasuredAt: time.Now().UTC(), Partitions: make([]PartitionLag, len(tps))}
	// The age of a lagging partition is its oldest record not mirrored:
	// read for all of them in one fetch per broker (and 1,000 partitions),
	// and one by one only where that fetch could not tell.
	behind := map[topology.TopicPartition]int64{}
	for i, tp := range tps {
		rep.Partitions[i] = partitionBehind(tp, stable[tp], starts[tp], progress)
		if p := rep.Partitions[i]; p.Records > 0 {
			behind[tp] = p.SourceEnd - p.Records
		}
	}
	first, err := kafkaread.FirstTimestamps(ctx, src, behind, stable)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", link.Source, err)
	}
	now := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, tp := range tps {
		if _, lags := behind[tp]; !lags {
			continue
		}
		if r, ok := first[tp]; ok {
			rep.Partitions[i].Seconds = max(now.Sub(r.Timestamp).Seconds(), 0)
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			oldestUnmirrored(ctx, src, &rep.Partitions[i], behind[tp])
		})
	}
	wg.Wait()
	addTroubles(ctx, src, dst, topo, link, rep)
	if rep.Losses, err = ReadLost(ctx, dst, link); err != nil {
		rep.LossesError = fmt.Sprintf("cannot read the recorded losses on %s: %v", link.Target, err)
	}
	rep.LostUnacknowledged = TotalLost(rep.Losses)
	for _, p := range rep.Partitions {
		rep.TotalRecords += p.Records
		rep.MaxSeconds = max(rep.MaxSeconds, p.Seconds)
		rep.TotalLost += p.Lost
	}
	return rep, nil
}

// partitionBehind is the partition's lag in records: from its committed
// progress (or its start offset, when it has none or retention removed
// records past it) to its last stable offset.
func partitionBehind(tp topology.TopicPartition, lso, start int64, progress map[topology.TopicPartition]int64) PartitionLag {
	pl := PartitionLag{Topic: tp.Topic, Partition: tp.Partition, SourceEnd: lso, Mirrored: -1}
	from, ok := progress[tp]
	if ok {
		pl.Mirrored = from
		if start > from {
			pl.Lost = start - from
			from = start
		}
	} else {
		from = start
	}
	pl.Records = max(lso-from, 0)
	return pl
}

// errFound ends a read that found what it looked for.
var errFound = errors.New("found")

// oldestUnmirrored sets pl's age from its first committed record at or
// after from, read on its own.
func oldestUnmirrored(ctx context.Context, src sarama.Client, pl *PartitionLag, from int64) {
	var oldest time.Time
	_, err := kafkaread.ReadCommitted(ctx, src, pl.Topic, pl.Partition, from, func(r kafkaread.Record) error {
		oldest = r.Timestamp
		return errFound
	})
	if err != nil && !errors.Is(err, errFound) {
		pl.Error = err.Error()
		return
	}
	if !oldest.IsZero() {
		pl.Seconds = max(time.Since(oldest).Seconds(), 0)
	}
}

// MirroredPartitions lists, sorted, the partitions of the topics of the
// cluster behind client that topo mirrors (topology.Topology.Mirrors).
func MirroredPartitions(client sarama.Client, topo *topology.Topology) ([]topology.TopicPartition, error) {
	if err := client.RefreshMetadata(); err != nil {
		return nil, err
	}
	topics, err := client.Topics()
	if err != nil {
		return nil, err
	}
	var out []topology.TopicPartition
	for _, t := range topics {
		if !topo.Mirrors(t) {
			continue
		}
		parts, err := client.Partitions(t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t, err)
		}
		for _, p := range parts {
			out = append(out, topology.TopicPartition{Topic: t, Partition: p})
		}
	}
	slices.SortFunc(out, func(a, b topology.TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out, nil
}

// addTroubles adds to rep what the mirror recorded on the target: the
// errors of partitions the target refuses (written by the shards into the
// ends topic), topics deleted or recreated on the source, and the last
// reset of the target. A failure to read them leaves rep as it is.
func addTroubles(ctx context.Context, src, dst sarama.Client, topo *topology.Topology, link topology.Link, rep *LagReport) {
	if ends, err := readEnds(ctx, dst, link); err == nil {
		rep.Reset = ends.reset
		for i, p := range rep.Partitions {
			if msg, ok := ends.errors[topology.TopicPartition{Topic: p.Topic, Partition: p.Partition}]; ok && p.Error == "" {
				rep.Partitions[i].Error = msg
			}
		}
	}
	ledger, err := ReadTopicLedger(ctx, dst, link)
	if err != nil || len(ledger) == 0 {
		return
	}
	// The source topics' ids, in one metadata request ("" for a topic
	// gone or unreadable).
	ids := map[string]string{}
	for _, p := range rep.Partitions {
		ids[p.Topic] = ""
	}
	if now, err := kafkaread.TopicIDs(ctx, src, slices.Collect(maps.Keys(ids))); err == nil {
		maps.Copy(ids, now)
	}
	rep.TopicChanges = TopicChanges(link, topo.Mirrors, ledger, ids)
	for _, c := range rep.TopicChanges {
		if c.Kind != TopicRecreated {
			continue
		}
		for i, p := range rep.Partitions {
			if p.Topic == c.Topic {
				rep.Partitions[i].Error = c.Message
			}
		}
	}
}
