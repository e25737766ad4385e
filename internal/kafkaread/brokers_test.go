package kafkaread

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/topology"
)

// slowBrokers is a three-broker cluster whose brokers each answer a
// request of key after delay, and the partitions of a topic led by two
// or more of them.
func slowBrokers(t *testing.T, key kmsg.Key, delay time.Duration) (sarama.Client, []topology.TopicPartition) {
	t.Helper()
	c, client := kfakeClient(t, kfake.NumBrokers(3), kfake.SeedTopics(12, "spread"))
	var tps []topology.TopicPartition
	leaders := map[int32]bool{}
	for p := range int32(12) {
		b, err := client.Leader("spread", p)
		if err != nil {
			t.Fatal(err)
		}
		leaders[b.ID()] = true
		tps = append(tps, topology.TopicPartition{Topic: "spread", Partition: p})
	}
	if len(leaders) < 2 {
		t.Fatalf("the partitions are led by %d broker(s), want 2 or more", len(leaders))
	}
	c.ControlKey(int16(key), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		c.SleepControl(func() { time.Sleep(delay) }) // yields to the other brokers' requests
		return nil, nil, false
	})
	return client, tps
}

// TestEndsAskTheBrokersAtOnce: the ends of partitions led by several brokers
// come back after the slowest broker's answer, not after their answers
// one after the other (what drctl status and drctl mirror lag wait for at
// thousands of partitions).
func TestEndsAskTheBrokersAtOnce(t *testing.T) {
	const delay = 300 * time.Millisecond
	client, tps := slowBrokers(t, kmsg.ListOffsets, delay)
	start := time.Now()
	ends, err := StableOffsets(context.Background(), client, tps)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if len(ends) != len(tps) {
		t.Fatalf("%d ends for %d partitions", len(ends), len(tps))
	}
	if took >= 2*delay {
		t.Fatalf("the ends of partitions on several brokers that each answer after %v took %v: the brokers were asked one after another", delay, took)
	}
}

// TestFirstTimestampsReadTheBrokersAtOnce: the same for the first records
// behind a lag.
func TestFirstTimestampsReadTheBrokersAtOnce(t *testing.T) {
	const delay = 300 * time.Millisecond
	client, tps := slowBrokers(t, kmsg.Fetch, delay)
	from, end := map[topology.TopicPartition]int64{}, map[topology.TopicPartition]int64{}
	for _, tp := range tps {
		from[tp], end[tp] = 0, 1
	}
	start := time.Now()
	if _, err := FirstTimestamps(context.Background(), client, from, end); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took >= 2*delay {
		t.Fatalf("the first records of partitions on several brokers that each answer after %v took %v: the brokers were read one after another", delay, took)
	}
}
