package mirror

import (
	"reflect"
	"slices"
	"testing"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// TestPublishMoreAddsWhatAPassMadeReady: the topics a topic sync pass
// makes ready before its end are added to what the shards copy at once
// (publishMore), never twice and never taking a partition away; the
// partition lists handed out before stay as they were (a shard may be
// reading one), and the pass's own publish then sets the whole picture.
func TestPublishMoreAddsWhatAPassMadeReady(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{})
	e, err := NewEngine(p.Topology, "east", "west", Options{Epoch: -1, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	all := func() []topology.TopicPartition {
		var out []topology.TopicPartition
		for s := range int32(2) {
			out = append(out, e.partitionsOf(s)...)
		}
		slices.SortFunc(out, topology.TopicPartition.Compare)
		return out
	}
	tps := func(topic string, n int32) []topology.TopicPartition {
		var out []topology.TopicPartition
		for p := range n {
			out = append(out, topology.TopicPartition{Topic: topic, Partition: p})
		}
		return out
	}

	e.publish(map[string]readyTopic{"a": {Partitions: 3, SourceID: "id-a"}}, nil)
	before := map[int32][]topology.TopicPartition{}
	for s := range int32(2) {
		before[s] = slices.Clone(e.partitionsOf(s))
	}
	handedOut := map[int32][]topology.TopicPartition{0: e.partitionsOf(0), 1: e.partitionsOf(1)}
	gen := e.partsGen.Load()

	// a grew to 4 partitions and b is new, c as well (another batch).
	e.publishMore(map[string]readyTopic{"a": {Partitions: 4, SourceID: "id-a"}, "b": {Partitions: 2, SourceID: "id-b", MaxMessageBytes: 2 << 20}})
	e.publishMore(map[string]readyTopic{"c": {Partitions: 1, SourceID: "id-c"}})
	want := slices.Concat(tps("a", 4), tps("b", 2), tps("c", 1))
	if got := all(); !reflect.DeepEqual(got, want) {
		t.Errorf("copied after publishMore: %v, want %v", got, want)
	}
	for s := range int32(2) {
		if !slices.IsSortedFunc(e.partitionsOf(s), topology.TopicPartition.Compare) {
			t.Errorf("shard %d: partitions not sorted: %v", s, e.partitionsOf(s))
		}
		if !reflect.DeepEqual(handedOut[s], before[s]) {
			t.Errorf("shard %d: the list handed out before changed to %v", s, handedOut[s])
		}
	}
	if e.partsGen.Load() != gen+2 {
		t.Errorf("partsGen moved by %d, want 2 (the shards look again after each addition)", e.partsGen.Load()-gen)
	}
	if got := e.topicID("b"); got != "id-b" {
		t.Errorf("topicID(b) = %q, want id-b", got)
	}
	if got := e.topicLimit("b"); got != 2<<20-batchOverhead {
		t.Errorf("topicLimit(b) = %d, want %d", got, 2<<20-batchOverhead)
	}

	// Nothing new: nothing changes, the shards are not woken.
	gen = e.partsGen.Load()
	e.publishMore(map[string]readyTopic{"b": {Partitions: 2, SourceID: "id-b"}})
	if e.partsGen.Load() != gen {
		t.Error("publishMore of known partitions woke the shards")
	}

	// The pass's publish sets the whole picture: c went away meanwhile.
	e.publish(map[string]readyTopic{"a": {Partitions: 4}, "b": {Partitions: 2}}, nil)
	if got, want := all(), slices.Concat(tps("a", 4), tps("b", 2)); !reflect.DeepEqual(got, want) {
		t.Errorf("copied after the pass's publish: %v, want %v", got, want)
	}
}
