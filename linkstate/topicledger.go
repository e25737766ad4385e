package linkstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// TopicRecord is the link's record of one mirrored topic.
type TopicRecord struct {
	Topic string `json:"topic"`
	// SourceID is the id of the source topic whose records the target
	// topic holds.
	SourceID string `json:"source_id"`
	// Created: drctl created the target topic, so it follows the source's
	// settings in full (cleanup.policy included).
	Created bool  `json:"created"`
	AtMs    int64 `json:"at_ms"`
}

// TopicLedger maps topic names to the link's records of them.
type TopicLedger map[string]TopicRecord

// ReadTopicLedger reads the link's topic records from the target; a target
// without the topic has none.
func ReadTopicLedger(ctx context.Context, dst sarama.Client, link topology.Link) (TopicLedger, error) {
	out := TopicLedger{}
	info, err := kafkaread.Topic(ctx, dst, link.TopicsTopic())
	if err != nil {
		return nil, err
	}
	if !info.Exists {
		return out, nil
	}
	if _, err := kafkaread.ReadCommitted(ctx, dst, link.TopicsTopic(), 0, 0, func(r kafkaread.Record) error {
		if r.Value == nil {
			delete(out, string(r.Key))
			return nil
		}
		if rec, err := decodeTopicRecord(string(r.Key), r.Value); err == nil {
			out[rec.Topic] = rec
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read %s: %w", link.TopicsTopic(), err)
	}
	return out, nil
}

// writeTopicRecord records rec on the target through prod.
func writeTopicRecord(prod sarama.SyncProducer, link topology.Link, rec TopicRecord) error {
	return WriteTopicRecords(prod, link, []TopicRecord{rec})[rec.Topic]
}

// WriteTopicRecords records recs on the target through prod, in as few
// requests as the producer makes of them (a reseed records hundreds of
// topics at once), and returns the failures by topic.
func WriteTopicRecords(prod sarama.SyncProducer, link topology.Link, recs []TopicRecord) map[string]error {
	failed := map[string]error{}
	msgs := make([]*sarama.ProducerMessage, 0, len(recs))
	now := time.Now().UnixMilli()
	for _, rec := range recs {
		rec.AtMs = now
		raw, err := json.Marshal(rec)
		if err != nil {
			failed[rec.Topic] = err
			continue
		}
		msgs = append(msgs, &sarama.ProducerMessage{Topic: link.TopicsTopic(), Partition: 0,
			Key: sarama.StringEncoder(rec.Topic), Value: sarama.ByteEncoder(raw)})
	}
	err := prod.SendMessages(msgs)
	if err == nil {
		return failed
	}
	perrs, ok := errors.AsType[sarama.ProducerErrors](err)
	if !ok {
		for _, m := range msgs {
			failed[string(m.Key.(sarama.StringEncoder))] = fmt.Errorf("record topic %s in %s: %w", m.Key, link.TopicsTopic(), err)
		}
		return failed
	}
	for _, pe := range perrs {
		failed[string(pe.Msg.Key.(sarama.StringEncoder))] = fmt.Errorf("record topic %s in %s: %w", pe.Msg.Key, link.TopicsTopic(), pe.Err)
	}
	return failed
}

// plainProducer is an idempotent, non-transactional producer on c for
// drctl's own bookkeeping records.
func plainProducer(c *topology.Cluster) (sarama.SyncProducer, error) {
	return kafkaconn.NewSyncProducer(c, kafkaconn.ManualPartitions)
}

// TopicChange is a mirrored topic whose source changed identity under the
// mirror: deleted, or deleted and created again (a new topic id). Its copy
// on the target is kept until the operator chooses.
type TopicChange struct {
	Topic string `json:"topic" yaml:"topic"`
	// Kind is "deleted" or "recreated".
	Kind string `json:"kind" yaml:"kind"`
	// MirroredID is the source topic id the copy holds; SourceID the
	// source's topic id now ("" when deleted).
	MirroredID string `json:"mirrored_id" yaml:"mirrored_id"`
	SourceID   string `json:"source_id,omitempty" yaml:"source_id,omitempty"`
	Message    string `json:"message" yaml:"message"`
}

// Topic change kinds.
const (
	TopicDeleted   = "deleted"
	TopicRecreated = "recreated"
)

// TopicChanges compares the ledger with the source's selected topics and
// their ids (sourceIDs: name -> id, "" when the source reports none).
func TopicChanges(link topology.Link, mirrors func(topic string) bool, ledger TopicLedger, sourceIDs map[string]string) []TopicChange {
	var out []TopicChange
	for name, rec := range ledger {
		if !mirrors(name) {
			continue
		}
		id, ok := sourceIDs[name]
		switch {
		case !ok:
			out = append(out, TopicChange{Topic: name, Kind: TopicDeleted, MirroredID: rec.SourceID,
				Message: fmt.Sprintf("deleted on %s: the copy on %s is kept (drctl never deletes a standby topic); delete it on %s yourself once it is no longer needed",
					link.Source, link.Target, link.Target)})
		case id != "" && rec.SourceID != "" && id != rec.SourceID:
			out = append(out, TopicChange{Topic: name, Kind: TopicRecreated, MirroredID: rec.SourceID, SourceID: id,
				Message: RecreatedMessage(link, name)})
		}
	}
	slices.SortFunc(out, func(a, b TopicChange) int { return strings.Compare(a.Topic, b.Topic) })
	return out
}

func RecreatedMessage(link topology.Link, topic string) string {
	return fmt.Sprintf("recreated on %s (new topic id): the copy on %s holds the old incarnation and is kept, not mirrored into; "+
		"run `drctl mirror reseed-topic %s --salvage --yes` (keep the old records in a quarantine topic) or `--drop --yes` to mirror the new one",
		link.Source, link.Target, topic)
}

// decodeTopicRecord decodes the ledger record stored under the key topic;
// a record of another topic is an error.
func decodeTopicRecord(topic string, raw []byte) (TopicRecord, error) {
	var rec TopicRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return TopicRecord{}, err
	}
	if rec.Topic != topic {
		return TopicRecord{}, fmt.Errorf("record of topic %q under key %q", rec.Topic, topic)
	}
	return rec, nil
}
