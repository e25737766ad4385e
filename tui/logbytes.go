package tui

import (
	"context"
	"fmt"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/linkstate"
)

// LogBytes is the size in bytes of the mirrored partitions' logs on both
// ends of the link, as the brokers report it (DescribeLogDirs, one replica
// per partition). Two refreshes apart it gives the MB/s written to the
// active and copied to the standby; it only reads.
type LogBytes struct {
	Source, Target int64
}

// measureLogBytes sums the log sizes of the partitions lag measured, on
// the link's source and target.
func measureLogBytes(ctx context.Context, clusters *kafkaconn.Clusters, lag *linkstate.LagReport, source, target string) (*LogBytes, error) {
	want := map[string]bool{}
	for _, p := range lag.Partitions {
		want[p.Topic] = true
	}
	src, err := clusterLogBytes(clusters, source, want)
	if err != nil {
		return nil, err
	}
	dst, err := clusterLogBytes(clusters, target, want)
	if err != nil {
		return nil, err
	}
	return &LogBytes{Source: src, Target: dst}, nil
}

// clusterLogBytes is the size of the topics' logs on cluster name: for
// each partition the largest of its replicas (replicas hold the same log;
// the largest is the one furthest along).
func clusterLogBytes(clusters *kafkaconn.Clusters, name string, topics map[string]bool) (int64, error) {
	client, err := clusters.Need(name)
	if err != nil {
		return 0, err
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return 0, fmt.Errorf("cluster %s: %w", name, err)
	}
	var ids []int32
	for _, b := range client.Brokers() {
		ids = append(ids, b.ID())
	}
	dirs, err := admin.DescribeLogDirs(ids)
	if err != nil {
		return 0, fmt.Errorf("cluster %s: describe log dirs: %w", name, err)
	}
	type tp struct {
		topic string
		part  int32
	}
	size := map[tp]int64{}
	for _, broker := range dirs {
		for _, d := range broker {
			for _, t := range d.Topics {
				if !topics[t.Topic] {
					continue
				}
				for _, p := range t.Partitions {
					k := tp{t.Topic, p.PartitionID}
					size[k] = max(size[k], p.Size)
				}
			}
		}
	}
	var total int64
	for _, s := range size {
		total += s
	}
	return total, nil
}
