package groupsync

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/offsettranslate"
	"github.com/drctl/drctl/topology"
)

// snapshotVersion is the Version of the Snapshot records this build
// writes; a reader refuses newer ones rather than misread them.
const snapshotVersion = 1

// ErrSnapshotVersion is wrapped by LoadSnapshot's error for a record a
// newer drctl wrote.
var ErrSnapshotVersion = errors.New("group snapshot written by a newer drctl")

// Snapshot is what the standby knows of one source group: its
// committed source offsets as the mirror last observed them, their
// translation, and what the sync did with them. The JSON field names are a
// stable schema.
type Snapshot struct {
	Version int    `json:"version"`
	Group   string `json:"group"`
	// Source is the cluster the offsets were read from.
	Source string `json:"source"`
	// ObservedAt is when the offsets were read from the source.
	ObservedAt time.Time        `json:"observed_at"`
	Offsets    []SnapshotOffset `json:"offsets"`
	// Action is what the round did on the standby: commit (the changes
	// were committed), in-sync, nothing-to-sync, skipped-active, failed.
	Action SyncAction `json:"action"`
	Reason string     `json:"reason,omitempty"`
	// SyncedAt is the ObservedAt of the source offsets whose translation
	// the standby last held (committed, or found already there); nil when
	// it never did. With a healthy sync it trails ObservedAt by at most a
	// round.
	SyncedAt *time.Time `json:"synced_at,omitempty"`
}

// SnapshotOffset is one committed source offset of a group and its
// translation when it was observed.
type SnapshotOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Offset is the committed source offset.
	Offset   int64  `json:"offset"`
	Metadata string `json:"metadata,omitempty"`
	// Target is the translated target offset, -1 when unmapped.
	Target int64                  `json:"target"`
	Status offsettranslate.Status `json:"status"`
}

// positions turns the snapshot back into committed source positions.
func (s Snapshot) positions() groupPositions {
	pos := groupPositions{group: s.Group, offsets: map[topology.TopicPartition]CommittedOffset{}, observedAt: s.ObservedAt, fromSnapshot: true}
	for _, o := range s.Offsets {
		pos.offsets[topology.TopicPartition{Topic: o.Topic, Partition: o.Partition}] = CommittedOffset{Offset: o.Offset, Metadata: o.Metadata}
	}
	return pos
}

// newSnapshot records a round's translation of one group and the sync's
// outcome; prev is the group's previous snapshot (its SyncedAt carries over
// when this round did not sync).
func newSnapshot(source string, gt GroupTranslation, pos groupPositions, gs Group, prev *time.Time) Snapshot {
	s := Snapshot{Version: snapshotVersion, Group: gt.Group, Source: source, ObservedAt: gt.ObservedAt.UTC(),
		Offsets: []SnapshotOffset{}, Action: gs.Action, Reason: gs.Reason, SyncedAt: prev}
	translated := map[topology.TopicPartition]GroupPartition{}
	for _, p := range gt.Partitions {
		translated[topology.TopicPartition{Topic: p.Topic, Partition: p.Partition}] = p
	}
	for tp, c := range pos.offsets {
		if c.Offset < 0 {
			continue
		}
		o := SnapshotOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: c.Offset, Metadata: c.Metadata, Target: -1}
		if p, ok := translated[tp]; ok {
			o.Target, o.Status = p.Target, p.Status
		}
		s.Offsets = append(s.Offsets, o)
	}
	slices.SortFunc(s.Offsets, func(a, b SnapshotOffset) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	if gs.Synced() {
		at := s.ObservedAt
		s.SyncedAt = &at
	}
	return s
}

// A group's snapshot is one record, and a large group's is large: a group
// of 10,000 partitions is about 600 KB of JSON, one of a few hundred whose
// consumers keep kilobytes of metadata with each offset more than a
// megabyte, above the 1 MB a topic takes by default. So snapshots are
// written compressed (zstd: the JSON repeats its field and topic names),
// by a producer that allows snapshotMaxBytes before compression, to a
// topic that takes snapshotTopicMaxBytes after it.
const (
	snapshotMaxBytes      = 64 << 20
	snapshotTopicMaxBytes = 4 << 20
)

// ensureGroupsTopic creates the link's snapshot topic on the target when it
// is missing: compacted, one partition, large records allowed. An existing
// topic that allows less (made by an earlier drctl) is altered to allow
// them, if drctl may; if not, a large group's snapshot fails to write, and
// says so in every round.
func ensureGroupsTopic(ctx context.Context, dst sarama.Client, link topology.Link) error {
	info, err := kafkaread.Topic(ctx, dst, link.GroupsTopic())
	if err != nil {
		return fmt.Errorf("target %s: %w", link.Target, err)
	}
	admin, err := sarama.NewClusterAdminFromClient(dst)
	if err != nil {
		return fmt.Errorf("target %s: admin: %w", link.Target, err)
	}
	// The admin shares dst; closing it would close dst.
	maxBytes := strconv.Itoa(snapshotTopicMaxBytes)
	if info.Exists {
		allowLargeSnapshots(ctx, admin, link.GroupsTopic(), maxBytes)
		return nil
	}
	// Every sync round rewrites each group's snapshot, and readers start
	// from the beginning: a keyed topic's small segments keep it near one
	// record per group.
	if err := kafkaread.EnsureTopics(ctx, dst, topology.KeyedTopic(link.GroupsTopic(), snapshotTopicMaxBytes)); err != nil {
		return fmt.Errorf("target %s: create %s: %w", link.Target, link.GroupsTopic(), err)
	}
	return nil
}

// allowLargeSnapshots raises topic's max.message.bytes to maxBytes when it
// is below, best effort (see ensureGroupsTopic).
func allowLargeSnapshots(ctx context.Context, admin sarama.ClusterAdmin, topic, maxBytes string) {
	res, err := kafkaread.Await(ctx, func() ([]*sarama.ConfigResourceResult, error) {
		return admin.DescribeConfigs([]*sarama.ConfigResource{{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{"max.message.bytes"}}}, sarama.DescribeConfigsOptions{})
	})
	if err != nil {
		return
	}
	want, _ := strconv.Atoi(maxBytes)
	for _, r := range res {
		for _, e := range r.Configs {
			if n, err := strconv.Atoi(e.Value); e.Name == "max.message.bytes" && err == nil && n >= want {
				return
			}
		}
	}
	_, _ = kafkaread.Await(ctx, func() (struct{}, error) {
		return struct{}{}, admin.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
			"max.message.bytes": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &maxBytes}}, false)
	})
}

// newSnapshotProducer opens the idempotent producer that writes snapshots
// on the target, compressed, large ones included.
func newSnapshotProducer(c *topology.Cluster) (sarama.SyncProducer, error) {
	p, err := kafkaconn.NewSyncProducer(c, func(cfg *sarama.Config) {
		cfg.Producer.Compression = sarama.CompressionZSTD
		cfg.Producer.MaxMessageBytes = snapshotMaxBytes
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot producer on %s: %w", c.Name, err)
	}
	return p, nil
}

// writeSnapshots writes one record per snapshot and a tombstone per name in
// gone to the link's snapshot topic. It returns when ctx ends, but the send
// goes on (bounded by the producer's timeouts) and is counted in inflight
// until it ends: the producer must not be closed before inflight.Wait, or
// the send would panic on the closed producer.
func writeSnapshots(ctx context.Context, p sarama.SyncProducer, inflight *sync.WaitGroup, link topology.Link, snaps []Snapshot, gone []string) error {
	msgs := make([]*sarama.ProducerMessage, 0, len(snaps)+len(gone))
	for _, s := range snaps {
		v, err := json.Marshal(s)
		if err != nil {
			return fmt.Errorf("encode snapshot of group %s: %w", s.Group, err)
		}
		msgs = append(msgs, &sarama.ProducerMessage{Topic: link.GroupsTopic(), Key: sarama.StringEncoder(s.Group), Value: sarama.ByteEncoder(v)})
	}
	for _, g := range gone {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: link.GroupsTopic(), Key: sarama.StringEncoder(g)})
	}
	if len(msgs) == 0 {
		return nil
	}
	sent := make(chan error, 1)
	inflight.Go(func() { sent <- p.SendMessages(msgs) })
	var err error
	select {
	case err = <-sent:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("write group snapshot to %s on %s: %w", link.GroupsTopic(), link.Target, err)
	}
	return nil
}

// LoadSnapshot reads the link's snapshot of the source groups from the
// target cluster behind client (see GroupsTopic): the latest record of every
// group that has not been deleted since. It needs nothing from the source,
// so an unplanned failover can translate the last positions the mirror saw
// (Snapshot.ObservedAt says how old they are).
//
// A missing topic (the mirror's group sync never ran on this target) is an
// error wrapping sarama.ErrUnknownTopicOrPartition; the topic is never
// created. A record that does not decode is an error naming its offset; one
// written by a newer drctl wraps ErrSnapshotVersion.
func LoadSnapshot(ctx context.Context, client sarama.Client, link topology.Link) (map[string]Snapshot, error) {
	topic := link.GroupsTopic()
	info, err := kafkaread.Topic(ctx, client, topic)
	if err != nil {
		return nil, fmt.Errorf("read group snapshot: %w", err)
	}
	if !info.Exists {
		return nil, fmt.Errorf("read group snapshot: topic %s on %s: %w", topic, link.Target, sarama.ErrUnknownTopicOrPartition)
	}
	// Each group's last record replaces the ones before it: only that one
	// is decoded (a group of 10,000 partitions has a large snapshot, and
	// the topic holds every round's until it is compacted).
	type last struct {
		p      int32
		offset int64
		value  []byte
	}
	latest := map[string]last{}
	for p := int32(0); p < int32(info.Partitions); p++ {
		_, err := kafkaread.ReadCommitted(ctx, client, topic, p, 0, func(r kafkaread.Record) error {
			if r.Value == nil {
				delete(latest, string(r.Key))
				return nil
			}
			latest[string(r.Key)] = last{p: p, offset: r.Offset, value: r.Value}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read group snapshot: %w", err)
		}
	}
	out := make(map[string]Snapshot, len(latest))
	for group, l := range latest {
		s, err := decodeSnapshot(group, l.value)
		if err != nil {
			return nil, fmt.Errorf("read group snapshot: %s/%d at offset %d: %w", topic, l.p, l.offset, err)
		}
		out[group] = s
	}
	return out, nil
}

// decodeSnapshot decodes the record of a group's snapshot stored under the
// key group. One written by a newer drctl is an error wrapping
// ErrSnapshotVersion.
func decodeSnapshot(group string, raw []byte) (Snapshot, error) {
	var s Snapshot
	if err := json.Unmarshal(raw, &s); err != nil {
		return Snapshot{}, err
	}
	if s.Version > snapshotVersion {
		return Snapshot{}, fmt.Errorf("%w: version %d (this build reads %d; upgrade drctl)", ErrSnapshotVersion, s.Version, snapshotVersion)
	}
	if s.Group != group {
		return Snapshot{}, fmt.Errorf("record of group %q under key %q", s.Group, group)
	}
	return s, nil
}
