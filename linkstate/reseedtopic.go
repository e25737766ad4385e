package linkstate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// ErrNotRecreated means a topic given to ReseedTopic still holds the
// incarnation the mirror copies: there is nothing to choose.
var ErrNotRecreated = errors.New("topic not recreated on the source")

// ReseedTopicResult is what ReseedTopic did.
type ReseedTopicResult struct {
	Link  string `json:"link" yaml:"link"`
	Topic string `json:"topic" yaml:"topic"`
	// OldID and NewID are the source topic ids of the incarnation the
	// copy held and of the one mirrored from now on.
	OldID string `json:"old_id" yaml:"old_id"`
	NewID string `json:"new_id" yaml:"new_id"`
	// SalvageTopic and Salvaged: where the old copy's records went and
	// how many (salvage only).
	SalvageTopic string `json:"salvage_topic,omitempty" yaml:"salvage_topic,omitempty"`
	Salvaged     int64  `json:"salvaged" yaml:"salvaged"`
	// Dropped: the old copy was deleted from the target.
	Dropped bool `json:"dropped" yaml:"dropped"`
}

// ReseedTopic resolves a topic recreated on the link's source:
// with salvage it first copies every committed record of the old copy on
// the target into topo.SalvageTopic(topic) there (records unchanged,
// provenance included); then it deletes the old copy and its progress and
// records the new incarnation, so the running mirror creates the topic
// again and copies the new incarnation from its earliest offset.
//
// It refuses (ErrNotRecreated), changing nothing, when the source topic is
// the incarnation the mirror copies. The mirror does not copy a recreated
// topic meanwhile, so the steps never race with it; an interrupted run can
// be run again.
func ReseedTopic(ctx context.Context, clusters *kafkaconn.Clusters, link topology.Link, topic string, salvage bool) (ReseedTopicResult, error) {
	topo := clusters.Topology()
	res := ReseedTopicResult{Link: link.String(), Topic: topic}
	clusters.Connect(ctx, link.Source, link.Target)
	src, err := clusters.Need(link.Source)
	if err != nil {
		return res, err
	}
	dst, err := clusters.Need(link.Target)
	if err != nil {
		return res, err
	}
	now, err := kafkaread.Topic(ctx, src, topic)
	if err != nil {
		return res, fmt.Errorf("source %s: %w", link.Source, err)
	}
	if !now.Exists {
		return res, fmt.Errorf("topic %s does not exist on %s: nothing to mirror from; its copy on %s is kept", topic, link.Source, link.Target)
	}
	ledger, err := ReadTopicLedger(ctx, dst, link)
	if err != nil {
		return res, fmt.Errorf("target %s: %w", link.Target, err)
	}
	rec, ok := ledger[topic]
	res.OldID, res.NewID = rec.SourceID, now.ID
	if !ok || rec.SourceID == "" || now.ID == "" || rec.SourceID == now.ID {
		return res, fmt.Errorf("%w: %s on %s is the incarnation the mirror copies (topic id %s); nothing was changed", ErrNotRecreated, topic, link.Source, now.ID)
	}
	old, err := kafkaread.Topic(ctx, dst, topic)
	if err != nil {
		return res, fmt.Errorf("target %s: %w", link.Target, err)
	}
	admin, err := sarama.NewClusterAdminFromClient(dst)
	if err != nil {
		return res, fmt.Errorf("target %s: admin: %w", link.Target, err)
	}
	if old.Exists {
		if salvage {
			res.SalvageTopic = topo.SalvageTopic(topic)
			n, err := copyTopic(ctx, dst, admin, topo.Clusters[link.Target], topic, res.SalvageTopic, int32(old.Partitions))
			res.Salvaged = n
			if err != nil {
				return res, fmt.Errorf("salvage %s into %s on %s: %w; nothing was deleted", topic, res.SalvageTopic, link.Target, err)
			}
		}
		if err := admin.DeleteTopic(topic); err != nil && !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
			return res, fmt.Errorf("target %s: delete the old copy of %s: %w", link.Target, topic, err)
		}
		if err := waitTopicGone(ctx, dst, topic); err != nil {
			return res, fmt.Errorf("target %s: %w", link.Target, err)
		}
		res.Dropped = true
		for p := int32(0); p < int32(old.Partitions); p++ {
			err := admin.DeleteConsumerGroupOffset(link.ProgressGroup(), topic, p)
			if err != nil && !errors.Is(err, sarama.ErrGroupIDNotFound) && !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
				return res, fmt.Errorf("target %s: forget the progress of %s/%d: %w; run the command again", link.Target, topic, p, err)
			}
		}
	}
	prod, err := plainProducer(topo.Clusters[link.Target])
	if err != nil {
		return res, fmt.Errorf("target %s: %w", link.Target, err)
	}
	defer prod.Close()
	if err := writeTopicRecord(prod, link, TopicRecord{Topic: topic, SourceID: now.ID, Created: true}); err != nil {
		return res, fmt.Errorf("target %s: %w; run the command again", link.Target, err)
	}
	return res, nil
}

// copyTopic appends every committed record of from to into (created with
// the same partition count when missing), partition for partition, and
// returns how many it copied.
func copyTopic(ctx context.Context, cl sarama.Client, admin sarama.ClusterAdmin, c *topology.Cluster, from, into string, partitions int32) (int64, error) {
	rf := topology.InternalReplicas(len(cl.Brokers()))
	err := admin.CreateTopic(into, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: rf}, false)
	if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		return 0, fmt.Errorf("create %s: %w", into, err)
	}
	cfg, err := c.SaramaConfig()
	if err != nil {
		return 0, err
	}
	kafkaconn.CopyProducer(cfg)
	cfg.Producer.MaxMessageBytes = kafkaconn.MaxProducerBytes
	prod, err := sarama.NewSyncProducer(c.Bootstrap, cfg)
	if err != nil {
		return 0, err
	}
	defer prod.Close()
	var n int64
	for p := range partitions {
		_, err := kafkaread.ReadCommitted(ctx, cl, from, p, 0, func(r kafkaread.Record) error {
			hs := make([]sarama.RecordHeader, 0, len(r.Headers))
			for _, h := range r.Headers {
				hs = append(hs, *h)
			}
			_, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: into, Partition: p, Key: keyOf(r.Key),
				Value: sarama.ByteEncoder(r.Value), Headers: hs, Timestamp: r.Timestamp})
			if err == nil {
				n++
			}
			return err
		})
		if err != nil {
			return n, fmt.Errorf("%s/%d: %w", from, p, err)
		}
	}
	return n, nil
}

// keyOf keeps a null key null.
func keyOf(k []byte) sarama.Encoder {
	if k == nil {
		return nil
	}
	return sarama.ByteEncoder(k)
}

func waitTopicGone(ctx context.Context, cl sarama.Client, topic string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		info, err := kafkaread.Topic(ctx, cl, topic)
		if err == nil && !info.Exists {
			return nil
		}
		if kafkaread.Sleep(ctx, 200*time.Millisecond) != nil {
			return fmt.Errorf("%s still listed after its deletion: %w", topic, ctx.Err())
		}
	}
}
