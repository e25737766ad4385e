package failover

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
)

// The wipe deletes a stale cluster's mirrored topics and groups in batched
// requests. sarama's ClusterAdmin deletes one topic (DeleteTopic) or one
// group (DeleteConsumerGroup) per request, each waiting for the controller
// or the coordinator: 100 topics and 50 groups took 3.9 s of a failover's
// reseed tail on real Kafka, one request after the other.

// wipeBatch bounds the topics of one DeleteTopics request: each is a
// controller operation that writes a record per partition.
const wipeBatch = 100

// deleteTopics deletes topics on the cluster of client, in DeleteTopics
// requests of up to wipeBatch topics sent to the controller. A topic
// already gone counts as deleted. A transient answer (a controller that
// moved, a timeout) sends the topics it names again, with a fresh
// controller, within kafkaread's Patient policy; any other refusal is
// returned, naming the topic.
func deleteTopics(ctx context.Context, client sarama.Client, topics []string) error {
	cfg := client.Config()
	for chunk := range slices.Chunk(topics, wipeBatch) {
		left := slices.Clone(chunk)
		err := kafkaread.Do(ctx, kafkaread.Patient, func(attempt int) error {
			b, err := client.Controller()
			if attempt > 0 {
				b, err = client.RefreshController()
			}
			if err != nil {
				return fmt.Errorf("controller: %w", err)
			}
			rsp, err := b.DeleteTopics(sarama.NewDeleteTopicsRequest(cfg.Version, left, cfg.Admin.Timeout))
			if err != nil {
				return fmt.Errorf("delete %d topic(s): %w", len(left), err)
			}
			var retry []string
			var last error
			for _, t := range left {
				terr, ok := rsp.TopicErrorCodes[t]
				switch {
				case !ok:
					retry, last = append(retry, t), fmt.Errorf("delete topic %s: no answer: %w", t, sarama.ErrRequestTimedOut)
				case errors.Is(terr, sarama.ErrNoError), errors.Is(terr, sarama.ErrUnknownTopicOrPartition):
				case kafkaread.Retriable(terr):
					retry, last = append(retry, t), fmt.Errorf("delete topic %s: %w", t, terr)
				default:
					return fmt.Errorf("delete topic %s: %w", t, terr)
				}
			}
			left = retry
			return last
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// deleteGroups deletes groups on the cluster of client, in one DeleteGroups
// request per group coordinator. A group already gone counts as deleted; a
// transient answer (a coordinator that moved or is loading) sends the
// groups it names again, with fresh coordinators, within kafkaread's
// Patient policy; any other refusal (a group that is not empty) is
// returned, naming the group.
func deleteGroups(ctx context.Context, client sarama.Client, groups []string) error {
	version := int16(0)
	switch v := client.Config().Version; {
	case v.IsAtLeast(sarama.V2_4_0_0):
		version = 2
	case v.IsAtLeast(sarama.V2_0_0_0):
		version = 1
	}
	left := slices.Clone(groups)
	return kafkaread.Do(ctx, kafkaread.Patient, func(attempt int) error {
		byCoordinator := map[int32][]string{}
		brokers := map[int32]*sarama.Broker{}
		var retry []string
		var last error
		for _, g := range left {
			if attempt > 0 {
				_ = client.RefreshCoordinator(g)
			}
			b, err := client.Coordinator(g)
			switch {
			case err != nil && !kafkaread.Retriable(err):
				return fmt.Errorf("delete group %s: coordinator: %w", g, err)
			case err != nil:
				retry, last = append(retry, g), fmt.Errorf("delete group %s: coordinator: %w", g, err)
			default:
				byCoordinator[b.ID()] = append(byCoordinator[b.ID()], g)
				brokers[b.ID()] = b
			}
		}
		for _, id := range slices.Sorted(maps.Keys(byCoordinator)) {
			batch := byCoordinator[id]
			rsp, err := brokers[id].DeleteGroups(&sarama.DeleteGroupsRequest{Version: version, Groups: batch})
			switch {
			case err != nil && !kafkaread.Retriable(err):
				return fmt.Errorf("delete %d group(s): %w", len(batch), err)
			case err != nil:
				retry, last = append(retry, batch...), fmt.Errorf("delete %d group(s): %w", len(batch), err)
				continue
			}
			for _, g := range batch {
				gerr, ok := rsp.GroupErrorCodes[g]
				switch {
				case !ok:
					retry, last = append(retry, g), fmt.Errorf("delete group %s: no answer: %w", g, sarama.ErrRequestTimedOut)
				case errors.Is(gerr, sarama.ErrNoError), errors.Is(gerr, sarama.ErrGroupIDNotFound):
				case kafkaread.Retriable(gerr):
					retry, last = append(retry, g), fmt.Errorf("delete group %s: %w", g, gerr)
				default:
					return fmt.Errorf("delete group %s: %w", g, gerr)
				}
			}
		}
		left = retry
		return last
	})
}
