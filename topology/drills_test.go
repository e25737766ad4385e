package topology

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const drillsHead = `name: payments
clusters:
  east: {bootstrap: ["e:9092"]}
  west: {bootstrap: ["w:9092"]}
active: east
standby: west
mirror:
  topics: {include: ["orders"]}
  groups: {include: ["billing"]}
`

func TestParseDrills(t *testing.T) {
	topo, err := Parse("drctl.yaml", []byte(drillsHead+`drills:
  allow_disruptive: true
  stale_after: 25h
  named:
    nightly:
      kind: canary
      schedule: "30 2 * * *"
      time_zone: Europe/Berlin
      params: {records: 20, rate: 10}
      objectives: {rpo_seconds: 30, max_canary_latency: 2s}
    monthly:
      kind: failover
      schedule: "@monthly"
      params: {hold: 5m}
      objectives: {rto_seconds: 120}
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	d := topo.Drills
	if !d.AllowDisruptive || d.StaleAfter != 25*time.Hour || d.CanaryRetention != DefaultCanaryRetention {
		t.Errorf("settings: %+v", d)
	}
	n := d.Named["nightly"]
	if n.Kind != DrillCanary || n.Location.String() != "Europe/Berlin" || n.Params.Records != 20 || n.Params.Rate != 10 ||
		n.Objectives.RPOSeconds != 30 || n.Objectives.MaxCanaryLatency != 2*time.Second || n.Params.Hold != DefaultDrillHold {
		t.Errorf("nightly: %+v", n)
	}
	s, _ := ParseSchedule(n.Schedule, n.Location)
	from := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC) // 02:00 in Berlin (CEST)
	if next := s.Next(from); !next.Equal(time.Date(2026, 6, 1, 0, 30, 0, 0, time.UTC)) {
		t.Errorf("next run of 02:30 Berlin after %v = %v", from, next)
	}
	m := d.Named["monthly"]
	if m.Kind != DrillFailover || m.Params.Hold != 5*time.Minute || m.Objectives.RTOSeconds != 120 || m.Params.Records != DefaultCanaryRecords {
		t.Errorf("monthly: %+v", m)
	}
	if got := d.DrillNames(); strings.Join(got, ",") != "monthly,nightly" {
		t.Errorf("names %v", got)
	}
	// The canary topic and group are mirrored whatever the selection says.
	if !topo.Mirrors(topo.CanaryTopic()) || !topo.SyncsGroup(topo.CanaryGroup()) || topo.Owns(topo.CanaryTopic()) || OwnsGroup(topo.CanaryGroup()) {
		t.Errorf("canary %s / %s not selected", topo.CanaryTopic(), topo.CanaryGroup())
	}
	if topo.Mirror.Topics.Match("other") || len(topo.Mirror.Topics.Include) != 1 {
		t.Errorf("the user's selection changed: %v", topo.Mirror.Topics.Include)
	}
}

func TestParseDrillsErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		line       int
		want       string
	}{
		{"unknown key", "drills:\n  named:\n    a: {kind: canary, shedule: \"* * * * *\"}\n", 12, `unknown key "shedule" in drills.named.a`},
		{"unknown section key", "drills:\n  allow: true\n", 11, `unknown key "allow" in drills`},
		{"bad kind", "drills:\n  named:\n    a: {kind: chaos}\n", 12, `kind "chaos" is not known`},
		{"bad cron", "drills:\n  named:\n    a:\n      schedule: \"61 * * * *\"\n", 13, "is not a cron expression"},
		{"bad zone", "drills:\n  named:\n    a:\n      time_zone: Mars/Olympus\n", 13, "is not a time zone"},
		{"disruptive not allowed", "drills:\n  named:\n    a: {kind: failover}\n", 12, "set drills.allow_disruptive: true"},
		{"records", "drills:\n  named:\n    a:\n      params: {records: 0}\n", 13, "records must be between 1 and 100000"},
		{"negative rpo", "drills:\n  named:\n    a:\n      objectives: {rpo_seconds: -1}\n", 13, "must not be negative"},
		{"bad duration", "drills:\n  stale_after: soon\n", 11, "is not a duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("drctl.yaml", []byte(drillsHead+tc.yaml), env(nil))
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("want *Error, got %v", err)
			}
			if te.Line != tc.line || !strings.Contains(te.Msg, tc.want) {
				t.Errorf("got %v, want line %d containing %q", err, tc.line, tc.want)
			}
		})
	}
}
