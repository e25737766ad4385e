package groupsync

import (
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/offsettranslate"
	"github.com/drctl/drctl/topology"
)

// TestStatusRereadsARoundInFlight: a status read between a sync round's
// commit on the standby and its snapshot write sees new offsets beside the
// old snapshot; the group is read again and is in sync. Offsets that someone
// else moved stay different on every read and are reported.
func TestStatusRereadsARoundInFlight(t *testing.T) {
	topo, err := topology.Parse("t.yaml", []byte("name: t\nclusters:\n  east: {bootstrap: [\"127.0.0.1:1\"]}\n  west: {bootstrap: [\"127.0.0.1:2\"]}\n"+
		"active: east\nstandby: west\nmirror:\n  topics: {include: [\"a\"]}\n  groups: {include: [\"g\"]}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	snapAt := func(target int64) map[string]Snapshot {
		at := now.Add(-time.Second)
		return map[string]Snapshot{"g": {Group: "g", ObservedAt: at, SyncedAt: &at, Action: SyncCommit,
			Offsets: []SnapshotOffset{{Topic: "a", Partition: 0, Offset: target + 3, Target: target, Status: offsettranslate.Exact}}}}
	}
	committed := func(off int64) func(string) (map[topology.TopicPartition]CommittedOffset, error) {
		return func(string) (map[topology.TopicPartition]CommittedOffset, error) {
			return map[topology.TopicPartition]CommittedOffset{{Topic: "a", Partition: 0}: {Offset: off}}, nil
		}
	}

	// The round committed 122 on the standby; the first snapshot read is
	// the previous round's (121), the next one this round's.
	reads := 0
	r := statusReads{
		snapshot: func() (map[string]Snapshot, error) {
			reads++
			if reads == 1 {
				return snapAt(121), nil
			}
			return snapAt(122), nil
		},
		committed: committed(122),
	}
	st, err := statusFrom(r, topo, "west", func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	if g := st["g"]; !g.InSync || g.Reason != "" || reads != 2 {
		t.Errorf("a round in flight: %+v after %d snapshot read(s); want in sync after one re-read", g, reads)
	}

	// Someone moved the standby to 90: still reported after the re-reads.
	reads = 0
	r = statusReads{snapshot: func() (map[string]Snapshot, error) { reads++; return snapAt(122), nil }, committed: committed(90)}
	st, err = statusFrom(r, topo, "west", func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	if g := st["g"]; g.InSync || !strings.Contains(g.Reason, "a/0 is at 90 on the standby") || reads != 1+statusRereads {
		t.Errorf("moved by someone else: %+v after %d snapshot read(s); want not in sync after %d re-reads", g, reads, statusRereads)
	}
}
