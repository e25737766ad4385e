package drilllease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// ErrLocked means another holder has the lease; the message names it.
var ErrLocked = errors.New("held by another drctl")

// NewHolder returns a name for this process that no other process uses:
// "host/pid/random", the form DeadHere understands.
func NewHolder() string {
	host, _ := os.Hostname()
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s-%s", host, os.Getpid(), time.Now().UTC().Format("20060102T150405"), hex.EncodeToString(b[:]))
}

// Take appends cl (a claim of cl.Key by cl.Holder until cl.Expires) to the
// locks topic of cluster (client c) and folds the log up to it. The claim
// wins, or Take returns an error wrapping ErrLocked that names the owner.
// Every contender reads the same prefix of the same log, so exactly one of
// concurrent contenders wins; the holder's own later claim renews its lease.
func Take(ctx context.Context, c sarama.Client, cluster *topology.Cluster, cl Claim) error {
	off, err := appendClaim(ctx, c, cluster, cl)
	if err != nil {
		return err
	}
	owner, err := Owner(ctx, c, cl.Key, off)
	if err != nil {
		return err
	}
	if owner == nil || owner.Holder != cl.Holder {
		if owner != nil {
			return fmt.Errorf("%w: %s holds %s since %s (until %s at the latest)", ErrLocked, owner.Holder, cl.Key, owner.At.Format(time.RFC3339), owner.Expires.Format(time.RFC3339))
		}
		return fmt.Errorf("%w: %s", ErrLocked, cl.Key)
	}
	return nil
}

// Give ends holder's lease of key (best effort: an unreleased lease
// expires).
func Give(ctx context.Context, c sarama.Client, cluster *topology.Cluster, key, holder, what string) error {
	now := time.Now().UTC()
	_, err := appendClaim(ctx, c, cluster, Claim{Key: key, Holder: holder, Drill: what, Release: true, At: now, Expires: now})
	return err
}

func appendClaim(ctx context.Context, c sarama.Client, cluster *topology.Cluster, cl Claim) (int64, error) {
	if err := ensureTopic(ctx, c); err != nil {
		return 0, err
	}
	p, err := kafkaconn.NewSyncProducer(cluster, kafkaconn.ManualPartitions)
	if err != nil {
		return 0, kafkaconn.Explain(cluster, err)
	}
	defer p.Close()
	raw, _ := json.Marshal(cl)
	_, off, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.StringEncoder(cl.Key), Value: sarama.ByteEncoder(raw)})
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", topic, err)
	}
	return off, nil
}

func ensureTopic(ctx context.Context, c sarama.Client) error {
	return kafkaread.EnsureTopics(ctx, c, topology.ExpiringTopic(topic, 1, topology.DrillLocksRetention))
}
