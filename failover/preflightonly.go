package failover

import (
	"context"
	"fmt"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/plans"
)

// Preflight runs the preflight step of plan p alone, as its run would, and
// changes nothing: drills use it to prove that a failover could start now.
func Preflight(ctx context.Context, clusters *kafkaconn.Clusters, p *plans.Plan) (plans.Result, error) {
	for _, s := range p.Steps {
		if s.Name != StepPreflight {
			continue
		}
		pp, err := preflightStep.Params(s)
		if err != nil {
			return plans.Result{}, err
		}
		return preflight(ctx, clusters, pp)
	}
	return plans.Result{}, fmt.Errorf("plan %s has no %s step", p.ID, StepPreflight)
}
