package tui

import (
	"errors"
	"strings"
	"testing"
)

// TestUnknownRolesRefuseEveryAction: with no cluster answering, the roles
// are "unknown" and no key plans, resumes, syncs or drills on them (never
// a cluster named "unknown"); when the clusters come back, the refusal
// leaves the status line.
func TestUnknownRolesRefuseEveryAction(t *testing.T) {
	m := fixtureModel(80, 24, false)
	m.Update(snapshotMsg{scenarioBothDown()})
	for _, k := range []string{"f", "F", "b", "R", "s", "d"} {
		_, cmd := m.Update(key(k))
		if cmd != nil || m.dialog != nil {
			t.Fatalf("%s started something with the roles unknown", k)
		}
		if !strings.Contains(m.flash, "the live roles are unknown") || strings.Contains(m.flash, `"unknown"`) {
			t.Fatalf("%s: flash %q", k, m.flash)
		}
	}
	v := m.View()
	for _, want := range []string{"READY TO FAIL OVER? UNKNOWN", "roles UNKNOWN", "the live roles are unknown"} {
		if !strings.Contains(v, want) {
			t.Fatalf("the screen does not say %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "READY TO FAIL OVER? READY") {
		t.Fatalf("READY with both clusters down:\n%s", v)
	}
	m.Update(snapshotMsg{scenarioSteady()})
	if m.flash != "" || strings.Contains(m.View(), "the live roles are unknown") {
		t.Fatalf("the refusal stayed after the clusters came back: %q", m.flash)
	}
}

// TestStaleErrorLeavesWhenClustersChange: an action's error about the
// clusters as they were leaves the status line once a refresh shows them
// otherwise, and stays while they are the same.
func TestStaleErrorLeavesWhenClustersChange(t *testing.T) {
	m := fixtureModel(80, 24, false)
	m.Update(snapshotMsg{scenarioClusterDown()})
	m.Update(planMsg{what: "unplanned failover", err: errors.New("west: cannot connect")})
	if !strings.Contains(m.flash, "cannot connect") {
		t.Fatalf("flash %q", m.flash)
	}
	m.Update(snapshotMsg{scenarioClusterDown()})
	if !strings.Contains(m.flash, "cannot connect") {
		t.Fatal("the error left although the clusters did not change")
	}
	m.Update(snapshotMsg{scenarioSteady()})
	if m.flash != "" {
		t.Fatalf("the error stayed after east came back: %q", m.flash)
	}
}

// TestEnterOnAGroupWithRolesUnknown: no translation is started on roles
// nobody read.
func TestEnterOnAGroupWithRolesUnknown(t *testing.T) {
	m := fixtureModel(80, 24, false)
	snap := scenarioBothDown()
	snap.Status.Groups = scenarioSteady().Status.Groups
	m.Update(snapshotMsg{snap})
	m.Update(key("3"))
	if _, cmd := m.Update(key("enter")); cmd != nil || m.groups.open != "" || !strings.Contains(m.flash, "roles are unknown") {
		t.Fatalf("enter on a group with the roles unknown: cmd %v, open %q, flash %q", cmd != nil, m.groups.open, m.flash)
	}
}
