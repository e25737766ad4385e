package offsettranslate

import "testing"

// TestPruneBelow: pruning keeps every position at or above the bound
// exact, and turns positions below the kept runs into Unmapped, never a
// guess.
func TestPruneBelow(t *testing.T) {
	var m PartitionMap
	for i := range int64(10) {
		// Ten transactions of 10 records; each commit marker takes one
		// target offset.
		e := Entry{Topic: "t", Partition: 0, Runs: []Run{{Source: i * 10, Target: i * 11, Count: 10}}, SourceNext: i*10 + 10}
		if err := m.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	before := map[int64]Result{}
	for pos := int64(0); pos <= 100; pos++ {
		before[pos] = m.Translate(pos)
	}
	if n := m.PruneBelow(45); n != 4 {
		t.Fatalf("pruned %d runs, want the 4 that end at or below 45", n)
	}
	for pos := int64(0); pos <= 100; pos++ {
		got := m.Translate(pos)
		switch {
		case pos >= 40:
			if got != before[pos] {
				t.Errorf("Translate(%d) = %+v after pruning, was %+v", pos, got, before[pos])
			}
		default:
			if got.Status != Unmapped {
				t.Errorf("Translate(%d) = %+v, want Unmapped below the kept runs", pos, got)
			}
		}
	}
	if n := m.PruneBelow(1000); n != 5 || len(m.Runs()) != 1 {
		t.Errorf("pruning past the end dropped %d runs and kept %d; the last run must stay", n, len(m.Runs()))
	}
}
