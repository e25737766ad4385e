package inspect

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/mirror"
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
}

// MeasureRPO computes the recovery point of the link source -> target from
// what the target holds alone: the source end offsets the mirror last
// observed, and its committed progress. Records counts source offsets, so
// transaction markers in the range count too.
func MeasureRPO(ctx context.Context, topo *topology.Topology, source, target string) (*RPOReport, error) {
	clusters := kafkaconn.Open(ctx, topo, target)
	defer clusters.Close()
	dst, err := clusters.Need(target)
	if err != nil {
		return nil, err
	}
	link := topo.Link(source, target)
	seen, err := mirror.LastObserved(ctx, dst, link)
	if err != nil {
		return nil, fmt.Errorf("ends observed by %s on %s: %w", link, target, err)
	}
	var tps []topology.TopicPartition
	for tp := range seen {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, topology.TopicPartition.Compare)
	progress, err := mirror.ReadProgress(ctx, dst, link, tps)
	if err != nil {
		return nil, fmt.Errorf("progress of %s on %s: %w", link, target, err)
	}
	rep := &RPOReport{Partitions: []PartitionRPO{}}
	for _, tp := range tps {
		o := seen[tp]
		mirrored, ok := progress[tp]
		if !ok {
			mirrored = o.Mirrored
		}
		pr := PartitionRPO{Topic: tp.Topic, Partition: tp.Partition, Records: max(o.End-mirrored, 0), ObservedAt: time.UnixMilli(o.ObservedAtMs).UTC()}
		if pr.Records > 0 && o.LastMirroredMs > 0 {
			pr.Seconds = max(float64(o.ObservedAtMs-o.LastMirroredMs)/1000, 0)
		}
		rep.Records += pr.Records
		rep.MaxSeconds = max(rep.MaxSeconds, pr.Seconds)
		rep.Partitions = append(rep.Partitions, pr)
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
