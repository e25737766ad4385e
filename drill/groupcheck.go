package drill

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
)

// checkGroupSync commits the canary group on active at the record in the
// middle of the canary (the group "has read" the first half) and waits
// until the standby holds a position for it; the result says whether that
// position is the exact one: the standby offset of that same record.
func checkGroupSync(ctx context.Context, clusters *kafkaconn.Clusters, active, standby string, c *canaryOutput, wait time.Duration) (*GroupSyncResult, error) {
	topo := clusters.Topology()
	res := &GroupSyncResult{Group: topo.CanaryGroup(), StandbyOffset: -1, Interval: topo.Mirror.GroupSyncInterval.Milliseconds()}
	mid := len(c.ActiveOffsets) / 2
	if c.Result.Missing > 0 || mid >= len(c.ActiveOffsets) || c.StandbyOffsets[mid] < 0 {
		res.Skip = "the canary records did not all reach the standby"
		return res, nil
	}
	res.ActiveOffset, res.ExpectedOffset = c.ActiveOffsets[mid], c.StandbyOffsets[mid]
	src, err := need(ctx, clusters, active)
	if err != nil {
		return nil, err
	}
	dst, err := need(ctx, clusters, standby)
	if err != nil {
		return nil, err
	}
	topic := topo.CanaryTopic()
	if err := commitPosition(ctx, src, res.Group, topic, res.ActiveOffset); err != nil {
		return nil, fmt.Errorf("commit group %s on %s: %w", res.Group, active, err)
	}
	start := time.Now()
	deadline := start.Add(wait)
	for {
		off, err := committedPosition(ctx, dst, res.Group, topic)
		if err == nil && off >= 0 {
			res.StandbyOffset = off
			if off == res.ExpectedOffset {
				break
			}
		}
		if time.Now().After(deadline) {
			break
		}
		if err := kafkaread.Sleep(ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
	}
	res.TookMS = time.Since(start).Milliseconds()
	res.Exact = res.StandbyOffset == res.ExpectedOffset
	if res.StandbyOffset >= 0 && !res.Exact {
		for _, o := range c.StandbyOffsets {
			switch {
			case o >= res.StandbyOffset && o < res.ExpectedOffset:
				res.ReRead++
			case o >= res.ExpectedOffset && o < res.StandbyOffset:
				res.Skipped++
			}
		}
	}
	return res, nil
}

// commitPosition commits offset for partition 0 of topic as group, without
// joining the group (generation -1), as a consumer that stopped would.
func commitPosition(ctx context.Context, client sarama.Client, group, topic string, offset int64) error {
	req := &sarama.OffsetCommitRequest{Version: 7, ConsumerGroup: group, ConsumerGroupGeneration: -1}
	req.AddBlockWithLeaderEpoch(topic, 0, offset, -1, 0, "drctl drill canary")
	// A group's coordinator may move or still be loading (a new group on
	// real Kafka answers NOT_COORDINATOR at first): WithCoordinator looks it
	// up again and retries.
	return kafkaread.WithCoordinator(ctx, client, group, func(coord *sarama.Broker) error {
		resp, err := kafkaread.Await(ctx, func() (*sarama.OffsetCommitResponse, error) { return coord.CommitOffset(req) })
		if err != nil {
			return err
		}
		if kerr := resp.Errors[topic][0]; !errors.Is(kerr, sarama.ErrNoError) {
			return kerr
		}
		return nil
	})
}

// committedPosition is group's committed offset for partition 0 of topic
// (-1: none; an unknown group has none).
func committedPosition(ctx context.Context, client sarama.Client, group, topic string) (int64, error) {
	coord, err := client.Coordinator(group)
	if err != nil {
		_ = client.RefreshCoordinator(group)
		return -1, err
	}
	req := &sarama.OffsetFetchRequest{Version: 7, ConsumerGroup: group}
	req.AddPartition(topic, 0)
	resp, err := coord.FetchOffset(req)
	if err != nil {
		_ = client.RefreshCoordinator(group)
		return -1, err
	}
	if errors.Is(resp.Err, sarama.ErrGroupIDNotFound) {
		return -1, nil
	}
	if !errors.Is(resp.Err, sarama.ErrNoError) {
		return -1, resp.Err
	}
	b := resp.GetBlock(topic, 0)
	if b == nil || errors.Is(b.Err, sarama.ErrUnknownTopicOrPartition) {
		return -1, nil
	}
	if !errors.Is(b.Err, sarama.ErrNoError) {
		return -1, b.Err
	}
	return b.Offset, nil
}
