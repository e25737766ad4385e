package groupsync

import (
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/offsettranslate"
	"github.com/drctl/drctl/topology"
)

// mapOf builds an offset map index from entries of one partition each.
func mapOf(t *testing.T, entries ...offsettranslate.Entry) *offsettranslate.Index {
	t.Helper()
	x := &offsettranslate.Index{}
	if err := x.Add(offsettranslate.Batch{Entries: entries}); err != nil {
		t.Fatal(err)
	}
	return x
}

func TestTranslateGroup(t *testing.T) {
	// orders/0: source 0..2 -> target 0..2, 7 -> 3 (holes 3..6), read up to 8.
	x := mapOf(t, offsettranslate.Entry{Topic: "orders", Partition: 0,
		Runs: []offsettranslate.Run{{Source: 0, Target: 0, Count: 3}, {Source: 7, Target: 3, Count: 1}}, SourceNext: 8},
		offsettranslate.Entry{Topic: "late", Partition: 0, Runs: []offsettranslate.Run{{Source: 50, Target: 0, Count: 10}}, SourceNext: 60})
	tp := func(topic string, p int32) topology.TopicPartition {
		return topology.TopicPartition{Topic: topic, Partition: p}
	}
	pos := groupPositions{group: "billing", observedAt: time.Unix(100, 0), offsets: map[topology.TopicPartition]CommittedOffset{
		tp("orders", 0):   {Offset: 4, Metadata: "m"}, // a hole: next record 7
		tp("orders", 1):   {Offset: 3},                // nothing mirrored
		tp("orders", 2):   {Offset: -1},               // no offset: left out
		tp("late", 0):     {Offset: 12},               // before the map's start
		tp("skipped", 0):  {Offset: 9},                // not mirrored
		tp("skipped", 1):  {Offset: 9},
		tp("orders", 3):   {Offset: 0},
		tp("_drctl.x", 0): {Offset: 1}, // internal: never mirrored
	}}
	mirrored := func(topic string) bool { return topic == "orders" || topic == "late" }
	standby := map[topology.TopicPartition]CommittedOffset{tp("orders", 0): {Offset: 3}, tp("late", 0): {Offset: -1}}
	ends := map[topology.TopicPartition]int64{tp("orders", 0): 5}
	gt := translateGroup(pos, x, mirrored, StandbyGroup{Exists: true, State: "Empty"}, standby, ends)
	want := []GroupPartition{
		{Topic: "late", Partition: 0, SourceCommitted: 12, Target: 0, Status: offsettranslate.BeforeStart, TargetEnd: -1, StandbyCommitted: -1},
		{Topic: "orders", Partition: 0, SourceCommitted: 4, Metadata: "m", Target: 3, Status: offsettranslate.Exact, Exact: true, TargetEnd: 5, StandbyCommitted: 3},
		{Topic: "orders", Partition: 1, SourceCommitted: 3, Target: -1, Status: offsettranslate.Unmapped, TargetEnd: -1, StandbyCommitted: -1},
		{Topic: "orders", Partition: 3, SourceCommitted: 0, Target: -1, Status: offsettranslate.Unmapped, TargetEnd: -1, StandbyCommitted: -1},
	}
	if len(gt.Partitions) != len(want) {
		t.Fatalf("partitions %+v, want %+v", gt.Partitions, want)
	}
	for i := range want {
		if gt.Partitions[i] != want[i] {
			t.Errorf("partition %d: %+v, want %+v", i, gt.Partitions[i], want[i])
		}
	}
	if strings.Join(gt.Unmirrored, ",") != "_drctl.x,skipped" {
		t.Errorf("unmirrored %v", gt.Unmirrored)
	}
	// Past the mirrored end: clamped, exact up to the mirror's read position.
	pos.offsets = map[topology.TopicPartition]CommittedOffset{tp("orders", 0): {Offset: 8}}
	if gp := translateGroup(pos, x, mirrored, StandbyGroup{}, nil, nil).Partitions[0]; gp.Target != 4 || gp.Status != offsettranslate.ClampedToEnd || !gp.Exact {
		t.Errorf("at the read position: %+v", gp)
	}
	pos.offsets = map[topology.TopicPartition]CommittedOffset{tp("orders", 0): {Offset: 9}}
	if gp := translateGroup(pos, x, mirrored, StandbyGroup{}, nil, nil).Partitions[0]; gp.Target != 4 || gp.Status != offsettranslate.ClampedToEnd || gp.Exact {
		t.Errorf("ahead of the mirror: %+v", gp)
	}
}

func TestStandbyGroupActive(t *testing.T) {
	for _, c := range []struct {
		g    StandbyGroup
		want bool
	}{
		{StandbyGroup{}, false},
		{StandbyGroup{Exists: true, State: "Empty"}, false},
		{StandbyGroup{Exists: true, State: "Dead"}, false},
		{StandbyGroup{Exists: true, State: "Stable", Members: 2}, true},
		{StandbyGroup{Exists: true, State: "PreparingRebalance"}, true},
		{StandbyGroup{Exists: true, State: "CompletingRebalance"}, true},
		{StandbyGroup{Exists: true, State: "Empty", Members: 1}, true},
	} {
		if got := c.g.Active(); got != c.want {
			t.Errorf("%+v.Active() = %v", c.g, got)
		}
	}
}

// TestDecide walks Decide's rules, one row each.
func TestDecide(t *testing.T) {
	exact := offsettranslate.Exact
	part := func(topic string, source, target, standby int64, st offsettranslate.Status) GroupPartition {
		return GroupPartition{Topic: topic, SourceCommitted: source, Target: target, Status: st, Exact: st == exact, TargetEnd: -1, StandbyCommitted: standby}
	}
	empty := StandbyGroup{Exists: true, State: "Empty"}
	cases := []struct {
		name    string
		gt      GroupTranslation
		action  SyncAction
		changes []OffsetChange
		reason  string
	}{
		{name: "1 failed read", gt: GroupTranslation{Group: "g", Error: "source: boom", Partitions: []GroupPartition{part("a", 1, 1, -1, exact)}},
			action: SyncFailed, reason: "source: boom"},
		{name: "2 active on the standby", gt: GroupTranslation{Group: "g", Standby: StandbyGroup{Exists: true, State: "Stable", Members: 3},
			Partitions: []GroupPartition{part("a", 1, 1, 0, exact)}}, action: SyncSkippedActive, reason: "has 3 members on the standby west"},
		{name: "3 absent group gets every translated partition", gt: GroupTranslation{Group: "g", Partitions: []GroupPartition{
			part("a", 5, 3, -1, exact), part("b", 9, 7, -1, offsettranslate.ClampedToEnd), part("c", 0, 4, -1, offsettranslate.BeforeStart),
			part("d", 2, -1, -1, offsettranslate.Unmapped)}},
			action: SyncCommit, changes: []OffsetChange{
				{Topic: "a", Before: -1, After: 3, Status: exact, Exact: true},
				{Topic: "b", Before: -1, After: 7, Status: offsettranslate.ClampedToEnd},
				{Topic: "c", Before: -1, After: 4, Status: offsettranslate.BeforeStart}}},
		{name: "3 moves backwards too (a reset on the source)", gt: GroupTranslation{Group: "g", Standby: empty, Partitions: []GroupPartition{
			part("a", 5, 3, 40, exact), part("b", 5, 3, 3, exact)}},
			action: SyncCommit, changes: []OffsetChange{{Topic: "a", Before: 40, After: 3, Status: exact, Exact: true}}},
		{name: "4 in sync", gt: GroupTranslation{Group: "g", Standby: empty, Partitions: []GroupPartition{
			part("a", 5, 3, 3, exact), part("d", 2, -1, 8, offsettranslate.Unmapped)}}, action: SyncInSync},
		{name: "4 nothing translated", gt: GroupTranslation{Group: "g", Partitions: []GroupPartition{
			part("d", 2, -1, -1, offsettranslate.Unmapped)}}, action: SyncNothing},
		{name: "4 no partitions at all", gt: GroupTranslation{Group: "g"}, action: SyncNothing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Decide(&TranslationReport{Link: "east->west", Source: "east", Target: "west", Groups: []GroupTranslation{c.gt}})
			g := p.Groups[0]
			if g.Action != c.action || !strings.Contains(g.Reason, c.reason) {
				t.Fatalf("action %s (%s), want %s (%s)", g.Action, g.Reason, c.action, c.reason)
			}
			if len(g.Changes) != len(c.changes) {
				t.Fatalf("changes %+v, want %+v", g.Changes, c.changes)
			}
			for i := range c.changes {
				if g.Changes[i] != c.changes[i] {
					t.Errorf("change %d: %+v, want %+v", i, g.Changes[i], c.changes[i])
				}
			}
			if g.Committed {
				t.Error("a plan claims to be committed")
			}
		})
	}
}

func TestSyncStatus(t *testing.T) {
	now := time.Unix(1000, 0)
	synced := now.Add(-3 * time.Second)
	snap := Snapshot{Group: "g", ObservedAt: synced, SyncedAt: &synced, Action: SyncCommit, Offsets: []SnapshotOffset{
		{Topic: "a", Partition: 0, Offset: 10, Target: 7, Status: offsettranslate.Exact},
		{Topic: "a", Partition: 1, Offset: 3, Target: -1, Status: offsettranslate.Unmapped},
	}}
	at := func(off int64) map[topology.TopicPartition]CommittedOffset {
		return map[topology.TopicPartition]CommittedOffset{{Topic: "a", Partition: 0}: {Offset: off}}
	}
	if st := syncStatus(snap, at(7), now); !st.InSync || st.BehindSeconds != 3 || st.Reason != "" {
		t.Errorf("synced group: %+v", st)
	}
	if st := syncStatus(snap, at(9), now); st.InSync || !strings.Contains(st.Reason, "a/0 is at 9") {
		t.Errorf("moved group: %+v", st)
	}
	if st := syncStatus(snap, nil, now); st.InSync || !strings.Contains(st.Reason, "at -1") {
		t.Errorf("group without offsets: %+v", st)
	}
	skipped := snap
	skipped.Action, skipped.Reason = SyncSkippedActive, "has 1 members"
	if st := syncStatus(skipped, at(7), now); st.InSync || st.Reason != "has 1 members" || st.BehindSeconds != 3 {
		t.Errorf("skipped group: %+v", st)
	}
	never := Snapshot{Group: "g", Action: SyncNothing}
	if st := syncStatus(never, nil, now); !st.InSync || st.BehindSeconds != -1 {
		t.Errorf("group with nothing to sync: %+v", st)
	}
}

func TestNewSnapshotCarriesSyncedAt(t *testing.T) {
	obs := time.Unix(500, 0).UTC()
	prev := time.Unix(400, 0).UTC()
	pos := groupPositions{group: "g", observedAt: obs, offsets: map[topology.TopicPartition]CommittedOffset{
		{Topic: "b", Partition: 1}: {Offset: 4}, {Topic: "a", Partition: 0}: {Offset: 9, Metadata: "x"}, {Topic: "c", Partition: 0}: {Offset: -1}}}
	gt := GroupTranslation{Group: "g", ObservedAt: obs, Partitions: []GroupPartition{
		{Topic: "a", Partition: 0, SourceCommitted: 9, Target: 6, Status: offsettranslate.Exact}}}
	s := newSnapshot("east", gt, pos, Group{Action: SyncSkippedActive, Reason: "r"}, &prev)
	if s.SyncedAt == nil || !s.SyncedAt.Equal(prev) || s.Action != SyncSkippedActive {
		t.Errorf("skipped round: SyncedAt %v, action %s", s.SyncedAt, s.Action)
	}
	want := []SnapshotOffset{{Topic: "a", Offset: 9, Metadata: "x", Target: 6, Status: offsettranslate.Exact}, {Topic: "b", Partition: 1, Offset: 4, Target: -1}}
	if len(s.Offsets) != 2 || s.Offsets[0] != want[0] || s.Offsets[1] != want[1] {
		t.Errorf("offsets %+v, want %+v", s.Offsets, want)
	}
	s = newSnapshot("east", gt, pos, Group{Action: SyncCommit, Committed: true}, &prev)
	if s.SyncedAt == nil || !s.SyncedAt.Equal(obs) {
		t.Errorf("committed round: SyncedAt %v, want %v", s.SyncedAt, obs)
	}
	s = newSnapshot("east", gt, pos, Group{Action: SyncFailed}, nil)
	if s.SyncedAt != nil {
		t.Errorf("failed first round: SyncedAt %v", s.SyncedAt)
	}
}

func TestMovedSincePlan(t *testing.T) {
	changes := []OffsetChange{{Topic: "a", Partition: 0, Before: -1, After: 7}, {Topic: "a", Partition: 1, Before: 3, After: 5}}
	at := func(p0, p1 int64) map[topology.TopicPartition]CommittedOffset {
		m := map[topology.TopicPartition]CommittedOffset{}
		if p0 >= 0 {
			m[topology.TopicPartition{Topic: "a", Partition: 0}] = CommittedOffset{Offset: p0}
		}
		if p1 >= 0 {
			m[topology.TopicPartition{Topic: "a", Partition: 1}] = CommittedOffset{Offset: p1}
		}
		return m
	}
	for _, c := range []struct {
		p0, p1 int64
		stale  string
	}{
		{-1, 3, ""},         // as planned
		{7, 5, ""},          // already done by someone else
		{7, 3, ""},          // half done
		{2, 3, "a/0 moved"}, // moved elsewhere
		{-1, -1, "a/1 moved"},
	} {
		got := movedSincePlan(changes, at(c.p0, c.p1))
		if (c.stale == "") != (got == "") || !strings.Contains(got, c.stale) {
			t.Errorf("standby at %d, %d: %q, want %q", c.p0, c.p1, got, c.stale)
		}
	}
}
