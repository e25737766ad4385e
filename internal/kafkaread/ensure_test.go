package kafkaread

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/drctl/drctl/topology"
)

// TestEnsureTopicsCreatesOnlyWhatIsMissing: the missing topics of the
// specs are created in one request, with the spec's partitions and configs
// and min(3, brokers) replicas, and are led when it returns; a topic that
// exists is left as it is (no request names it).
func TestEnsureTopicsCreatesOnlyWhatIsMissing(t *testing.T) {
	c, client := kfakeClient(t, kfake.NumBrokers(2), kfake.SeedTopics(1, "__drctl_state"))
	sizes := countCreates(c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	specs := []topology.TopicSpec{topology.KeyedTopic("__drctl_state", 0), topology.KeyedTopic("__drctl_runs", 4<<20),
		topology.ExpiringTopic("__drctl_drill_locks", 3, time.Hour)}
	if err := EnsureTopics(ctx, client, specs...); err != nil {
		t.Fatal(err)
	}
	if len(*sizes) != 1 || (*sizes)[0] != 2 {
		t.Errorf("CreateTopics requests (topics in each): %v, want one of the 2 missing", *sizes)
	}
	if _, err := client.Leader("__drctl_drill_locks", 2); err != nil {
		t.Errorf("the created topic is not led in the client's metadata: %v", err)
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]map[string]string{
		"__drctl_runs":        {"cleanup.policy": "compact", "max.message.bytes": "4194304"},
		"__drctl_drill_locks": {"cleanup.policy": "delete", "retention.ms": "3600000"},
	} {
		entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: name})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, e := range entries {
			got[e.Name] = e.Value
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("topic %s: %s = %q, want %q", name, k, got[k], v)
			}
		}
	}
	md, err := admin.DescribeTopics([]string{"__drctl_runs"})
	if err != nil || len(md) != 1 || len(md[0].Partitions) != 1 || len(md[0].Partitions[0].Replicas) != 2 {
		t.Errorf("__drctl_runs: %+v %v; want 1 partition with 2 replicas (min(3, brokers))", md, err)
	}
	*sizes = nil
	if err := EnsureTopics(ctx, client, specs...); err != nil || len(*sizes) != 0 {
		t.Errorf("EnsureTopics of existing topics: %v, %d create request(s); want none", err, len(*sizes))
	}
}

func TestInternalReplicas(t *testing.T) {
	for brokers, want := range map[int]int16{0: 1, 1: 1, 2: 2, 3: 3, 9: 3} {
		if got := topology.InternalReplicas(brokers); got != want {
			t.Errorf("InternalReplicas(%d) = %d, want %d", brokers, got, want)
		}
	}
}
