package drill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/drilllease"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// locksTopic holds the drills' claims and leases (see internal/drilllease).
const locksTopic = topology.DrillLocksTopic

// locksRetention bounds the claims kept; a lease lives far shorter.
const locksRetention = 24 * time.Hour

// claim is one record of the locks topic.
type claim = drilllease.Claim

// Lock is a lease of the locks topic on the topology's home active cluster.
//
// How it decides: a contender appends its claim and reads the partition up
// to that claim; folding the claims of the key in log order, the owner is
// the first claim after the last release or expiry of the owner before it.
// Every contender reads the same prefix of the same log, so they agree, and
// exactly one of concurrent contenders wins. No clock decides between
// contenders; clocks only end leases whose holder died.
type Lock struct {
	topo   *topology.Topology
	Key    string
	Holder string
	// Drill names what holds the lease, for whoever it refuses.
	Drill string
}

// ErrLocked means another holder has the lease; the message names it.
var ErrLocked = errors.New("held by another drctl")

// NewHolder returns a name for this process that no other process uses.
func NewHolder() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), newDrillID("x")[len("drill-x-"):])
}

// Acquire takes the lease of key for ttl, or returns an error wrapping
// ErrLocked that names the holder.
func Acquire(ctx context.Context, topo *topology.Topology, key, holder string, ttl time.Duration) (*Lock, error) {
	return AcquireFor(ctx, topo, key, holder, "", ttl)
}

// AcquireFor is Acquire with a description of what holds the lease ("drill
// NAME (ID)"), which a refused failover names.
func AcquireFor(ctx context.Context, topo *topology.Topology, key, holder, what string, ttl time.Duration) (*Lock, error) {
	c, err := kafkaconn.Dial(ctx, topo.Clusters[topo.Active], nil)
	if err != nil {
		return nil, fmt.Errorf("drill lock on %s: %w", topo.Active, err)
	}
	defer c.Close()
	now := time.Now().UTC()
	mine := claim{Key: key, Holder: holder, Drill: what, At: now, Expires: now.Add(ttl)}
	off, err := appendClaim(ctx, c, topo.Clusters[topo.Active], mine)
	if err != nil {
		return nil, err
	}
	owner, err := ownerAt(ctx, c, key, off)
	if err != nil {
		return nil, err
	}
	if owner == nil || owner.Holder != holder {
		if owner != nil {
			return nil, fmt.Errorf("%w: %s holds %s since %s (until %s at the latest)", ErrLocked, owner.Holder, key, owner.At.Format(time.RFC3339), owner.Expires.Format(time.RFC3339))
		}
		return nil, fmt.Errorf("%w: %s", ErrLocked, key)
	}
	return &Lock{topo: topo, Key: key, Holder: holder, Drill: what}, nil
}

// Release ends the lease (best effort: an unreleased lease expires).
func (l *Lock) Release(ctx context.Context) error {
	c, err := kafkaconn.Dial(ctx, l.topo.Clusters[l.topo.Active], nil)
	if err != nil {
		return err
	}
	defer c.Close()
	now := time.Now().UTC()
	_, err = appendClaim(ctx, c, l.topo.Clusters[l.topo.Active], claim{Key: l.Key, Holder: l.Holder, Drill: l.Drill, Release: true, At: now, Expires: now})
	return err
}

// ownerAt folds the claims of key up to and including offset upto.
func ownerAt(ctx context.Context, c sarama.Client, key string, upto int64) (*claim, error) {
	return drilllease.Owner(ctx, c, key, upto)
}

func appendClaim(ctx context.Context, c sarama.Client, cluster *topology.Cluster, cl claim) (int64, error) {
	if err := ensureLocksTopic(ctx, c); err != nil {
		return 0, err
	}
	cfg, err := cluster.SaramaConfig()
	if err != nil {
		return 0, err
	}
	cfg.Producer.Return.Successes = true
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	p, err := sarama.NewSyncProducer(cluster.Bootstrap, cfg)
	if err != nil {
		return 0, kafkaconn.Explain(cluster, err)
	}
	defer p.Close()
	raw, _ := json.Marshal(cl)
	_, off, err := p.SendMessage(&sarama.ProducerMessage{Topic: locksTopic, Partition: 0, Key: sarama.StringEncoder(cl.Key), Value: sarama.ByteEncoder(raw)})
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", locksTopic, err)
	}
	return off, nil
}

func ensureLocksTopic(ctx context.Context, c sarama.Client) error {
	info, err := kafkaread.Topic(ctx, c, locksTopic)
	if err != nil {
		return err
	}
	if info.Exists {
		return nil
	}
	admin, err := sarama.NewClusterAdminFromClient(c)
	if err != nil {
		return err
	}
	rf := int16(min(3, max(1, len(c.Brokers()))))
	ret, del := strconv.FormatInt(locksRetention.Milliseconds(), 10), "delete"
	err = admin.CreateTopic(locksTopic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: rf,
		ConfigEntries: map[string]*string{"retention.ms": &ret, "cleanup.policy": &del}}, false)
	if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		return fmt.Errorf("create %s: %w", locksTopic, err)
	}
	_, err = kafkaread.Await(ctx, func() (struct{}, error) {
		if err := c.RefreshMetadata(locksTopic); err != nil {
			return struct{}{}, err
		}
		_, err := c.Leader(locksTopic, 0)
		return struct{}{}, err
	})
	return err
}
