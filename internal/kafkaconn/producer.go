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

// MaxProducerBytes is the most a copying producer is ever sized for
// (Producer.MaxMessageBytes): sarama builds requests of at most 100 MB.
const MaxProducerBytes = 64 << 20

// CopyProducer sets cfg up for a producer that copies records, or that
// initialises the transactional id of one (a fence): the idempotent preset,
// each record in the partition its message names, and batching sized for
// copying. The mirror's shards and group sync, the fence of a link and the
// copy of a topic all start from it.
func CopyProducer(cfg *sarama.Config) {
	IdempotentProducer(cfg)
	ManualPartitions(cfg)
	// sarama sizes a request by it: keep it within the brokers' default
	// message.max.bytes (1 MiB) or every batch is refused as too large.
	cfg.Producer.MaxMessageBytes = 1000000
	cfg.Producer.Compression = sarama.CompressionNone
	cfg.Producer.Flush.Bytes = 1 << 20
	cfg.Producer.Flush.Frequency = 2 * time.Millisecond
	// sarama gives each target partition a channel of this many records:
	// 4096 cost 32 KiB per partition, 28 MB of a 1,000-partition mirror's
	// live heap (the profile in bench/results/diary.md). Records wait in the
	// mirror shard's buffer, under the engine's budget, instead.
	cfg.ChannelBufferSize = 256
}
