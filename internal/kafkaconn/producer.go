package kafkaconn

import (
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/topology"
)

// The retry budget of every producer drctl opens: a produce request that
// fails with a retriable error (leader moved, not enough replicas, a
// broker restarting) is retried up to ProducerRetries times,
// ProducerRetryBackoff apart, so a producer rides out about a second of
// leader election before it reports the error. Callers bound the whole
// write with their own context; the budget only decides how long sarama
// keeps trying on its own.
const (
	ProducerRetries      = 10
	ProducerRetryBackoff = 100 * time.Millisecond
)

// IdempotentProducer sets cfg up for an idempotent producer, the only kind
// drctl writes with: every write is acknowledged by all in-sync replicas,
// retried within the budget above without duplicates, and returns its
// offset (Return.Successes). sarama's idempotence needs one request in
// flight per broker connection (Net.MaxOpenRequests = 1).
//
// The partitioner and transactional settings are left to the caller:
// drctl's own bookkeeping names each record's partition
// (sarama.NewManualPartitioner), keyed records may be hashed, and a
// transactional producer adds its Transaction.ID on top of this preset.
func IdempotentProducer(cfg *sarama.Config) {
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.Retry.Max = ProducerRetries
	cfg.Producer.Retry.Backoff = ProducerRetryBackoff
}

// NewSyncProducer opens an idempotent producer (IdempotentProducer) on
// cluster c; tune (may be nil) adjusts the configuration last, for the
// partitioner or a transactional id.
func NewSyncProducer(c *topology.Cluster, tune func(*sarama.Config)) (sarama.SyncProducer, error) {
	cfg, err := c.SaramaConfig()
	if err != nil {
		return nil, err
	}
	IdempotentProducer(cfg)
	if tune != nil {
		tune(cfg)
	}
	return sarama.NewSyncProducer(c.Bootstrap, cfg)
}

// ManualPartitions makes a producer write each record to the partition
// its message names. A tune function for NewSyncProducer.
func ManualPartitions(cfg *sarama.Config) { cfg.Producer.Partitioner = sarama.NewManualPartitioner }
