package inspect

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
)

// readyStatus: east active, west standby, both answering, the mirror
// running and caught up.
func readyStatus() *Status {
	c := func(name, role string) ClusterStatus {
		return ClusterStatus{Name: name, Role: role, Reachable: true, StateEpoch: 3}
	}
	return &Status{
		Roles:    Roles{Epoch: 3, Active: "east", Standby: "west", Phase: rolestate.PhaseSteady, Source: "cluster east"},
		Clusters: []ClusterStatus{c("east", "active"), c("west", "standby")},
		Mirror:   &linkstate.State{Link: "east->west", Running: true, Workers: 1},
	}
}

func TestAssess(t *testing.T) {
	with := func(f func(s *Status)) *Status {
		s := readyStatus()
		f(s)
		return s
	}
	bothDown := with(func(s *Status) {
		s.Roles = Roles{Epoch: -1, Active: RoleUnknown, Standby: RoleUnknown, Phase: RoleUnknown, Source: RoleUnknown}
		for i := range s.Clusters {
			s.Clusters[i].Role, s.Clusters[i].Reachable = RoleUnknown, false
		}
		s.Mirror = nil
	})
	activeDown := with(func(s *Status) {
		s.Clusters[0].Reachable = false
		s.Mirror, s.MirrorNotRead = nil, "not read: east (active) did not answer"
	})
	for _, tc := range []struct {
		name   string
		st     *Status
		level  Readiness
		reason string
	}{
		{"no snapshot", nil, Unknown, "no status read yet"},
		{"steady", readyStatus(), Ready, "mirror caught up"},
		{"rule 0: both clusters down", bothDown, Unknown, "the live roles are unknown"},
		{"rule 2: standby down", with(func(s *Status) { s.Clusters[1].Reachable, s.Mirror = false, nil }), NotReady, "standby west is unreachable"},
		{"rule 3: active down", activeDown, UnplannedOnly, "active east is unreachable"},
		{"rule 5: link not read with both up", with(func(s *Status) { s.Mirror = nil }), Unknown, "mirror lag not measured"},
		{"rule 5: link error", with(func(s *Status) { s.Mirror.Error = "boom" }), NotReady, "mirror east->west: boom"},
		{"rule 5: small lag", with(func(s *Status) { s.Mirror.LagRecords, s.Mirror.LagSeconds = 3, 0.1 }), Ready, "the drain copies them"},
		{"rule 8: a pause holds the mirror", with(func(s *Status) {
			s.Pause = &linkstate.Pause{ID: "drill-unplanned-x", Until: time.Now().Add(time.Minute)}
		}), NotReady, "the mirror is paused by drill-unplanned-x"},
		{"rule 9: a drill with no result", with(func(s *Status) { s.LastDrill = &DrillStatus{ID: "drill-failover-y", Unfinished: true} }), NotReady, "drill drill-failover-y started at"},
		{"rule 10: the standby differs", with(func(s *Status) {
			s.Mirror.Proof = &linkstate.ProofSummary{Partitions: 2, Records: 40, Differences: 1, Differing: []linkstate.Proof{
				{Topic: "orders", Partition: 1, Differences: 1, FirstDifference: "unexpected: source offset -1, standby offset 20: no source record maps to this committed standby record"}}}
		}), NotReady, "the standby differs: the mirror's verifier found 1 difference(s) on 1 partition(s), first orders/1 (unexpected: source offset -1, standby offset 20"},
		{"rule 10: proven identical", with(func(s *Status) { s.Mirror.Proof = &linkstate.ProofSummary{Partitions: 2, Records: 40} }), Ready, "mirror caught up"},
		{"rule 5: losses on record", with(func(s *Status) { s.Mirror.LostUnacknowledged = 15 }), ReadyWarn, "15 records lost to source retention"},
		{"rule 5: large lag", with(func(s *Status) { s.Mirror.LagRecords, s.Mirror.LagSeconds = 300, 42 }), ReadyWarn, "the drain waits for them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Assess(tc.st)
			if v.Level != tc.level {
				t.Errorf("level %s, want %s (reasons %q)", v.Level, tc.level, v.Reasons)
			}
			if !slices.ContainsFunc(v.Reasons, func(r string) bool { return strings.Contains(r, tc.reason) }) {
				t.Errorf("reasons %q do not say %q", v.Reasons, tc.reason)
			}
		})
	}
}

// TestStatusActiveDownSaysUnknown: with the active down, its topics and
// groups are unknown (not missing, not absent), the mirror says why it was
// not read, and the verdict leaves only an unplanned failover; with both
// down, the verdict is UNKNOWN.
func TestStatusActiveDownSaysUnknown(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{})
	east, west := kfaketest.Dial(t, p.Topology, "east"), kfaketest.Dial(t, p.Topology, "west")
	kfaketest.CreateTopicOn(t, east, "orders", 2, nil)
	kfaketest.CreateTopicOn(t, west, "orders", 2, nil)
	kfaketest.CommitOn(t, west, "billing", "orders", map[int32]int64{0: 0})
	p.Stop("east")

	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Second)
	defer cancel()
	st, _ := CollectStatus(ctx, kfaketest.Session(t, p.Topology))
	if len(st.Topics) != 1 || !st.Topics[0].Active.Unknown || st.Topics[0].Active.Exists || st.Topics[0].Standby.Unknown || !st.Topics[0].Standby.Exists {
		t.Errorf("topics = %+v, want orders unknown on the active, present on the standby", st.Topics)
	}
	if len(st.Groups) != 1 || !st.Groups[0].Active.Unknown || st.Groups[0].Standby.Unknown {
		t.Errorf("groups = %+v, want billing unknown on the active", st.Groups)
	}
	if st.Mirror != nil || !strings.Contains(st.MirrorNotRead, "east (active) did not answer") {
		t.Errorf("mirror = %+v, not read = %q: want why it is absent", st.Mirror, st.MirrorNotRead)
	}
	if st.Readiness.Level != UnplannedOnly {
		t.Errorf("readiness = %+v, want %s", st.Readiness, UnplannedOnly)
	}

	p.Stop("west")
	ctx2, cancel2 := context.WithTimeout(context.Background(), 14*time.Second)
	defer cancel2()
	st, _ = CollectStatus(ctx2, kfaketest.Session(t, p.Topology))
	if st.Roles.Active != RoleUnknown || st.Readiness.Level != Unknown {
		t.Errorf("both down: roles %+v, readiness %+v, want unknown and %s", st.Roles, st.Readiness, Unknown)
	}
}
