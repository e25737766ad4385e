package failover

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/mirror"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

// SalvagedPartition counts what one partition of the stale cluster held
// that never reached the active cluster.
type SalvagedPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// From and To bound the stale partition's offsets that were salvaged:
	// [From, To).
	From    int64 `json:"from"`
	To      int64 `json:"to"`
	Records int64 `json:"records"`
	// Into is the quarantine topic on the active cluster.
	Into string `json:"into"`
}

// SalvageReport is the outcome of Salvage.
type SalvageReport struct {
	Stale  string `json:"stale"`
	Active string `json:"active"`
	// Records counts the records salvaged into quarantine.
	Records int64 `json:"records"`
	// FromActive counts the records skipped because they carry the
	// active cluster's provenance (they came from it: it has them).
	FromActive int64               `json:"from_active"`
	Partitions []SalvagedPartition `json:"partitions"`
	// Identity is set when the stale cluster answers with another cluster
	// id than the plan recorded: it was rebuilt, and what only it held
	// (the RPO) is lost.
	Identity *inspect.IdentityChange `json:"identity_change,omitempty"`
}

// Headers salvage adds to every record it copies into quarantine. The
// record's own headers, drctl's provenance (drctl.o, drctl.s) included,
// are kept as they were: salvage records where it took the record from,
// it never rewrites where the record came from.
const (
	// HeaderSalvagedFrom is the cluster id of the stale cluster.
	HeaderSalvagedFrom = "drctl.salvaged-from"
	// HeaderSalvagedOffset is the record's offset on the stale cluster
	// (8 bytes, big endian); it makes a salvage resumable.
	HeaderSalvagedOffset = "drctl.salvaged-offset"
	// HeaderSalvagedTopicID is the id (hex) of the stale cluster's topic
	// the record was read from. Offsets are only comparable within one
	// topic id: a topic wiped and re-seeded (or deleted and created again)
	// numbers its records from 0 again.
	HeaderSalvagedTopicID = "drctl.salvaged-topic-id"
)

// Salvage copies every committed record that the stale cluster holds but
// never mirrored to the active cluster (the records after the mirror's
// progress of the link stale -> active; all of them once a wipe retired
// that link, see forgetProgress) into quarantine topics on the active
// cluster (<topic><suffix>, same partition), except the records that
// carry the active cluster's provenance (drctl.o: they came from it).
// Every salvaged record keeps its headers and gets HeaderSalvagedFrom,
// HeaderSalvagedOffset and HeaderSalvagedTopicID. It is idempotent: a
// partition already salvaged in part continues after the last offset
// salvaged from the same cluster and the same topic id; records salvaged
// from an earlier copy of the topic (before a wipe) never hide newer ones.
func Salvage(ctx context.Context, topo *topology.Topology, stale, active string) (*SalvageReport, error) {
	w := connect(ctx, topo, stale, active)
	defer w.Close()
	src, err := w.Need(stale)
	if err != nil {
		return nil, fmt.Errorf("salvage: %w", err)
	}
	dst, err := w.Need(active)
	if err != nil {
		return nil, fmt.Errorf("salvage: %w", err)
	}
	link := topo.Link(stale, active)
	tps, err := mirror.MirroredPartitions(src, topo)
	if err != nil {
		return nil, fmt.Errorf("salvage: list topics on %s: %w", stale, err)
	}
	progress, err := mirror.ReadProgress(ctx, src, dst, link, tps)
	if err != nil {
		return nil, fmt.Errorf("salvage: mirror progress of %s on %s: %w", link, active, err)
	}
	staleID, err := kafkaconn.ClusterID(src)
	if err != nil {
		return nil, fmt.Errorf("salvage: %s: %w", stale, err)
	}
	activeID, err := kafkaconn.ClusterID(dst)
	if err != nil {
		return nil, fmt.Errorf("salvage: %s: %w", active, err)
	}
	rep := &SalvageReport{Stale: stale, Active: active, Partitions: []SalvagedPartition{}}
	var producer sarama.SyncProducer
	defer func() {
		if producer != nil {
			_ = producer.Close()
		}
	}()
	// Every partition's ends in one request per leader broker each, after
	// the progress (as the lag reads them): one partition after the other,
	// 1,200 partitions took 2 s of a failover.
	starts, stable, err := partitionEnds(ctx, src, tps)
	if err != nil {
		return nil, fmt.Errorf("salvage: ends on %s: %w", stale, err)
	}
	created := map[string]bool{}
	topicIDs := map[string]string{}
	for _, tp := range tps {
		ends := kafkaread.Ends{Start: starts[tp], Stable: stable[tp]}
		from, ok := progress[tp]
		if !ok {
			from = ends.Start // never mirrored: all of it is unmirrored
		}
		from = max(from, ends.Start)
		if from >= ends.Stable {
			continue
		}
		into := topo.SalvageTopic(tp.Topic)
		if !created[into] {
			if err := ensureSalvageTopic(ctx, src, dst, tp.Topic, into); err != nil {
				return nil, fmt.Errorf("salvage: %w", err)
			}
			created[into] = true
		}
		topicID, ok := topicIDs[tp.Topic]
		if !ok {
			info, err := kafkaread.Topic(ctx, src, tp.Topic)
			if err != nil {
				return nil, fmt.Errorf("salvage: %w", err)
			}
			topicID, topicIDs[tp.Topic] = info.ID, info.ID
		}
		done, err := lastSalvaged(ctx, dst, into, tp.Partition, staleID, topicID)
		if err != nil {
			return nil, fmt.Errorf("salvage: %w", err)
		}
		start := max(from, done+1)
		if producer == nil {
			if producer, err = salvageProducer(topo.Clusters[active]); err != nil {
				return nil, fmt.Errorf("salvage: producer on %s: %w", active, err)
			}
		}
		sp := SalvagedPartition{Topic: tp.Topic, Partition: tp.Partition, From: from, To: ends.Stable, Into: into}
		var batch []*sarama.ProducerMessage
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			err := producer.SendMessages(batch)
			batch = batch[:0]
			return err
		}
		_, err = kafkaread.ReadCommitted(ctx, src, tp.Topic, tp.Partition, from, func(r kafkaread.Record) error {
			if originOf(r) == activeID {
				rep.FromActive++
				return nil // it came from the active cluster, which has it
			}
			sp.Records++
			if r.Offset < start {
				return nil // salvaged by an earlier run
			}
			var off [8]byte
			binary.BigEndian.PutUint64(off[:], uint64(r.Offset))
			headers := make([]sarama.RecordHeader, 0, len(r.Headers)+2)
			for _, h := range r.Headers {
				headers = append(headers, *h)
			}
			headers = append(headers, sarama.RecordHeader{Key: []byte(HeaderSalvagedFrom), Value: []byte(staleID)},
				sarama.RecordHeader{Key: []byte(HeaderSalvagedOffset), Value: off[:]},
				sarama.RecordHeader{Key: []byte(HeaderSalvagedTopicID), Value: []byte(topicID)})
			m := &sarama.ProducerMessage{Topic: into, Partition: tp.Partition, Value: sarama.ByteEncoder(r.Value), Headers: headers, Timestamp: r.Timestamp}
			if r.Key != nil {
				m.Key = sarama.ByteEncoder(r.Key)
			}
			batch = append(batch, m)
			if len(batch) >= 500 {
				return flush()
			}
			return nil
		})
		if err == nil {
			err = flush()
		}
		if err != nil {
			return nil, fmt.Errorf("salvage %s from %s into %s on %s: %w", tp, stale, into, active, err)
		}
		if sp.Records > 0 {
			rep.Partitions = append(rep.Partitions, sp)
			rep.Records += sp.Records
		}
	}
	return rep, nil
}

func salvageProducer(c *topology.Cluster) (sarama.SyncProducer, error) {
	return kafkaconn.NewSyncProducer(c, kafkaconn.ManualPartitions)
}

// ensureSalvageTopic creates the quarantine topic with the partition count
// of the stale topic.
func ensureSalvageTopic(ctx context.Context, src, dst sarama.Client, topic, into string) error {
	parts, err := src.Partitions(topic)
	if err != nil {
		return fmt.Errorf("partitions of %s: %w", topic, err)
	}
	info, err := kafkaread.Topic(ctx, dst, into)
	if err != nil {
		return err
	}
	if info.Exists {
		return nil
	}
	admin, err := sarama.NewClusterAdminFromClient(dst)
	if err != nil {
		return err
	}
	rf := int16(min(3, max(1, len(dst.Brokers()))))
	err = admin.CreateTopic(into, &sarama.TopicDetail{NumPartitions: int32(len(parts)), ReplicationFactor: rf}, false)
	if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		return fmt.Errorf("create %s: %w", into, err)
	}
	return waitTopic(ctx, dst, into, true)
}

// lastSalvaged returns the highest offset already in the quarantine
// partition that was salvaged from the stale cluster staleID's topic with id
// topicID (-1 when none). Records salvaged from another cluster, or from
// another copy of the topic (a different id: the topic was wiped and
// re-seeded, or deleted and created again, since), do not count: their
// offsets number other records, and counting them would skip unsalvaged
// records silently. A record salvaged by an older drctl (no topic id
// header) counts only when the cluster reports no topic ids; otherwise it
// may be salvaged twice, never lost.
func lastSalvaged(ctx context.Context, dst sarama.Client, into string, partition int32, staleID, topicID string) (int64, error) {
	last := int64(-1)
	_, err := kafkaread.ReadCommitted(ctx, dst, into, partition, 0, func(r kafkaread.Record) error {
		off, legacy := int64(-1), int64(-1)
		from, id, hasID := "", "", false
		for _, h := range r.Headers {
			switch string(h.Key) {
			case HeaderSalvagedOffset:
				if len(h.Value) == 8 {
					off = int64(binary.BigEndian.Uint64(h.Value))
				}
			case HeaderSalvagedFrom:
				from = string(h.Value)
			case HeaderSalvagedTopicID:
				id, hasID = string(h.Value), true
			case mirror.HeaderSourceOffset:
				if len(h.Value) == 8 {
					legacy = int64(binary.BigEndian.Uint64(h.Value))
				}
			}
		}
		if off < 0 {
			off = legacy
		}
		if from != "" && from != staleID {
			return nil // salvaged from another cluster
		}
		if id != topicID || (!hasID && topicID != "") {
			return nil // salvaged from another copy of the topic
		}
		last = max(last, off)
		return nil
	})
	return last, err
}

// originOf returns the cluster id of a record's drctl.o provenance header
// ("" when it has none: it was written where it is).
func originOf(r kafkaread.Record) string {
	for _, h := range r.Headers {
		if string(h.Key) == mirror.HeaderOrigin {
			return string(h.Value)
		}
	}
	return ""
}

// WipeReport is the outcome of Wipe.
type WipeReport struct {
	Cluster       string   `json:"cluster"`
	TopicsDeleted []string `json:"topics_deleted"`
	GroupsDeleted []string `json:"groups_deleted"`
}

// MirrorStopTimeout bounds how long a wipe waits for drctl's own mirror
// of active -> stale to leave the stale cluster. The run's role state
// stops it, but a daemon reads the roles every few seconds (5s by
// default; 0.5 s once it has seen a run under way) and a process that
// died holds its membership until its session times out (10s by
// default).
const MirrorStopTimeout = time.Minute

// Wipe deletes, on the stale cluster, the mirrored topics, the selected
// consumer groups, and the internal topics and groups of the link that
// will copy into it (from the active cluster), and waits until the topics
// are gone. The mirror then re-creates the topics with the active
// cluster's shape and re-seeds them from the earliest offset. It refuses a
// selected group with members (stop those consumers first). Members of
// the link's own groups are drctl mirror processes, which the run's role
// state stops: Wipe waits up to MirrorStopTimeout for them to leave
// before it deletes anything (the healthy standby's mirror is still
// running when a forced reseed reaches its wipe). Idempotent.
func Wipe(ctx context.Context, topo *topology.Topology, stale, active string) (*WipeReport, error) {
	return wipe(ctx, topo, stale, active, nil)
}

// wipe is Wipe reporting its wait for the mirror to rc (nil: none), whose
// first interrupt stops the wait with nothing deleted.
func wipe(ctx context.Context, topo *topology.Topology, stale, active string, rc *plans.RunContext) (*WipeReport, error) {
	client, err := kafkaconn.Dial(ctx, topo.Clusters[stale], nil)
	if err != nil {
		return nil, fmt.Errorf("wipe: %w", err)
	}
	defer client.Close()
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return nil, fmt.Errorf("wipe %s: %w", stale, err)
	}
	rep := &WipeReport{Cluster: stale, TopicsDeleted: []string{}, GroupsDeleted: []string{}}
	link := topo.Link(active, stale)
	keep, groups, err := wipeTargets(admin, topo, link)
	if err != nil {
		return nil, fmt.Errorf("wipe %s: %w", stale, err)
	}
	if len(groups) > 0 {
		if err := waitGroupsLeft(ctx, admin, stale, link, groups, topo, rc); err != nil {
			return nil, err
		}
	}
	if err := deleteGroups(ctx, client, groups); err != nil {
		return nil, fmt.Errorf("wipe %s: %w", stale, err)
	}
	rep.GroupsDeleted = append(rep.GroupsDeleted, groups...)
	if err := deleteTopics(ctx, client, keep); err != nil {
		return nil, fmt.Errorf("wipe %s: %w", stale, err)
	}
	rep.TopicsDeleted = append(rep.TopicsDeleted, keep...)
	for _, t := range keep {
		if err := waitTopic(ctx, client, t, false); err != nil {
			return nil, fmt.Errorf("wipe %s: %w", stale, err)
		}
	}
	if err := forgetProgress(ctx, topo, stale, active); err != nil {
		return nil, fmt.Errorf("wipe %s: %w", stale, err)
	}
	return rep, nil
}

// wipeTargets are what a wipe of link's target deletes there: the selected
// (mirrored) topics and the link's internal topics that exist, and the
// selected groups and the link's own groups.
func wipeTargets(admin sarama.ClusterAdmin, topo *topology.Topology, link topology.Link) (topics, groups []string, err error) {
	topics, err = mirroredTopicNames(admin, topo)
	if err != nil {
		return nil, nil, fmt.Errorf("list topics: %w", err)
	}
	all, err := kafkaread.ListTopics(admin)
	if err != nil {
		return nil, nil, fmt.Errorf("list topics: %w", err)
	}
	for _, t := range link.InternalTopics() {
		if _, ok := all[t]; ok {
			topics = append(topics, t)
		}
	}
	listed, err := admin.ListConsumerGroups()
	if err != nil {
		return nil, nil, fmt.Errorf("list groups: %w", err)
	}
	for g := range listed {
		if topo.SyncsGroup(g) || g == link.ProgressGroup() || g == link.WorkersGroup() {
			groups = append(groups, g)
		}
	}
	slices.Sort(groups)
	return topics, groups, nil
}

// waitGroupsLeft returns once no group of groups has a member on the
// stale cluster. Members of a selected (application) group are consumers
// the operator or their deployment must move: they are waited for up to
// failover.clients.timeout, and then refused naming each one (group,
// client id, host). Members of the link's own groups are drctl mirror
// processes of link, stopped by the run's role state: they are waited for,
// up to MirrorStopTimeout. Nothing is deleted while either waits.
func waitGroupsLeft(ctx context.Context, admin sarama.ClusterAdmin, stale string, link topology.Link, groups []string, topo *topology.Topology, rc *plans.RunContext) error {
	own := link.InternalGroups()
	var stopping <-chan struct{}
	if rc != nil {
		stopping = rc.Stopping()
	}
	start := time.Now()
	for {
		descs, err := admin.DescribeConsumerGroups(groups)
		if err != nil {
			return fmt.Errorf("wipe %s: describe groups: %w", stale, err)
		}
		var mirrors *sarama.GroupDescription
		var apps []string
		for _, d := range descs {
			if len(d.Members) == 0 {
				continue
			}
			if slices.Contains(own, d.GroupId) {
				mirrors = d
				continue
			}
			apps = append(apps, membersOf(d)...)
		}
		waited := time.Since(start)
		switch {
		case mirrors == nil && len(apps) == 0:
			return nil
		case len(apps) > 0 && waited >= topo.Failover.ClientsTimeout:
			return fmt.Errorf("wipe %s: %d consumer(s) still in selected groups there after %v (failover.clients.timeout): %s; nothing was deleted: stop or move those consumers, then drctl resume",
				stale, len(apps), topo.Failover.ClientsTimeout.Round(time.Second), strings.Join(apps, "; "))
		case mirrors != nil && waited >= MirrorStopTimeout:
			return fmt.Errorf("wipe %s: group %s still has %d member(s) there after %v: a drctl mirror of %s still runs there although the role state stops it; stop it and resume", stale, mirrors.GroupId, len(mirrors.Members), MirrorStopTimeout, link)
		}
		if rc != nil {
			if len(apps) > 0 {
				rc.Progress(fmt.Sprintf("waiting %v of %v for %d consumer(s) to leave %s: %s; nothing deleted yet", waited.Round(time.Second), topo.Failover.ClientsTimeout.Round(time.Second), len(apps), stale, strings.Join(apps, "; ")), -1)
			} else {
				rc.Progress(fmt.Sprintf("waiting for the mirror of %s to stop on %s (%d member(s) in %s); nothing deleted yet", link, stale, len(mirrors.Members), mirrors.GroupId), -1)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wipe %s: waiting for group members to leave: %w", stale, ctx.Err())
		case <-stopping:
			return fmt.Errorf("%w: stopped waiting for group members to leave %s, nothing deleted (drctl resume waits again)", plans.ErrInterrupted, stale)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// membersOf names each member of a group as an operator finds it: the
// group, the client id and the host it connects from.
func membersOf(d *sarama.GroupDescription) []string {
	var out []string
	for _, m := range d.Members {
		out = append(out, fmt.Sprintf("group %s: client %s on %s", d.GroupId, orUnknown(m.ClientId), orUnknown(strings.TrimPrefix(m.ClientHost, "/"))))
	}
	slices.Sort(out)
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// forgetProgress deletes, on the active cluster, the progress of the old
// link stale -> active once the stale cluster's topics are gone: it
// describes topics that no longer exist. Kept, it would tell a later
// salvage of the rebuilt cluster that records at those offsets were
// mirrored, and records written there since (a producer that recreated
// a topic) would be wiped unsalvaged. The link is fenced and its
// direction retired by then; a future mirror of that direction starts
// from a wiped, re-seeded cluster.
func forgetProgress(ctx context.Context, topo *topology.Topology, stale, active string) error {
	client, err := kafkaconn.Dial(ctx, topo.Clusters[active], nil)
	if err != nil {
		return err
	}
	defer client.Close()
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return fmt.Errorf("%s: %w", active, err)
	}
	g := topo.Link(stale, active).ProgressGroup()
	if err := admin.DeleteConsumerGroup(g); err != nil && !errors.Is(err, sarama.ErrGroupIDNotFound) {
		return fmt.Errorf("%s: forget the progress of the retired link (delete group %s): %w", active, g, err)
	}
	return nil
}

// partitionEnds reads the log start and last stable offsets of every
// partition of tps, one request per leader broker each, retrying a
// transient failure (a leader that moved) with fresh metadata. A
// partition missing from an answer is an error, never "empty".
func partitionEnds(ctx context.Context, client sarama.Client, tps []topology.TopicPartition) (starts, stable map[topology.TopicPartition]int64, err error) {
	err = kafkaread.Do(ctx, kafkaread.Brief, func(attempt int) error {
		if attempt > 0 {
			topics := map[string]bool{}
			for _, tp := range tps {
				topics[tp.Topic] = true
			}
			_ = client.RefreshMetadata(slices.Collect(maps.Keys(topics))...)
		}
		var err error
		if starts, err = kafkaread.StartOffsets(ctx, client, tps); err != nil {
			return fmt.Errorf("log start offsets: %w", err)
		}
		if stable, err = kafkaread.StableOffsets(ctx, client, tps); err != nil {
			return fmt.Errorf("last stable offsets: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for _, tp := range tps {
		_, okStart := starts[tp]
		_, okStable := stable[tp]
		if !okStart || !okStable {
			return nil, nil, fmt.Errorf("%s: no offsets in the answer", tp)
		}
	}
	return starts, stable, nil
}

// waitTopic waits until the topic exists with leaders (exists) or is gone.
func waitTopic(ctx context.Context, client sarama.Client, topic string, exists bool) error {
	for {
		info, err := kafkaread.Topic(ctx, client, topic)
		if err == nil && info.Exists == exists {
			return nil
		}
		select {
		case <-ctx.Done():
			state := "gone"
			if exists {
				state = "ready"
			}
			return fmt.Errorf("topic %s is not %s: %w", topic, state, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
