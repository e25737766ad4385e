package inspect

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

// PartitionRPO is the recovery point of one partition: the records the old
// active held (as the mirror last saw them) that were not mirrored.
type PartitionRPO struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Records   int64  `json:"records"`
	// Seconds bounds the time span of those records: from the last
	// mirrored record's timestamp to when the mirror last saw the end.
	Seconds    float64   `json:"seconds"`
	ObservedAt time.Time `json:"observed_at"`
}

// RPOReport is the recovery point of an unplanned failover.
type RPOReport struct {
	Records    int64          `json:"records"`
	MaxSeconds float64        `json:"max_seconds"`
	Partitions []PartitionRPO `json:"partitions"`
	// Live is true when the old active answered and its end offsets were
	// read from it, not only taken from what the mirror last observed.
	Live bool `json:"live,omitempty"`
	// LostToRetention are the link's recorded losses to source retention
	// not yet acknowledged: records in neither cluster, apart from Records
	// (which the old active may still hold); LostError says why they could
	// not be read.
	LostToRetention []linkstate.LostRange `json:"lost_to_retention,omitempty"`
	LostRecords     int64                 `json:"lost_records,omitempty"`
	LostError       string                `json:"lost_error,omitempty"`
}

// liveEndsWait bounds the attempt to read the old active's end offsets: an
// unplanned failover usually finds it down, and must not wait for it.
const liveEndsWait = 3 * time.Second

// MeasureRPO computes the recovery point of the link source -> target: the
// source end offsets the mirror last observed and its committed progress,
// both read on the target. When the source still answers (an unplanned
// failover forced past an active that answers, which the plan fences
// first), its end offsets are read from it too and the larger end counts:
// the mirror may have stopped observing long before (hung or stopped), and
// what it never saw was still left behind. Records counts source offsets,
// so transaction markers in the range count too.
func MeasureRPO(ctx context.Context, clusters *kafkaconn.Clusters, source, target string) (*RPOReport, error) {
	return measureRPO(ctx, clusters, source, target, true)
}

// ObservedRPO is MeasureRPO from what the target holds alone (the ends the
// mirror last observed), as it is when the source is down.
func ObservedRPO(ctx context.Context, clusters *kafkaconn.Clusters, source, target string) (*RPOReport, error) {
	return measureRPO(ctx, clusters, source, target, false)
}

func measureRPO(ctx context.Context, clusters *kafkaconn.Clusters, source, target string, tryLive bool) (*RPOReport, error) {
	topo := clusters.Topology()
	clusters.Connect(ctx, target)
	dst, err := clusters.Need(target)
	if err != nil {
		return nil, err
	}
	link := topo.Link(source, target)
	seen, err := linkstate.LastObserved(ctx, dst, link)
	if err != nil {
		return nil, fmt.Errorf("ends observed by %s on %s: %w", link, target, err)
	}
	var tps []topology.TopicPartition
	for tp := range seen {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, topology.TopicPartition.Compare)
	// The source may be down: the incarnation counted is the one the
	// link's ledger on the target names.
	progress, err := linkstate.ReadProgress(ctx, nil, dst, link, tps)
	if err != nil {
		return nil, fmt.Errorf("progress of %s on %s: %w", link, target, err)
	}
	var live map[topology.TopicPartition]int64
	var liveAt time.Time
	if tryLive {
		live, liveAt = liveEnds(ctx, clusters, source, tps)
	}
	rep := &RPOReport{Partitions: []PartitionRPO{}, Live: live != nil}
	for _, tp := range tps {
		o := seen[tp]
		mirrored, ok := progress[tp]
		if !ok {
			mirrored = o.Mirrored
		}
		end, at := o.End, o.ObservedAtMs
		if e, ok := live[tp]; ok && e > end {
			end, at = e, liveAt.UnixMilli()
		}
		pr := PartitionRPO{Topic: tp.Topic, Partition: tp.Partition, Records: max(end-mirrored, 0), ObservedAt: time.UnixMilli(at).UTC()}
		if pr.Records > 0 && o.LastMirroredMs > 0 {
			pr.Seconds = max(float64(at-o.LastMirroredMs)/1000, 0)
		}
		rep.Records += pr.Records
		rep.MaxSeconds = max(rep.MaxSeconds, pr.Seconds)
		rep.Partitions = append(rep.Partitions, pr)
	}
	if lost, err := linkstate.ReadLost(ctx, dst, link); err != nil {
		rep.LostError = fmt.Sprintf("losses to source retention of %s not read: %v", link, err)
	} else {
		rep.LostToRetention, rep.LostRecords = lost, linkstate.TotalLost(lost)
	}
	return rep, nil
}

// Lagging counts the partitions with records that were not mirrored.
func (rep *RPOReport) Lagging() int {
	n := 0
	for _, p := range rep.Partitions {
		if p.Records > 0 {
			n++
		}
	}
	return n
}

// liveEnds reads the last stable offsets of tps on source, if it answers
// within liveEndsWait; nil when it does not.
func liveEnds(ctx context.Context, clusters *kafkaconn.Clusters, source string, tps []topology.TopicPartition) (map[topology.TopicPartition]int64, time.Time) {
	if len(tps) == 0 {
		return nil, time.Time{}
	}
	wctx, cancel := context.WithTimeout(ctx, liveEndsWait)
	defer cancel()
	clusters.Connect(wctx, source)
	src, err := clusters.Need(source)
	if err != nil {
		return nil, time.Time{}
	}
	ends, err := kafkaread.StableOffsets(wctx, src, tps)
	if err != nil {
		return nil, time.Time{}
	}
	return ends, time.Now()
}
