package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/rolestate"
)

// TestStatusTextFenceAndStep: the status text says per cluster whether
// drctl's fence is in place and whether drctl may put it there, and a run
// in progress at its real step, counted from 1 as runs print their steps.
func TestStatusTextFenceAndStep(t *testing.T) {
	yes, no := true, false
	st := &inspect.Status{Topology: "t"}
	st.Roles.Active, st.Roles.Standby, st.Roles.Epoch, st.Roles.Phase = "west", "east", 3, "failing-over"
	st.Roles.Run = &rolestate.Run{ID: "failover-1", Kind: rolestate.RunFailover, Step: 4, By: "ops@host", StartedAt: time.Unix(0, 0).UTC()}
	st.Clusters = []inspect.ClusterStatus{
		{Name: "east", Role: "standby", Reachable: true, Fenced: &yes, FencePermitted: &yes, StateEpoch: 3},
		{Name: "west", Role: "active", Reachable: true, Fenced: &no, FencePermitted: &no, StateEpoch: 3},
		{Name: "north", Role: "-", Reachable: false, StateEpoch: -1},
	}
	var b bytes.Buffer
	if err := statusTables(&b, st); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "failover failover-1 (at step 5,") {
		t.Errorf("the run's step is not the 1-based step 5:\n%s", out)
	}
	for name, want := range map[string]string{"east": "IN PLACE", "west": "none (drctl may not Alter ACLs", "north": "-"} {
		var row string
		for line := range strings.SplitSeq(out, "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] == name {
				row = line
				break
			}
		}
		if !strings.Contains(row, want) {
			t.Errorf("cluster %s row %q lacks fence %q:\n%s", name, row, want, out)
		}
	}
}
