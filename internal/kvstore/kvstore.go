package kvstore

import (
	"context"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// Put writes value under key in topic, creating the topic (one partition,
// compacted) when it is missing.
func Put(ctx context.Context, client sarama.Client, topic, key string, value []byte) error {
	if err := ensure(ctx, client, topic); err != nil {
		return err
	}
	cfg := *client.Config()
	kafkaconn.IdempotentProducer(&cfg)
	kafkaconn.ManualPartitions(&cfg)
	cfg.Producer.Transaction.ID = ""
	p, err := sarama.NewSyncProducer(brokerAddrs(client), &cfg)
	if err != nil {
		return fmt.Errorf("write %s: %w", topic, err)
	}
	// The producer is closed by the goroutine once its send returns: closing
	// it while the send is in flight (ctx ended first) makes sarama panic
	// (send on closed channel). The send is bounded by the producer's own
	// retries and timeouts.
	done := make(chan error, 1)
	go func() {
		_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.StringEncoder(key), Value: sarama.ByteEncoder(value)})
		_ = p.Close()
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("write %s/%s: %w", topic, key, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("write %s/%s: %w", topic, key, ctx.Err())
	}
}

// PutWith is Put through p, a producer of the cluster behind client that
// the caller keeps (kafkaconn.Clusters.Producer): a writer of many records
// opens no producer per record. p must write each record to the partition
// it names (manual partitions).
func PutWith(ctx context.Context, client sarama.Client, p sarama.SyncProducer, topic, key string, value []byte) error {
	if err := ensure(ctx, client, topic); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.StringEncoder(key), Value: sarama.ByteEncoder(value)})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("write %s/%s: %w", topic, key, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("write %s/%s: %w", topic, key, ctx.Err())
	}
}

// Get returns the latest value of key in topic; found is false when the
// topic or the key does not exist.
func Get(ctx context.Context, client sarama.Client, topic, key string) (value []byte, found bool, err error) {
	value, _, found, err = GetAt(ctx, client, topic, key)
	return value, found, err
}

// GetAt is Get with the time the value was written (its record's
// timestamp).
func GetAt(ctx context.Context, client sarama.Client, topic, key string) (value []byte, at time.Time, found bool, err error) {
	info, err := kafkaread.Topic(ctx, client, topic)
	if err != nil {
		return nil, time.Time{}, false, fmt.Errorf("read %s: %w", topic, err)
	}
	if !info.Exists {
		return nil, time.Time{}, false, nil
	}
	_, err = kafkaread.ReadCommitted(ctx, client, topic, 0, 0, func(r kafkaread.Record) error {
		if string(r.Key) == key {
			value, at, found = r.Value, r.Timestamp, true
		}
		return nil
	})
	if err != nil {
		return nil, time.Time{}, false, fmt.Errorf("read %s: %w", topic, err)
	}
	return value, at, found, nil
}

func ensure(ctx context.Context, client sarama.Client, topic string) error {
	if err := kafkaread.EnsureTopics(ctx, client, topology.KeyedTopic(topic, 0)); err != nil {
		return fmt.Errorf("create %s: %w", topic, err)
	}
	return nil
}

func brokerAddrs(client sarama.Client) []string {
	var out []string
	for _, b := range client.Brokers() {
		out = append(out, b.Addr())
	}
	return out
}

// All returns the latest value of every key in topic (keys whose latest
// record is empty are left out); an empty map when the topic does not
// exist.
func All(ctx context.Context, client sarama.Client, topic string) (map[string][]byte, error) {
	out := map[string][]byte{}
	info, err := kafkaread.Topic(ctx, client, topic)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", topic, err)
	}
	if !info.Exists {
		return out, nil
	}
	_, err = kafkaread.ReadCommitted(ctx, client, topic, 0, 0, func(r kafkaread.Record) error {
		if len(r.Value) == 0 {
			delete(out, string(r.Key))
		} else {
			out[string(r.Key)] = r.Value
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", topic, err)
	}
	return out, nil
}
