package groupsync

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/offsetcommit"
	"github.com/drctl/drctl/topology"
)

// The cluster side of group translation: reading committed offsets and
// group states, committing offsets. Every function takes the client of
// the cluster it talks to; none of them closes it.

// FetchCommitted returns every offset group has committed on the cluster
// behind client, with its metadata. A group that does not exist has none:
// real Kafka answers an empty list, kfake GROUP_ID_NOT_FOUND. Offsets of
// -1 ("no offset") are left out. With stable set, offsets committed by a
// transaction still being decided are waited for (KIP-447's
// require_stable), so a position an aborted transaction would have moved is
// never returned.
func FetchCommitted(ctx context.Context, client sarama.Client, group string, stable bool) (map[topology.TopicPartition]CommittedOffset, error) {
	var out map[topology.TopicPartition]CommittedOffset
	err := kafkaread.WithCoordinator(ctx, client, group, func(b *sarama.Broker) error {
		// No partitions named: the coordinator returns all of the group's.
		req := &sarama.OffsetFetchRequest{Version: 7, ConsumerGroup: group, RequireStable: stable}
		resp, err := kafkaread.Await(ctx, func() (*sarama.OffsetFetchResponse, error) { return b.FetchOffset(req) })
		if err != nil {
			return err
		}
		switch {
		case errors.Is(resp.Err, sarama.ErrNoError):
		case errors.Is(resp.Err, sarama.ErrGroupIDNotFound):
			out = map[topology.TopicPartition]CommittedOffset{}
			return nil
		default:
			return resp.Err
		}
		got := map[topology.TopicPartition]CommittedOffset{}
		for topic, parts := range resp.Blocks {
			for p, blk := range parts {
				switch {
				case errors.Is(blk.Err, sarama.ErrNoError):
				case errors.Is(blk.Err, sarama.ErrUnknownTopicOrPartition):
					continue
				default:
					return fmt.Errorf("%s/%d: %w", topic, p, blk.Err)
				}
				if blk.Offset >= 0 {
					got[topology.TopicPartition{Topic: topic, Partition: p}] = CommittedOffset{Offset: blk.Offset, Metadata: blk.Metadata}
				}
			}
		}
		out = got
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("committed offsets of group %s: %w", group, err)
	}
	return out, nil
}

// listGroups returns the groups of the cluster that topo's group sync
// handles (topology.Topology.SyncsGroup), sorted.
func listGroups(ctx context.Context, admin sarama.ClusterAdmin, topo *topology.Topology) ([]string, error) {
	all, err := kafkaread.Await(ctx, admin.ListConsumerGroups)
	if err != nil {
		return nil, fmt.Errorf("list consumer groups: %w", err)
	}
	var out []string
	for g := range all {
		if topo.SyncsGroup(g) {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out, nil
}

// describeGroups returns what the cluster's coordinators say of groups.
// A group the cluster does not know is absent (Exists false).
func describeGroups(ctx context.Context, admin sarama.ClusterAdmin, groups []string) (map[string]StandbyGroup, error) {
	out := make(map[string]StandbyGroup, len(groups))
	if len(groups) == 0 {
		return out, nil
	}
	descs, err := kafkaread.Await(ctx, func() ([]*sarama.GroupDescription, error) { return admin.DescribeConsumerGroups(groups) })
	if err != nil {
		return nil, fmt.Errorf("describe consumer groups: %w", err)
	}
	for _, d := range descs {
		switch {
		case errors.Is(d.Err, sarama.ErrGroupIDNotFound), d.State == "Dead":
			out[d.GroupId] = StandbyGroup{}
		case !errors.Is(d.Err, sarama.ErrNoError):
			return nil, fmt.Errorf("describe consumer group %s: %w", d.GroupId, d.Err)
		default:
			out[d.GroupId] = StandbyGroup{Exists: true, State: d.State, Members: len(d.Members)}
		}
	}
	for _, g := range groups {
		if _, ok := out[g]; !ok {
			return nil, fmt.Errorf("describe consumer group %s: no answer for it", g)
		}
	}
	return out, nil
}

// memberErrors are the answers of a coordinator to an admin commit (no
// member, generation -1) for a group that has members: Kafka itself never
// lets such a commit through.
var memberErrors = []sarama.KError{
	sarama.ErrUnknownMemberId, sarama.ErrIllegalGeneration, sarama.ErrRebalanceInProgress,
	sarama.ErrFencedInstancedId,
	sarama.KError(110), // FENCED_MEMBER_EPOCH (KIP-848 groups; sarama has no name for it)
	sarama.KError(113), // STALE_MEMBER_EPOCH (KIP-848)
}

// CommitOffsets commits changes for group as an admin tool does: no member
// id and generation -1, which a coordinator accepts only while the group
// has no members. A refusal because members joined is an error wrapping
// ErrGroupActive; other per-partition errors are joined, each naming its
// partition. Leader epochs are committed as unknown (-1), so consumers
// skip the truncation check that an epoch from the other cluster would
// trip.
//
// A large commit is sent in several requests in the order of changes, each
// small enough for the coordinator to write (internal/offsetcommit); each
// partition's offset is a translation of its own, so a group whose
// requests stop part way holds some partitions at their new offsets and
// the rest at their old ones, and the error says how many were committed.
func CommitOffsets(ctx context.Context, client sarama.Client, group string, changes []OffsetChange) error {
	chunks := offsetcommit.Chunks(len(changes), func(i int) int {
		return offsetcommit.RecordBytes(group, changes[i].Topic, len(changes[i].Metadata))
	}, offsetcommit.MaxBytes)
	for _, ch := range chunks {
		if err := commitOffsets(ctx, client, group, changes[ch[0]:ch[1]]); err != nil {
			if ch[0] > 0 {
				err = fmt.Errorf("%w (%d of the group's %d partitions were committed, in the requests before; the rest keep their offsets)", err, ch[0], len(changes))
			}
			return fmt.Errorf("commit offsets of group %s: %w", group, err)
		}
	}
	return nil
}

// commitOffsets commits changes in one request.
func commitOffsets(ctx context.Context, client sarama.Client, group string, changes []OffsetChange) error {
	req := &sarama.OffsetCommitRequest{Version: 7, ConsumerGroup: group, ConsumerGroupGeneration: -1}
	for _, c := range changes {
		req.AddBlockWithLeaderEpoch(c.Topic, c.Partition, c.After, -1, 0, c.Metadata)
	}
	return kafkaread.WithCoordinator(ctx, client, group, func(b *sarama.Broker) error {
		resp, err := kafkaread.Await(ctx, func() (*sarama.OffsetCommitResponse, error) { return b.CommitOffset(req) })
		if err != nil {
			return err
		}
		var errs []error
		for topic, parts := range resp.Errors {
			for p, kerr := range parts {
				switch {
				case errors.Is(kerr, sarama.ErrNoError):
				case slices.Contains(memberErrors, kerr):
					return fmt.Errorf("%w: the coordinator refused the commit: %v", ErrGroupActive, kerr)
				case kafkaread.Retriable(kerr):
					return kerr // the whole request is retried
				default:
					errs = append(errs, fmt.Errorf("%s/%d: %w", topic, p, kerr))
				}
			}
		}
		return errors.Join(errs...)
	})
}

// stableEnds returns the last stable offset of each partition that exists
// on the cluster; partitions it cannot measure are absent.
func stableEnds(ctx context.Context, client sarama.Client, tps []topology.TopicPartition) map[topology.TopicPartition]int64 {
	if len(tps) == 0 {
		return map[topology.TopicPartition]int64{}
	}
	if ends, err := kafkaread.StableOffsets(ctx, client, tps); err == nil {
		return ends
	}
	// Some partition is missing or leaderless: measure one by one.
	out := map[topology.TopicPartition]int64{}
	for _, tp := range tps {
		if lso, err := kafkaread.LastStableOffset(ctx, client, tp.Topic, tp.Partition); err == nil {
			out[tp] = lso
		}
	}
	return out
}
