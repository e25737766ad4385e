package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/mirror/groupsync"
	"github.com/drctl/drctl/offsettranslate"
)

// Names an operator copies out of a table: never cut, never wrapped.
const (
	longTopic   = "payments.settlements.eu-central.v2"
	longGroup   = "customers-enrichment-service"
	longCluster = "kafka-prod-eu-central-1a"
	clusterID   = "MkU3OEVBNTcwNTJENDM2Qk" // 22 characters, as Kafka's are
	drillID     = "drill-unplanned-20261207T152037-f0690a"
)

// assertFits checks what a person reading out at width columns needs: no
// line wider than width, no box drawing, and each name whole on one line.
func assertFits(t *testing.T, what, out string, width int, names ...string) {
	t.Helper()
	for line := range strings.SplitSeq(out, "\n") {
		if n := utf8.RuneCountInString(line); n > width {
			t.Errorf("%s: a %d-column line at width %d:\n%s\n---\n%s", what, n, width, line, out)
		}
	}
	if strings.ContainsAny(out, "│┌└├┼↩") {
		t.Errorf("%s: box drawing or a wrap mark:\n%s", what, out)
	}
	for _, name := range names {
		if !containsWord(out, name) {
			t.Errorf("%s: %q is not whole on one line:\n%s", what, name, out)
		}
	}
}

// containsWord is whether s holds name as one whitespace-separated word.
func containsWord(s, name string) bool {
	for line := range strings.SplitSeq(s, "\n") {
		for f := range strings.FieldsSeq(line) {
			if f == name || strings.Trim(f, ",;:()") == name {
				return true
			}
		}
	}
	return false
}

func headerLine(out, first string) string {
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(line, first+" ") {
			return line
		}
	}
	return ""
}

func longStatus() *inspect.Status {
	yes := true
	st := &inspect.Status{Topology: "payments"}
	st.Roles.Active, st.Roles.Standby, st.Roles.Epoch, st.Roles.Phase, st.Roles.Source = longCluster, "west", 4, "steady", "clusters"
	st.Clusters = []inspect.ClusterStatus{
		{Name: longCluster, Role: "active", Reachable: true, ClusterInfo: inspect.ClusterInfo{ClusterID: clusterID, KafkaVersion: "4.1.1 (metadata.version 4.1-IV1)"}, StateEpoch: 4, Fenced: new(bool), FencePermitted: &yes},
		{Name: "west", Role: "standby", Reachable: true, ClusterInfo: inspect.ClusterInfo{ClusterID: "QzFBMjM0NTY3ODlBQkNERU", KafkaVersion: "4.1.1 (metadata.version 4.1-IV1)"}, StateEpoch: 4, Fenced: new(bool), FencePermitted: new(bool)},
	}
	st.Topics = []inspect.TopicStatus{
		{Name: longTopic, Active: inspect.TopicSide{Exists: true, Partitions: 12}, Standby: inspect.TopicSide{Exists: true, Partitions: 12}, InParity: false,
			ConfigDrift: []inspect.ConfigDrift{{Key: "retention.ms", Active: "604800000", Standby: "86400000"}, {Key: "cleanup.policy", Active: "compact", Standby: "delete"}}},
		{Name: "orders", Active: inspect.TopicSide{Exists: true, Partitions: 6}, Standby: inspect.TopicSide{Exists: true, Partitions: 6}, InParity: true},
	}
	st.Groups = []inspect.GroupStatus{
		{Name: longGroup, Active: inspect.GroupSide{Exists: true, State: "Stable", Members: 3}, Standby: inspect.GroupSide{Exists: true, State: "Empty"},
			Sync: &groupsync.Status{InSync: true, BehindSeconds: 0.4}},
	}
	return st
}

// TestTablesAt80Columns: every table drctl prints fits 80 columns as plain
// space-aligned columns; ids, topics, groups and clusters are never cut or
// wrapped (the less important columns go first, free text is shortened or
// wrapped between words), and -o wide shows every column.
func TestTablesAt80Columns(t *testing.T) {
	narrow := func() (*bytes.Buffer, *tableOut) { b := &bytes.Buffer{}; return b, &tableOut{Writer: b, width: 80} }
	wide := func() (*bytes.Buffer, *tableOut) {
		b := &bytes.Buffer{}
		return b, &tableOut{Writer: b, width: 80, wide: true}
	}

	t.Run("status", func(t *testing.T) {
		b, w := narrow()
		if err := statusTables(w, longStatus()); err != nil {
			t.Fatal(err)
		}
		assertFits(t, "status", b.String(), 80, longCluster, clusterID, longTopic, longGroup)
		if !strings.Contains(b.String(), "-o wide shows them") {
			t.Errorf("status does not say that columns were left out:\n%s", b)
		}
		b, w = wide()
		if err := statusTables(w, longStatus()); err != nil {
			t.Fatal(err)
		}
		for first, cols := range map[string][]string{"CLUSTER": {"BROKERS", "CONTROLLER", "KAFKA", "STATE EPOCH", "FENCE"}, "TOPIC": {"PARITY", "CONFIG DRIFT"}} {
			h := headerLine(b.String(), first)
			for _, c := range cols {
				if !strings.Contains(h, c) {
					t.Errorf("-o wide: header %q lacks %s:\n%s", h, c, b)
				}
			}
		}
		if !strings.Contains(b.String(), "4.1.1 (metadata.version 4.1-IV1)") || !strings.Contains(b.String(), "retention.ms: 604800000 / 86400000; cleanup.policy: compact / delete") ||
			!strings.Contains(b.String(), "none (drctl may not Alter ACLs: a failover cannot fence)") || strings.Contains(b.String(), "-o wide shows") {
			t.Errorf("-o wide shortened or left out something:\n%s", b)
		}
	})

	t.Run("drill history", func(t *testing.T) {
		rpo, rto, est, lat := 12.5, 31.2, 40.0, 35.0
		sums := []drill.Summary{
			{ID: drillID, Drill: "staging-unplanned", Kind: "unplanned", StartedAt: time.Date(2026, 12, 7, 15, 20, 37, 0, time.UTC), Duration: "1m4.607s",
				Verdict: drill.Fail, RPOSeconds: &rpo, RTOSeconds: &rto,
				Reasons: []string{"step drill-unplanned-failover failed: unplanned failover run failover-20261207T152042-374068 to west: step 10/13 (wipe) failed"}},
			{ID: "drill-canary-20261207T151900-10ed48", Drill: "nightly", Kind: "canary", StartedAt: time.Date(2026, 12, 7, 15, 19, 0, 0, time.UTC), Duration: "2.2s",
				Verdict: drill.Pass, RPOSeconds: &rpo, RTOSeconds: &est, RTOEstimated: true, LatencyP99MS: &lat, Reasons: []string{}},
		}
		b, w := narrow()
		if err := historyTable(w, sums); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		assertFits(t, "drill history", out, 80, drillID, "drill-canary-20261207T151900-10ed48")
		for _, want := range []string{"RTO", "31.2s", "~40.0s", "~: an RTO estimated"} {
			if !strings.Contains(out, want) {
				t.Errorf("drill history lacks %q:\n%s", want, out)
			}
		}
		if i, j := strings.Index(out, drillID), strings.Index(out, "drill-canary-"); i < 0 || j < i {
			t.Errorf("drill history is not in the order given (newest first):\n%s", out)
		}
		b, w = wide()
		if err := historyTable(w, sums); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"KIND", "STARTED", "LATENCY P99", "staging-unplanned", "2026-12-07T15:20:37Z", "step 10/13 (wipe) failed"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("-o wide lacks %q:\n%s", want, b)
			}
		}
	})

	t.Run("validate", func(t *testing.T) {
		detail := "5 selected: customers, drctl-canary.sandbox, orders, " + longTopic + ", payments.us"
		v := &inspect.Validation{Topology: "payments", File: "drctl.yaml", Online: true, Checks: []inspect.Check{
			{Cluster: longCluster, Name: "topics", Result: inspect.CheckOK, Detail: detail},
			{Name: "mirror", Result: inspect.CheckOK, Detail: "topics [orders payments\\..* customers] excluding []; groups [.*] excluding [console-consumer-.*]; exactly-once"},
		}}
		b, w := narrow()
		if err := validationTable(w, v); err != nil {
			t.Fatal(err)
		}
		assertFits(t, "validate", b.String(), 80, longCluster, longTopic, "drctl-canary.sandbox", "[console-consumer-.*]")
		if strings.Count(b.String(), "\n") < 5 {
			t.Errorf("validate did not wrap its details between words:\n%s", b)
		}
	})

	t.Run("offsets translate", func(t *testing.T) {
		rep := &groupsync.TranslationReport{Link: longCluster + "->west", Source: longCluster, Target: "west", Groups: []groupsync.GroupTranslation{{
			Group: longGroup, Standby: groupsync.StandbyGroup{Exists: true, State: "Empty"},
			Partitions: []groupsync.GroupPartition{
				{Topic: longTopic, Partition: 11, SourceCommitted: 1234567, Target: 2469134, Status: offsettranslate.Exact, Exact: true, TargetEnd: 2469200, StandbyCommitted: 2469000},
				{Topic: "orders", Partition: 0, SourceCommitted: 175, Target: 349, Status: offsettranslate.ClampedToEnd, Exact: true, TargetEnd: 349, StandbyCommitted: -1},
			},
		}}}
		b, w := narrow()
		if err := translationTables(w, rep); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		assertFits(t, "offsets translate", out, 80, longTopic, longGroup)
		for _, want := range []string{"TARGET: where that record is on west", "STANDBY COMMITTED: the group's committed offset on west", "clamped-to-end: the group has read everything mirrored"} {
			if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
				t.Errorf("offsets translate's footer lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "before-start:") {
			t.Errorf("the footer explains a status the table does not show:\n%s", out)
		}
	})
}

// TestTablesFitTheTerminal: through the command line, with an 80- or
// 60-column terminal ($COLUMNS when the output is not one), no table line is
// wider than the terminal and a long topic is never cut; on a pipe without
// $COLUMNS nothing is shortened.
func TestTablesFitTheTerminal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "drctl.yaml")
	yaml := "name: t\nclusters:\n  east:\n    bootstrap: [127.0.0.1:1]\n  west:\n    bootstrap: [127.0.0.1:2]\n" +
		"active: east\nstandby: west\nmirror:\n  topics: {include: [orders, \"" + longTopic + "\"]}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cols := range []int{80, 60} {
		t.Setenv("COLUMNS", strconv.Itoa(cols))
		out, stderr, code := drctl(t, "validate", "-c", path)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		assertFits(t, "validate COLUMNS="+strconv.Itoa(cols), out, cols)
		if !strings.Contains(out, longTopic) {
			t.Errorf("COLUMNS=%d: the topic %s was cut:\n%s", cols, longTopic, out)
		}
	}
	t.Setenv("COLUMNS", "")
	out, _, _ := drctl(t, "validate", "-c", path)
	if strings.Contains(out, "…") || strings.ContainsAny(out, "│┌") {
		t.Errorf("a pipe got shortened or boxed output:\n%s", out)
	}
}

// TestWriteWrapped: a line wraps between words at the width, its
// continuation indented, and the spaces it begins with are kept.
func TestWriteWrapped(t *testing.T) {
	var b bytes.Buffer
	if err := writeWrapped(&tableOut{Writer: &b, width: 30}, "    ", "  - mirror lag 2 records (0.0s): the drain copies them"); err != nil {
		t.Fatal(err)
	}
	want := "  - mirror lag 2 records\n    (0.0s): the drain copies\n    them\n"
	if b.String() != want {
		t.Errorf("got\n%q, want\n%q", b.String(), want)
	}
}

// TestWrapKeepsCommandsWhole: a command in backticks is not broken over
// lines when it fits one, so it can be copied; one that does not fit
// breaks between words.
func TestWrapKeepsCommandsWhole(t *testing.T) {
	got := wrapWords("the copy is kept; run `drctl mirror reseed-topic customers --salvage --yes` (keep the old records)", 60)
	want := []string{"the copy is kept; run", "`drctl mirror reseed-topic customers --salvage --yes` (keep", "the old records)"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	got = wrapWords("run `drctl mirror reseed-topic customers --salvage --yes` now", 30)
	for _, l := range got {
		if utf8.RuneCountInString(l) > 30 {
			t.Errorf("a %d-rune line %q from a command longer than the width", utf8.RuneCountInString(l), l)
		}
	}
}
