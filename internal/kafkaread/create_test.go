package kafkaread

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// countCreates counts the CreateTopics requests c receives and the topics
// each carries.
func countCreates(c *kfake.Cluster) *[]int {
	var sizes []int
	c.ControlKey(int16(kmsg.CreateTopics), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		sizes = append(sizes, len(r.(*kmsg.CreateTopicsRequest).Topics))
		return nil, nil, false
	})
	return &sizes
}

func TestCreateTopicsInOneRequest(t *testing.T) {
	c, client := kfakeClient(t, kfake.NumBrokers(3), kfake.SeedTopics(2, "exists"))
	sizes := countCreates(c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topics := map[string]*sarama.TopicDetail{
		"a":      {NumPartitions: 3, ReplicationFactor: 3},
		"b":      {NumPartitions: 1, ReplicationFactor: 1},
		"c":      {NumPartitions: 8, ReplicationFactor: 2},
		"exists": {NumPartitions: 5, ReplicationFactor: 1}, // created before: as good as ours
	}
	if err := CreateTopics(ctx, client, topics); err != nil {
		t.Fatalf("create: %v", err)
	}
	if len(*sizes) != 1 || (*sizes)[0] != 4 {
		t.Errorf("CreateTopics requests (topics in each): %v, want one request of 4", *sizes)
	}
	if err := AwaitLeaders(ctx, client, 10*time.Second, "a", "b", "c", "exists"); err != nil {
		t.Fatalf("await leaders: %v", err)
	}
	for name, want := range map[string]int{"a": 3, "b": 1, "c": 8, "exists": 2} {
		info, err := Topic(ctx, client, name)
		if err != nil || !info.Exists || info.Partitions != want {
			t.Errorf("topic %s: exists %v with %d partitions (err %v), want %d", name, info.Exists, info.Partitions, err, want)
		}
	}
}

func TestCreateTopicsAsksAMovedControllerAgain(t *testing.T) {
	c, client := kfakeClient(t, kfake.NumBrokers(3))
	var requests atomic.Int32
	c.ControlKey(int16(kmsg.CreateTopics), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if requests.Add(1) > 1 {
			return nil, nil, false
		}
		req := r.(*kmsg.CreateTopicsRequest)
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic, st.ErrorCode = rt.Topic, kerr.NotController.Code
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := CreateTopics(ctx, client, map[string]*sarama.TopicDetail{"x": {NumPartitions: 2, ReplicationFactor: 1}}); err != nil {
		t.Fatalf("create: %v", err)
	}
	if n := requests.Load(); n != 2 {
		t.Errorf("%d CreateTopics requests, want 2 (NOT_CONTROLLER, then the topic)", n)
	}
	if err := AwaitLeaders(ctx, client, 10*time.Second, "x"); err != nil {
		t.Fatalf("await leaders: %v", err)
	}
}

func TestCreateTopicsNamesTheTopicItCouldNotCreate(t *testing.T) {
	_, client := kfakeClient(t, kfake.NumBrokers(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := CreateTopics(ctx, client, map[string]*sarama.TopicDetail{
		"fine":     {NumPartitions: 1, ReplicationFactor: 1},
		"too-wide": {NumPartitions: 1, ReplicationFactor: 3}, // one broker
	})
	if err == nil || !strings.Contains(err.Error(), "too-wide") || strings.Contains(err.Error(), "fine") {
		t.Fatalf("err = %v, want one naming too-wide alone", err)
	}
	if info, err := Topic(ctx, client, "fine"); err != nil || !info.Exists {
		t.Errorf("the good topic of the request: exists %v (err %v), want created", info.Exists, err)
	}
}

func TestAwaitLeadersWaitsForEveryTopic(t *testing.T) {
	_, client := kfakeClient(t, kfake.NumBrokers(1), kfake.SeedTopics(1, "here"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := AwaitLeaders(ctx, client, 300*time.Millisecond, "here", "missing")
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("err = %v, want one naming the missing topic", err)
	}
	if err := AwaitLeaders(ctx, client, time.Second, "here"); err != nil {
		t.Fatalf("await a seeded topic: %v", err)
	}
}
