package tui

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/inspect"
)

func TestAssess(t *testing.T) {
	withMembers := func() *Snapshot {
		s := scenarioSteady()
		s.Status.Groups[0].Standby.Members = 2
		return s
	}
	noMirror := func() *Snapshot {
		s := scenarioSteady()
		s.Status.Mirror.Running, s.Status.Mirror.Workers = false, 0
		return s
	}
	smallLag := func() *Snapshot {
		s := scenarioSteady()
		s.Status.Mirror.LagRecords, s.Status.Mirror.LagSeconds = 3, 0.1
		return s
	}
	fencePermitted := func(active, standby bool) *Snapshot {
		s := scenarioSteady()
		s.Status.Clusters[0].FencePermitted, s.Status.Clusters[1].FencePermitted = &active, &standby
		return s
	}
	for _, tc := range []struct {
		name   string
		snap   *Snapshot
		level  inspect.Readiness
		reason string // a reason the verdict must give
	}{
		{"no snapshot", nil, inspect.Unknown, "waiting for the first refresh"},
		{"steady", scenarioSteady(), inspect.Ready, "mirror caught up"},
		{"a live producer's few records", smallLag(), inspect.Ready, "mirror lag 3 records (0.1s): the drain copies them"},
		{"rule 1: run in progress", scenarioFailingOver(), inspect.NotReady, "is in progress at step 4"},
		{"rule 2: stale standby", scenarioStale(), inspect.NotReady, "standby east is stale"},
		{"rule 0: both clusters down", scenarioBothDown(), inspect.Unknown, "the live roles are unknown"},
		{"rule 3: active down", scenarioClusterDown(), inspect.UnplannedOnly, "active east is unreachable"},
		{"rule 4: members on the standby", withMembers(), inspect.NotReady, "group analytics has 2 member(s) on the standby"},
		{"rule 5: no mirror process", noMirror(), inspect.ReadyWarn, "no mirror process runs for east->west"},
		{"rule 5: lag", scenarioLagging(), inspect.ReadyWarn, "mirror lag 12345 records (41.2s)"},
		{"rule 6: group behind", scenarioLagging(), inspect.ReadyWarn, "not in sync on the standby: billing"},
		{"rule 7: may fence both", fencePermitted(true, true), inspect.Ready, "mirror caught up"},
		{"rule 7: may not fence the active", fencePermitted(false, true), inspect.NotReady, "may not Alter ACLs on the active east: the fence step would fail"},
		{"rule 7: may not fence the standby", fencePermitted(true, false), inspect.ReadyWarn, "may not Alter ACLs on the standby west"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := assess(tc.snap)
			if v.Level != tc.level {
				t.Errorf("level %s, want %s (reasons %q)", v.Level, tc.level, v.Reasons)
			}
			if !slices.ContainsFunc(v.Reasons, func(r string) bool { return strings.Contains(r, tc.reason) }) {
				t.Errorf("reasons %q do not say %q", v.Reasons, tc.reason)
			}
		})
	}
}

func TestChanges(t *testing.T) {
	at := t0
	steady := scenarioSteady().Status
	down := scenarioClusterDown().Status
	failing := scenarioFailingOver().Status
	lagging := scenarioLagging().Status
	moved := steadyStatus()
	moved.Roles.Active, moved.Roles.Standby, moved.Roles.Epoch = "west", "east", 5
	newID := steadyStatus()
	newID.Clusters[1].ClusterID = "id-other"
	for _, tc := range []struct {
		name       string
		prev, cur  *inspect.Status
		want       []string
		wantNoMore bool
	}{
		{"first", nil, steady, []string{"first refresh: active east, standby west, epoch 3, steady"}, true},
		{"nothing changed", steady, steadyStatus(), nil, true},
		{"down", steady, down, []string{"cluster east is DOWN: cluster east (east-1:9092): cannot connect"}, false},
		{"back", down, steady, []string{"cluster east is back"}, false},
		{"run starts", steady, failing, []string{"run failover-20261201T095930-1234 (failover) started by oncall@host", "phase steady -> failing-over"}, false},
		{"run ends", failing, steady, []string{"run failover-20261201T095930-1234 (failover) ended"}, false},
		{"roles", steady, moved, []string{"roles: active west, standby east, epoch 5 (were east/west, epoch 3)"}, true},
		{"problem appears", steady, lagging, []string{"problem: group billing is not in sync on west"}, true},
		{"problem clears", lagging, steady, []string{"cleared: group billing is not in sync on west"}, true},
		{"new cluster id", steady, newID, []string{"cluster west answers with a different cluster id: id-other (was id-west)"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := changes(tc.prev, tc.cur, at)
			var texts []string
			for _, e := range got {
				texts = append(texts, e.Text)
			}
			for _, w := range tc.want {
				if !slices.ContainsFunc(texts, func(s string) bool { return strings.HasPrefix(s, w) }) {
					t.Errorf("events %q lack %q", texts, w)
				}
			}
			if tc.wantNoMore && len(texts) != len(tc.want) {
				t.Errorf("events %q, want exactly %q", texts, tc.want)
			}
		})
	}
}

func TestMeasureRates(t *testing.T) {
	a := scenarioSteady()
	b := scenarioSteady()
	b.Lag.MeasuredAt = a.Lag.MeasuredAt.Add(2 * time.Second)
	for i := range b.Lag.Partitions {
		b.Lag.Partitions[i].SourceEnd += 10 // 12 partitions x 10 records in 2 s
		b.Lag.Partitions[i].Mirrored += 5
	}
	r := measureRates(a, b)
	if !r.Known || r.In != 60 || r.Copied != 30 {
		t.Fatalf("rates %+v, want in 60/s, copied 30/s", r)
	}
	if r.BytesKnown {
		t.Errorf("rates %+v claim MB/s without log bytes", r)
	}
	a.Bytes, b.Bytes = &LogBytes{Source: 5e6, Target: 4e6}, &LogBytes{Source: 7e6, Target: 5e6}
	if r := measureRates(a, b); !r.BytesKnown || r.InMB != 1 || r.CopiedMB != 0.5 {
		t.Errorf("rates %+v, want in 1 MB/s, copied 0.5 MB/s", r)
	}
	b.Bytes.Target = 1e6 // retention shrank the standby's log
	if r := measureRates(a, b); r.CopiedMB != 0 {
		t.Errorf("a shrinking log gave %v MB/s copied, want 0", r.CopiedMB)
	}
}

func TestTableRendersOnlyVisibleRows(t *testing.T) {
	tb := newTable(column{Title: "topic", Width: 10, Flex: true}, column{Title: "lag", Width: 5, Right: true})
	rows := make([][]string, 10000)
	for i := range rows {
		rows[i] = []string{"t" + string(rune('a'+i%26)), "1"}
	}
	tb.SetRows(rows)
	out := tb.View(80, 20, newStyles())
	if n := strings.Count(out, "\n") + 1; n != 20 {
		t.Fatalf("rendered %d lines of 10,000 rows, want 20", n)
	}
	tb.End()
	if tb.cursor != 9999 || tb.offset != 9999-18 {
		t.Fatalf("end: cursor %d offset %d", tb.cursor, tb.offset)
	}
}
