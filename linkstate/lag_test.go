package linkstate

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// TestLagAgeIsTheOldestUnmirroredRecord: a lag report gives every lagging
// partition the age of its oldest record not yet mirrored, read for many
// partitions at once (kafkaread.FirstTimestamps), and a partition whose
// first record is too large for that read still gets its age (read on its
// own).
func TestLagAgeIsTheOldestUnmirroredRecord(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"aged\"]}"})
	const parts = 300
	src := kfaketest.Dial(t, p.Topology, "east")
	kfaketest.CreateTopicOn(t, src, "aged", parts, nil)
	prod := kfaketest.IdempotentProducer(t, p.Topology.Clusters["east"], "")
	now := time.Now()
	age := func(part int32) time.Duration { return time.Duration(part+1) * time.Minute }
	for part := range int32(parts) {
		value := "v"
		if part == 7 {
			value = fmt.Sprintf("%0*d", 200<<10, 7) // larger than a partition's share of the batched read
		}
		for i := range 2 {
			if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "aged", Partition: part, Value: sarama.StringEncoder(value),
				Timestamp: now.Add(-age(part) + time.Duration(i)*time.Second)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	rep, err := MeasureLag(kfaketest.Ctx(t, time.Minute), kfaketest.Session(t, p.Topology), topology.Link{Topology: p.Topology.Name, Source: "east", Target: "west"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Partitions) != parts || rep.TotalRecords != 2*parts {
		t.Fatalf("%d partitions, %d records behind; want %d and %d", len(rep.Partitions), rep.TotalRecords, parts, 2*parts)
	}
	for _, pl := range rep.Partitions {
		want := age(pl.Partition).Seconds()
		if pl.Error != "" || math.Abs(pl.Seconds-want) > 30 {
			t.Errorf("%s/%d: %v s behind (error %q), want about %v s: the age of its first record", pl.Topic, pl.Partition, pl.Seconds, pl.Error, want)
		}
	}
}
