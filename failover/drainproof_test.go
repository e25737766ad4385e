package failover

import (
	"strings"
	"testing"

	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

// TestDrainUnproven: the rules of drainUnproven, with the worked example
// of its comment (orders/0: last stable offset 40).
func TestDrainUnproven(t *testing.T) {
	part := func(p int32, lso, mirrored int64) linkstate.PartitionLag {
		return linkstate.PartitionLag{Topic: "orders", Partition: p, SourceEnd: lso, Mirrored: mirrored, Records: max(lso-mirrored, 0)}
	}
	high := func(ends ...int64) map[topology.TopicPartition]int64 {
		out := map[topology.TopicPartition]int64{}
		for i, h := range ends {
			out[topology.TopicPartition{Topic: "orders", Partition: int32(i)}] = h
		}
		return out
	}
	broken := part(0, 40, 40)
	broken.Error = "leader not available"
	for _, tc := range []struct {
		name  string
		parts []linkstate.PartitionLag
		high  map[topology.TopicPartition]int64
		want  string // "" or a fragment of the reason
	}{
		{"drained", []linkstate.PartitionLag{part(0, 40, 40), part(1, 7, 7)}, high(40, 7), ""},
		{"no partitions", nil, high(), ""},
		{"open transaction", []linkstate.PartitionLag{part(0, 40, 40), part(1, 7, 7)}, high(42, 7),
			"a transaction is open on 1 partition(s): orders/0 (last stable offset 40, high-water mark 42)"},
		{"open transaction beats lag", []linkstate.PartitionLag{part(0, 40, 38), part(1, 7, 7)}, high(40, 9), "a transaction is open on 1 partition(s): orders/1"},
		{"not mirrored", []linkstate.PartitionLag{part(0, 40, 38), part(1, 7, 7)}, high(40, 7), "1 partition(s) not mirrored to their last stable offset: orders/0 (2 records)"},
		{"unmeasured", []linkstate.PartitionLag{broken}, high(40), "orders/0: leader not available"},
		{"a partition without a high-water mark", []linkstate.PartitionLag{part(0, 40, 40), part(1, 7, 7)}, high(40), "orders/1: no high-water mark"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := drainUnproven(&linkstate.LagReport{Partitions: tc.parts}, tc.high)
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Errorf("drainUnproven = %q, want %q", got, tc.want)
			}
		})
	}
}
