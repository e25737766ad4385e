package failover

import (
	"context"
	"fmt"

	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

// Preflight runs the preflight step of plan p alone, as its run would, and
// changes nothing: drills use it to prove that a failover could start now.
func Preflight(ctx context.Context, topo *topology.Topology, p *plans.Plan) (plans.Result, error) {
	for _, s := range p.Steps {
		if s.Name != StepPreflight {
			continue
		}
		pp, err := preflightStep.Params(s)
		if err != nil {
			return plans.Result{}, err
		}
		return preflight(ctx, topo, pp)
	}
	return plans.Result{}, fmt.Errorf("plan %s has no %s step", p.ID, StepPreflight)
}
