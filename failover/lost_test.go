package failover

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// TestLostRoleStateRefusesToAct: after a failover to west, both
// __drctl_state topics are deleted (by hand, or a clean-up script). drctl
// must not take the file's home roles (east active) for the live ones:
// status says the roles are unknown and how to restore them, without
// advice that would delete west's topics; a plan is refused; drctl state
// restore --active west writes the roles back above every epoch the runs
// wrote, and then status and plans follow west again.
func TestLostRoleStateRefusesToAct(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: fenceNoneYAML})
	topo := p.Topology
	seedOrders(t, topo)
	startMirror(t, topo, "east", "west")
	waitMirrored(t, topo, "east", "west")
	plan := planTo(t, topo, "west")
	if err := Execute(kfaketest.Ctx(t, 2*time.Minute), kfaketest.Session(t, topo), plan, RunOptions{JournalDir: t.TempDir(), Yes: true}); err != nil {
		t.Fatalf("failover: %v", err)
	}
	wantSteadyWest(t, p)
	before, _, _ := rolestate.Read(kfaketest.Ctx(t, 10*time.Second), kfaketest.Dial(t, topo, "west"), topo.Name)
	for _, c := range []string{"east", "west"} {
		if err := kfaketest.Admin(t, kfaketest.Dial(t, topo, c)).DeleteTopic(topology.StateTopic); err != nil {
			t.Fatalf("delete the state topic on %s: %v", c, err)
		}
	}

	st, _ := inspect.CollectStatus(kfaketest.Ctx(t, 20*time.Second), kfaketest.Session(t, topo))
	problems := strings.Join(st.Problems, "\n")
	if st.Roles.Active != inspect.RoleUnknown || st.Readiness.Level != inspect.Unknown {
		t.Errorf("status roles %+v, readiness %s; want unknown", st.Roles, st.Readiness.Level)
	}
	if !strings.Contains(problems, "drctl roles restore --active CLUSTER") || strings.Contains(problems, "reseed-topic") {
		t.Errorf("status problems:\n%s\nwant how to restore the roles, and no advice to reseed a topic", problems)
	}
	_, err := PlanFailover(kfaketest.Ctx(t, 20*time.Second), kfaketest.Session(t, topo), FailoverRequest{To: "west"})
	if !errors.Is(err, rolestate.ErrLost) {
		t.Errorf("a plan with the roles lost: %v; want a refusal", err)
	}

	got, err := RestoreState(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), "west")
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	if got.Active != "west" || got.Standby != "east" || got.Epoch <= before.Epoch {
		t.Errorf("restored %s; want west active above epoch %d", got, before.Epoch)
	}
	wantSteadyWest(t, p)
	if _, err := RestoreState(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), "east"); !errors.Is(err, ErrNothingToRestore) {
		t.Errorf("a second restore: %v; want nothing to restore", err)
	}
	st, _ = inspect.CollectStatus(kfaketest.Ctx(t, 20*time.Second), kfaketest.Session(t, topo))
	if st.Roles.Active != "west" {
		t.Errorf("status after the restore: %+v", st.Roles)
	}
}
