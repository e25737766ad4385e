package linkstate

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// TestLatestEndsFromTheTail: the ends topic holds every view every shard
// wrote; readEnds must return each shard's newest view, also when one
// shard's newest view lies far behind thousands of another's (the window
// read from the end must keep growing), and without a shards topic.
func TestLatestEndsFromTheTail(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{})
	link := topology.Link{Topology: p.Topology.Name, Source: "east", Target: "west"}
	dst := kfaketest.Dial(t, p.Topology, "west")
	kfaketest.CreateTopicOn(t, dst, link.EndsTopic(), 1, map[string]string{"cleanup.policy": "compact"})
	prod := kfaketest.Producer(t, p.Topology.Clusters["west"], 3)
	write := func(shard int32, mirrored int64) {
		t.Helper()
		raw, _ := json.Marshal(ShardView{Shard: shard, Partitions: []Observed{{Topic: "orders", Partition: shard, End: 5000, Mirrored: mirrored, ObservedAtMs: mirrored}}})
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: link.EndsTopic(), Partition: 0,
			Key: sarama.StringEncoder(strconv.Itoa(int(shard))), Value: sarama.ByteEncoder(raw)}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, want map[int32]int64) {
		t.Helper()
		v, err := readEnds(kfaketest.Ctx(t, 30e9), dst, link)
		if err != nil {
			t.Fatal(err)
		}
		for shard, mirrored := range want {
			got, ok := v.observed[topology.TopicPartition{Topic: "orders", Partition: shard}]
			if !ok || got.Mirrored != mirrored {
				t.Fatalf("%s: shard %d: got %+v (found %v), want mirrored %d", what, shard, got, ok, mirrored)
			}
		}
	}
	write(1, 7) // shard 1's only view, soon far behind
	for i := range int64(3000) {
		write(0, i+1)
		if i == 10 {
			write(2, 11)
		}
	}
	check("no shards topic: the whole topic", map[int32]int64{0: 3000, 1: 7, 2: 11})
	kfaketest.CreateTopicOn(t, dst, link.ShardsTopic(), 3, nil)
	check("three shards, two far back", map[int32]int64{0: 3000, 1: 7, 2: 11})
	write(1, 3001)
	write(2, 3002)
	check("three shards, all at the end", map[int32]int64{0: 3000, 1: 3001, 2: 3002})
}
