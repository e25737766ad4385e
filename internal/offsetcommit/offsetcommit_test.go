package offsetcommit

import (
	"slices"
	"testing"
)

// TestChunksKeepEachRequestWithinTheBound: consecutive ranges covering
// every item once, each within the bound unless a single item exceeds it.
func TestChunksKeepEachRequestWithinTheBound(t *testing.T) {
	sizes := []int{300, 300, 300, 900, 100, 2000, 50, 50}
	got := Chunks(len(sizes), func(i int) int { return sizes[i] }, 1000)
	want := [][2]int{{0, 3}, {3, 5}, {5, 6}, {6, 8}}
	if !slices.Equal(got, want) {
		t.Fatalf("chunks %v, want %v", got, want)
	}
	if got := Chunks(0, func(int) int { return 1 }, 10); len(got) != 0 {
		t.Fatalf("no items: %v", got)
	}
	if got := Chunks(3, func(int) int { return 1 }, 10); !slices.Equal(got, [][2]int{{0, 3}}) {
		t.Fatalf("small items: %v", got)
	}
}

// TestRecordBytesBoundsTheCoordinatorsRecord: the estimate is above the
// size of an offset commit record as Kafka writes it (key version 1, value
// version 3, framing at its largest), for short and long names.
func TestRecordBytesBoundsTheCoordinatorsRecord(t *testing.T) {
	for _, c := range []struct{ group, topic, md int }{{1, 1, 0}, {40, 30, 60}, {249, 249, 4096}} {
		key := 2 + (2 + c.group) + (2 + c.topic) + 4
		value := 2 + 8 + 4 + (2 + c.md) + 8
		framing := 5 + 1 + 10 + 5 + 5 + 5 + 1
		exact := key + value + framing
		group, topic := string(make([]byte, c.group)), string(make([]byte, c.topic))
		if est := RecordBytes(group, topic, c.md); est < exact {
			t.Fatalf("group %d topic %d metadata %d: estimate %d below the record's %d bytes", c.group, c.topic, c.md, est, exact)
		}
	}
}
