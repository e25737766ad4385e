package linkstate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// ReshardResult says what Reshard did.
type ReshardResult struct {
	Link string `json:"link" yaml:"link"`
	// From and To are the shard counts before and after; equal when there
	// was nothing to do.
	From int32 `json:"from" yaml:"from"`
	To   int32 `json:"to" yaml:"to"`
	// Fenced is how many transactional ids were initialised (every id any
	// earlier count used, and the new ones).
	Fenced int `json:"fenced_ids" yaml:"fenced_ids"`
}

// ErrLinkRunning: Reshard found mirror processes of the link running.
var ErrLinkRunning = errors.New("mirror processes of the link are running")

// ErrNeverRan: Reshard found no shards topic: the link never ran on its
// target, and its first run sets the count.
var ErrNeverRan = errors.New("the link has not run on its target")

// Reshard changes the shard count of link to n while none of its mirror
// processes runs. The copy then goes on from the exact progress every
// partition reached: the progress group and the offset map are kept per
// source partition, not per shard, so a partition that moves to another
// shard resumes where its old shard committed.
//
// Every source partition must be written under one transactional id at a
// time, and a new count maps partitions to other ids. So Reshard first
// refuses while the link's worker group has members, then records the new
// count (the partition count of the shards topic: partitions added to grow
// it, the topic created again to shrink it), and only then initialises
// every transactional id any count of the link used, which aborts an open
// transaction and fences its holder. A process that initialised an id
// before that is fenced; one that does after reads the new count right
// after its initialisation (the mirror shard's open) and stops without
// writing. The offset map never loses partitions (a shard writes partition
// id modulo their count) and grows with the count, so its partition count
// is the largest count the link ever had: the ids Fence must fence.
//
// A shrink also writes a tombstone into the ends topic for each shard that
// no longer exists, so that status stops showing what those shards saw.
func Reshard(ctx context.Context, clusters *kafkaconn.Clusters, link topology.Link, n int32) (ReshardResult, error) {
	topo := clusters.Topology()
	res := ReshardResult{Link: link.String(), To: n}
	c := topo.Clusters[link.Target]
	if c == nil {
		return res, fmt.Errorf("reshard %s: no cluster %q in topology %s", link, link.Target, topo.Name)
	}
	if n < 1 {
		return res, fmt.Errorf("reshard %s: %d shards: use 1 or more", link, n)
	}
	clusters.Connect(ctx, link.Target)
	dst, err := clusters.Need(link.Target)
	if err != nil {
		return res, fmt.Errorf("target %s: %w", link.Target, err)
	}
	shards, err := kafkaread.Topic(ctx, dst, link.ShardsTopic())
	if err != nil {
		return res, fmt.Errorf("target %s: %w", link.Target, err)
	}
	if !shards.Exists {
		return res, fmt.Errorf("%w: no %s on %s; its first drctl mirror run --shards %d sets the count", ErrNeverRan, link.ShardsTopic(), link.Target, n)
	}
	res.From = int32(shards.Partitions)
	admin, err := sarama.NewClusterAdminFromClient(dst)
	if err != nil {
		return res, fmt.Errorf("target %s: admin: %w", link.Target, err)
	}
	if err := noWorkers(admin, link); err != nil {
		if res.From == n && errors.Is(err, ErrLinkRunning) {
			return res, nil // its processes run with this count: nothing to do
		}
		return res, err
	}
	offsets, err := kafkaread.Topic(ctx, dst, link.OffsetsTopic())
	if err != nil {
		return res, fmt.Errorf("target %s: %w", link.Target, err)
	}
	if res.From == n {
		// Nothing to change, and no process runs: fence every id all the
		// same, which completes a reshard that failed after recording the
		// count (its error asks for this rerun).
		return fenceReshard(c, link, res, int32(offsets.Partitions))
	}
	if n > int32(offsets.Partitions) {
		if err := admin.CreatePartitions(link.OffsetsTopic(), n, nil, false); err != nil {
			return res, fmt.Errorf("target %s: grow %s to %d partitions: %w; the link keeps %d shards", link.Target, link.OffsetsTopic(), n, err, res.From)
		}
	}
	if n > res.From {
		err = admin.CreatePartitions(link.ShardsTopic(), n, nil, false)
	} else {
		err = recreateShardsTopic(ctx, dst, admin, link, n)
	}
	if err != nil {
		return res, fmt.Errorf("target %s: %w; the link keeps %d shards", link.Target, err, res.From)
	}
	if err := awaitShardCount(ctx, dst, link, n, n > res.From); err != nil {
		return res, fmt.Errorf("target %s: %w", link.Target, err)
	}
	return fenceReshard(c, link, res, max(res.From, int32(offsets.Partitions)))
}

// fenceReshard initialises the transactional ids of every shard below
// max(used, res.To), then writes the ends topic's tombstones of the shards
// above res.To.
func fenceReshard(c *topology.Cluster, link topology.Link, res ReshardResult, used int32) (ReshardResult, error) {
	n := res.To
	for id := range max(used, n) {
		if err := fenceID(c, link.TransactionalID(id)); err != nil {
			return res, fmt.Errorf("target %s: fence shard %d: %w; the link now has %d shards: run drctl mirror reshard --shards %d again before starting the mirror",
				link.Target, id, err, n, n)
		}
		res.Fenced++
	}
	if used > n {
		if err := forgetShardEnds(c, link, n, used); err != nil {
			return res, fmt.Errorf("target %s: %w (only status is affected: it may show what shards %d to %d last saw)", link.Target, err, n, used-1)
		}
	}
	return res, nil
}

// noWorkers returns ErrLinkRunning, naming the members' hosts, when the
// link's worker group has members.
func noWorkers(admin sarama.ClusterAdmin, link topology.Link) error {
	descs, err := admin.DescribeConsumerGroups([]string{link.WorkersGroup()})
	if err != nil {
		return fmt.Errorf("target %s: describe %s: %w", link.Target, link.WorkersGroup(), err)
	}
	var hosts []string
	for _, d := range descs {
		for _, m := range d.Members {
			hosts = append(hosts, strings.TrimPrefix(m.ClientHost, "/"))
		}
	}
	if len(hosts) == 0 {
		return nil
	}
	slices.Sort(hosts)
	return fmt.Errorf("%w: %d in group %s on %s (from %s): stop every drctl mirror run of the link (a killed one leaves the group after its session timeout, 10s by default) and run reshard again; nothing was changed",
		ErrLinkRunning, len(hosts), link.WorkersGroup(), link.Target, strings.Join(slices.Compact(hosts), ", "))
}

// recreateShardsTopic deletes the shards topic and creates it again with
// n partitions: a topic cannot lose partitions. A mirror process started
// meanwhile with an explicit --shards may create it first, with its own
// count; awaitShardCount then tells.
func recreateShardsTopic(ctx context.Context, dst sarama.Client, admin sarama.ClusterAdmin, link topology.Link, n int32) error {
	if err := admin.DeleteTopic(link.ShardsTopic()); err != nil && !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		return fmt.Errorf("delete %s: %w", link.ShardsTopic(), err)
	}
	if err := waitTopicGone(ctx, dst, link.ShardsTopic()); err != nil {
		return err
	}
	return kafkaread.EnsureTopics(ctx, dst, topology.ExpiringTopic(link.ShardsTopic(), n, time.Hour))
}

// awaitShardCount waits until the target's metadata shows the shards topic
// with n partitions, and fails at once when it shows another count (more
// than n, when partitions were added to grow it).
func awaitShardCount(ctx context.Context, dst sarama.Client, link topology.Link, n int32, grown bool) error {
	if err := kafkaread.AwaitLeaders(ctx, dst, 30*time.Second, link.ShardsTopic()); err != nil {
		return err
	}
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		info, err := kafkaread.Topic(wait, dst, link.ShardsTopic())
		switch {
		case err == nil && int32(info.Partitions) == n:
			return nil
		case err == nil && info.Exists && (int32(info.Partitions) > n || !grown):
			// Partitions added may show a moment late; a topic created
			// shows all of its partitions at once.
			return fmt.Errorf("%s has %d partitions, not %d: a drctl mirror run with --shards %d created it meanwhile; stop it and run reshard again",
				link.ShardsTopic(), info.Partitions, n, info.Partitions)
		}
		if kafkaread.Sleep(wait, 100*time.Millisecond) != nil {
			return fmt.Errorf("%s does not show %d partitions: %w", link.ShardsTopic(), n, wait.Err())
		}
	}
}

// forgetShardEnds writes a tombstone into the ends topic for each of the
// shards from to below.
func forgetShardEnds(c *topology.Cluster, link topology.Link, from, below int32) error {
	prod, err := plainProducer(c)
	if err != nil {
		return err
	}
	defer prod.Close()
	var msgs []*sarama.ProducerMessage
	for id := from; id < below; id++ {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: link.EndsTopic(), Partition: 0, Key: sarama.StringEncoder(strconv.Itoa(int(id)))})
	}
	return prod.SendMessages(msgs)
}
