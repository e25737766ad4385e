package kafkaread

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/IBM/sarama"
)

// CreateTopics creates every topic of topics that the cluster lacks, in one
// CreateTopics request to the controller the cluster names, and returns once
// the request is answered (not once the topics are led: AwaitLeaders).
// A topic that exists already counts as created, so a concurrent creator's
// topic is as good as ours. The request goes over a connection of its own:
// a client whose metadata is not full may not know the controller yet. A
// controller that moved or is unknown is looked up again, within the Brief
// policy; any other topic's error is returned, naming the topic.
//
// One request instead of one per topic: the controller answers a
// connection's requests one at a time, and each answer waits for its
// records to be committed to the metadata log.
func CreateTopics(ctx context.Context, client sarama.Client, topics map[string]*sarama.TopicDetail) error {
	if len(topics) == 0 {
		return nil
	}
	names := slices.Sorted(maps.Keys(topics))
	cfg := client.Config()
	return Do(ctx, Brief, func(int) error {
		md, err := metadata(ctx, client, names...)
		if err != nil {
			return err
		}
		controller := ""
		for _, b := range md.Brokers {
			if b.ID() == md.ControllerID {
				controller = b.Addr()
			}
		}
		if controller == "" {
			return fmt.Errorf("the cluster names no controller: %w", sarama.ErrControllerNotAvailable)
		}
		req := sarama.NewCreateTopicsRequest(cfg.Version, topics, cfg.Admin.Timeout, false)
		resp, err := Await(ctx, func() (*sarama.CreateTopicsResponse, error) {
			b := sarama.NewBroker(controller)
			if err := b.Open(cfg); err != nil {
				return nil, err
			}
			defer func() { _ = b.Close() }()
			return b.CreateTopics(req)
		})
		if err != nil {
			return err
		}
		var errs []error
		for _, name := range names {
			terr, ok := resp.TopicErrors[name]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("create topic %s: %w", name, sarama.ErrIncompleteResponse))
			case terr == nil, errors.Is(terr.Err, sarama.ErrNoError), errors.Is(terr.Err, sarama.ErrTopicAlreadyExists):
			default:
				errs = append(errs, fmt.Errorf("create topic %s: %w", name, terr))
			}
		}
		return errors.Join(errs...)
	})
}

// AwaitLeaders waits until every topic of topics exists on the cluster
// behind client and each of their partitions has a leader, for at most
// within (and while ctx lasts), asking for all of them in one metadata
// request at a time: what a caller that has just created topics waits for
// before it writes (a topic shows in every broker's metadata only a moment
// after CreateTopics answers). Like Topic it never creates a topic. When it
// gives up, the error wraps sarama.ErrLeaderNotAvailable and says how long
// it waited.
func AwaitLeaders(ctx context.Context, client sarama.Client, within time.Duration, topics ...string) error {
	if len(topics) == 0 {
		return nil // an empty list would ask for every topic
	}
	wait := Policy{First: 50 * time.Millisecond, Max: 500 * time.Millisecond, Elapsed: within}
	return Do(ctx, wait, func(int) error {
		md, err := metadata(ctx, client, topics...)
		if err != nil {
			return fmt.Errorf("metadata of %d topic(s): %w", len(topics), err)
		}
		seen := make(map[string]bool, len(topics))
		for _, tm := range md.Topics {
			if !slices.Contains(topics, tm.Name) {
				continue
			}
			switch {
			case errors.Is(tm.Err, sarama.ErrUnknownTopicOrPartition):
				continue
			case !errors.Is(tm.Err, sarama.ErrNoError):
				return fmt.Errorf("metadata of topic %s: %w", tm.Name, tm.Err)
			}
			seen[tm.Name] = true
			for _, pm := range tm.Partitions {
				if pm.Leader < 0 || (!errors.Is(pm.Err, sarama.ErrNoError) && !errors.Is(pm.Err, sarama.ErrReplicaNotAvailable)) {
					return fmt.Errorf("%s/%d has no leader yet (check the brokers' health): %w", tm.Name, pm.ID, sarama.ErrLeaderNotAvailable)
				}
			}
		}
		for _, t := range topics {
			if !seen[t] {
				return fmt.Errorf("topic %s is not in the metadata yet: %w", t, sarama.ErrLeaderNotAvailable)
			}
		}
		return nil
	})
}
