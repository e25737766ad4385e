package kafkaread

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/testkit/kfakefault"
)

// TestAnAnswerListingNoBrokerIsTransient: Topic must not pass on a
// metadata answer that lists no broker (its callers would open a producer
// on no address: sarama refuses that as a configuration error, which no
// retry loop retries, and the failover's rollback gave up restoring the
// roles so in CI). It is a transient error, and the next answer counts.
func TestAnAnswerListingNoBrokerIsTransient(t *testing.T) {
	c, client := newCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kfakefault.NoLiveBroker(c, 1)
	_, err := Topic(ctx, client, topic)
	if err == nil {
		t.Fatal("Topic accepted a metadata answer that lists no broker")
	}
	if !Retriable(err) || !strings.Contains(err.Error(), "no live broker") {
		t.Fatalf("error %q (class %s), want a transient error that says the cluster lists no live broker", err, Classify(err))
	}
	info, err := Topic(ctx, client, topic)
	if err != nil || !info.Exists || len(info.Brokers) != 1 || info.Leaders[0] < 0 {
		t.Fatalf("the next answer: %+v, %v; want the topic with its broker and leader", info, err)
	}
	if _, err := TopicIDs(ctx, client, []string{topic}); err != nil {
		t.Fatalf("TopicIDs after the cluster lists its broker again: %v", err)
	}
	kfakefault.NoLiveBroker(c, 1)
	if _, err := TopicIDs(ctx, client, []string{topic}); !Retriable(err) {
		t.Fatalf("TopicIDs on an answer listing no broker: %v, want a transient error", err)
	}
}
