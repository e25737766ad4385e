package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/linkstate"
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

// TestStatusTextProof: the mirror verifier's record is a line under the
// mirror: the records compared, or the standby differing with the first
// partition and how to see the differences.
func TestStatusTextProof(t *testing.T) {
	st := &inspect.Status{Topology: "t", Mirror: &linkstate.State{Link: "east->west", Running: true, Workers: 1}}
	for _, c := range []struct {
		proof *linkstate.ProofSummary
		want  string
	}{
		{nil, ""},
		{&linkstate.ProofSummary{Partitions: 2, Records: 40}, "PROOF: no difference in 40 records the mirror's verifier compared on 2 partition(s)"},
		{&linkstate.ProofSummary{Partitions: 2, Records: 40, Differences: 1, Differing: []linkstate.Proof{{Topic: "orders", Partition: 1, Differences: 1, FirstDifference: "unexpected: source offset -1, standby offset 20"}}},
			"PROOF: THE STANDBY DIFFERS: 1 difference(s) on 1 partition(s), first orders/1 (unexpected: source offset -1, standby offset 20); drctl verify --topic orders --partition 1 shows them"},
	} {
		st.Mirror.Proof = c.proof
		var b bytes.Buffer
		if err := statusTables(&b, st); err != nil {
			t.Fatal(err)
		}
		out := strings.Join(strings.Fields(b.String()), " ")
		if c.want == "" && strings.Contains(out, "PROOF") || c.want != "" && !strings.Contains(out, c.want) {
			t.Errorf("proof %+v: want %q in:\n%s", c.proof, c.want, b.String())
		}
	}
}
