package kafkaread

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/IBM/sarama"
)

// TopicInfo is what a cluster's metadata says about one topic.
type TopicInfo struct {
	// Exists is false when the cluster does not know the topic.
	Exists bool
	// ID is the topic's id in hex ("" when the cluster reports none). A
	// topic deleted and created again under the same name has a new id.
	ID string
	// Partitions is the topic's partition count (0 when it does not exist).
	Partitions int
	// Brokers are the addresses of the brokers the cluster reports,
	// ordered by broker id.
	Brokers []string
	// Controller is the address of the broker the cluster names as its
	// controller ("" when it names none): where admin requests go.
	Controller string
	// Leaders maps each partition to its leader's broker id, -1 while the
	// partition has no leader.
	Leaders map[int32]int32
}

// Topic looks topic up in the cluster's metadata. It never creates the
// topic, whatever the client's Metadata.AllowAutoTopicCreation says. A
// missing topic is not an error: it comes back with Exists false.
func Topic(ctx context.Context, client sarama.Client, topic string) (TopicInfo, error) {
	md, err := metadata(ctx, client, topic)
	if err != nil {
		return TopicInfo{}, fmt.Errorf("metadata of topic %s: %w", topic, err)
	}
	var info TopicInfo
	brokers := append([]*sarama.Broker(nil), md.Brokers...)
	slices.SortFunc(brokers, func(a, b *sarama.Broker) int { return cmp.Compare(a.ID(), b.ID()) })
	for _, b := range brokers {
		info.Brokers = append(info.Brokers, b.Addr())
		if b.ID() == md.ControllerID {
			info.Controller = b.Addr()
		}
	}
	for _, tm := range md.Topics {
		if tm.Name != topic {
			continue
		}
		switch {
		case errors.Is(tm.Err, sarama.ErrUnknownTopicOrPartition):
			return info, nil
		case !errors.Is(tm.Err, sarama.ErrNoError):
			return info, fmt.Errorf("metadata of topic %s: %w", topic, tm.Err)
		}
		info.Exists = true
		if tm.Uuid != (sarama.Uuid{}) {
			info.ID = hex.EncodeToString(tm.Uuid[:])
		}
		info.Partitions = len(tm.Partitions)
		info.Leaders = make(map[int32]int32, len(tm.Partitions))
		for _, pm := range tm.Partitions {
			leader := pm.Leader
			if !errors.Is(pm.Err, sarama.ErrNoError) && !errors.Is(pm.Err, sarama.ErrReplicaNotAvailable) {
				leader = -1
			}
			info.Leaders[pm.ID] = leader
		}
		return info, nil
	}
	return info, nil
}

// TopicIDs returns the ids (hex) of topics that exist on the cluster, in one
// metadata request: a topic missing from the result does not exist, and an
// empty id means the cluster reports none. A topic deleted and created again
// under its name has a new id, so a reader that knows the id it started
// from can tell the two incarnations apart. Like Topic it never creates a
// topic.
func TopicIDs(ctx context.Context, client sarama.Client, topics []string) (map[string]string, error) {
	if len(topics) == 0 {
		return map[string]string{}, nil // an empty list would ask for every topic
	}
	md, err := metadata(ctx, client, topics...)
	if err != nil {
		return nil, fmt.Errorf("metadata of %d topic(s): %w", len(topics), err)
	}
	ids := make(map[string]string, len(topics))
	for _, tm := range md.Topics {
		switch {
		case errors.Is(tm.Err, sarama.ErrUnknownTopicOrPartition):
		case !errors.Is(tm.Err, sarama.ErrNoError):
			return nil, fmt.Errorf("metadata of topic %s: %w", tm.Name, tm.Err)
		case tm.Uuid != (sarama.Uuid{}):
			ids[tm.Name] = hex.EncodeToString(tm.Uuid[:])
		default:
			ids[tm.Name] = ""
		}
	}
	return ids, nil
}

// errNoLiveBroker is a metadata answer that lists no broker at all. A KRaft
// broker whose controller fenced it (its heartbeats stopped: a pause, a long
// GC, a broken controller link) answers so for a moment after it runs again,
// until it has registered anew; the answer's topics then have no leader and
// no address to produce to. Transient: asking again shortly succeeds.
var errNoLiveBroker = fmt.Errorf("the cluster's metadata lists no live broker (a broker fenced by its controller, as after a pause, lists none until it registers again): %w", sarama.ErrOutOfBrokers)

// metadata asks the brokers the client knows, one after the other, for the
// metadata of topics, with automatic topic creation off. The first answer
// that lists at least one broker wins; an answer that lists none counts as
// that broker's failure (errNoLiveBroker, Transient).
func metadata(ctx context.Context, client sarama.Client, topics ...string) (*sarama.MetadataResponse, error) {
	if client == nil {
		return nil, errors.New("no client")
	}
	if client.Closed() {
		return nil, sarama.ErrClosedClient
	}
	brokers := client.Brokers()
	slices.SortFunc(brokers, func(a, b *sarama.Broker) int { return cmp.Compare(a.ID(), b.ID()) })
	if len(brokers) == 0 {
		// A client with Metadata.Full off knows only its seed brokers
		// until it first asks for a topic.
		if b := client.LeastLoadedBroker(); b != nil {
			brokers = append(brokers, b)
		}
	}
	if len(brokers) == 0 {
		return nil, sarama.ErrOutOfBrokers
	}
	var errs []error
	for _, b := range brokers {
		req := sarama.NewMetadataRequest(client.Config().Version, topics)
		req.AllowAutoTopicCreation = false
		md, err := Await(ctx, func() (*sarama.MetadataResponse, error) {
			if err := Connected(ctx, b, client.Config()); err != nil {
				return nil, err
			}
			return b.GetMetadata(req)
		})
		if err == nil && len(md.Brokers) == 0 {
			err = errNoLiveBroker
		}
		if err == nil {
			return md, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		errs = append(errs, fmt.Errorf("broker %s: %w", b.Addr(), err))
	}
	return nil, errors.Join(errs...)
}

// leader returns the partition's leader, as the client sees it after a
// metadata refresh when refresh is set. The topic must exist: the client's
// own metadata requests may ask for automatic topic creation.
func leader(ctx context.Context, client sarama.Client, topic string, partition int32, refresh bool) (*sarama.Broker, error) {
	return Await(ctx, func() (*sarama.Broker, error) {
		if refresh {
			if err := client.RefreshMetadata(topic); err != nil {
				return nil, err
			}
		}
		return client.Leader(topic, partition)
	})
}

// mustExist returns an error wrapping sarama.ErrUnknownTopicOrPartition when
// the partition does not exist.
func mustExist(ctx context.Context, client sarama.Client, topic string, partition int32) error {
	info, err := Topic(ctx, client, topic)
	if err != nil {
		return err
	}
	if !info.Exists || partition < 0 || int(partition) >= info.Partitions {
		return fmt.Errorf("partition %s/%d: %w", topic, partition, sarama.ErrUnknownTopicOrPartition)
	}
	return nil
}

// TopicShape is a topic's partition count and replication factor (that of
// its first partition).
type TopicShape struct {
	Partitions        int32
	ReplicationFactor int16
}

// ListTopics lists every topic of the cluster with its shape, in one
// metadata request. Use it rather than sarama's ClusterAdmin.ListTopics,
// which also describes the configs of every topic of the cluster: a heavy
// request for the broker on a cluster of thousands of topics, and the
// mirror's ACL sync lists the topics every few seconds.
func ListTopics(admin sarama.ClusterAdmin) (map[string]TopicShape, error) {
	md, err := admin.DescribeTopics(nil)
	if err != nil {
		return nil, err
	}
	out := make(map[string]TopicShape, len(md))
	for _, t := range md {
		s := TopicShape{Partitions: int32(len(t.Partitions))}
		if len(t.Partitions) > 0 {
			first := t.Partitions[0]
			for _, p := range t.Partitions {
				if p.ID < first.ID {
					first = p
				}
			}
			s.ReplicationFactor = int16(len(first.Replicas))
		}
		out[t.Name] = s
	}
	return out, nil
}
