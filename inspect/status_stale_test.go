package inspect

import (
	"strings"
	"testing"

	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestStaleProblemSaysWhy: a cluster that holds no role state while the
// other holds one was rebuilt (or lost drctl's internal topics), not left
// behind by a failover, and status says so; the advice depends on its role,
// because only the standby can be re-seeded.
func TestStaleProblemSaysWhy(t *testing.T) {
	topo := kfaketest.NewPair(t, kfaketest.Options{}).Topology
	cur := rolestate.State{Epoch: 2, Active: "east", Standby: "west", Phase: rolestate.PhaseSteady}
	views := map[string]*clusterView{"east": {}, "west": {}}
	problem := func(source string, clusters map[string]rolestate.ClusterState, want string) string {
		t.Helper()
		st := assemble(topo, views, rolestate.View{Current: cur, Source: source, Clusters: clusters})
		for _, p := range st.Problems {
			if strings.Contains(p, "cluster "+want+" ") {
				return p
			}
		}
		t.Fatalf("no problem about %s: %q", want, st.Problems)
		return ""
	}
	holds := rolestate.ClusterState{Reachable: true, Found: true, State: cur}

	older := cur
	older.Epoch = 1
	p := problem("east", map[string]rolestate.ClusterState{"east": holds, "west": {Reachable: true, Found: true, State: older, Stale: true}}, "west")
	if !strings.Contains(p, "a failover happened without it") || !strings.Contains(p, "drctl reseed west") {
		t.Errorf("older state: %q", p)
	}

	p = problem("east", map[string]rolestate.ClusterState{"east": holds, "west": {Reachable: true, Stale: true}}, "west")
	if strings.Contains(p, "a failover happened without it") || !strings.Contains(p, "holds no role state") ||
		!strings.Contains(p, "east holds epoch 2") || !strings.Contains(p, "drctl reseed west") {
		t.Errorf("rebuilt standby: %q", p)
	}

	p = problem("west", map[string]rolestate.ClusterState{"west": holds, "east": {Reachable: true, Stale: true}}, "east")
	if strings.Contains(p, "drctl reseed") || !strings.Contains(p, "active cluster") || !strings.Contains(p, "holds no role state") {
		t.Errorf("rebuilt active: %q", p)
	}
}
