package failover

import (
	"context"
	"fmt"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/plans"
)

// CheckFresh refuses a saved plan that went stale since it was made: the
// topology file or the live roles changed (plans.ErrStalePlan, with the
// advice to make a new plan), and one edited after it was made
// (ErrPlanChanged). The plan's own run in progress is not stale:
// Execute finishes it. It changes nothing; an error that wraps
// rolestate.ErrNoneReachable means no cluster could say what the roles are.
// apply calls it before it prints the plan; Execute's guard checks the
// same again before every step.
func CheckFresh(ctx context.Context, clusters *kafkaconn.Clusters, p *plans.Plan) error {
	topo := clusters.Topology()
	var in Inputs
	if err := p.DecodeInputs(&in); err != nil {
		return err
	}
	stale := func(why string) error {
		return fmt.Errorf("%w: plan %s %s; nothing was changed: make a new plan (drctl plan failover --to CLUSTER --out plan.json)", plans.ErrStalePlan, p.ID, why)
	}
	if in.TopologyDigest != topo.Digest {
		return stale("was made from another version of " + topo.Path)
	}
	// An edited plan is refused here too, before it is shown to the
	// operator: its titles need not be what would run.
	if err := verifyPlan(topo, p, in); err != nil {
		return err
	}
	clusters.Connect(ctx)
	v, err := rolestate.ResolveLive(ctx, clusters)
	if err != nil {
		return fmt.Errorf("cannot read the live roles to check plan %s: %w", p.ID, err)
	}
	r := v.Current
	if r.Run != nil && r.Run.ID == p.ID {
		return nil
	}
	if r.Epoch != in.Epoch || r.Active != in.Active || r.Standby != in.Standby || r.Phase != in.Phase {
		return stale(fmt.Sprintf("was made at epoch %d (active %s, %s); the clusters are now at epoch %d (active %s, %s)",
			in.Epoch, in.Active, in.Phase, r.Epoch, r.Active, r.Phase))
	}
	return nil
}
