package failover

import (
	"context"
	"fmt"

	"github.com/drctl/drctl/inspect"

	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

// StepRPO reports, in an unplanned failover, what never left the old
// active (inspect.MeasureRPO); inspect reads its output from run records.
const StepRPO = inspect.StepRPO

func rpoAction(topo *topology.Topology) plans.ActionFunc {
	return func(ctx context.Context, s plans.Step, _ *plans.RunContext) (plans.Result, error) {
		var p linkParams
		if err := s.DecodeParams(&p); err != nil {
			return plans.Result{}, err
		}
		rep, err := inspect.MeasureRPO(ctx, topo, p.Source, p.Target)
		if err != nil {
			return plans.Result{}, err
		}
		return plans.NewResult(fmt.Sprintf("RPO: %d record(s) over %d partition(s), up to %.1fs, never reached %s; they are salvaged when %s comes back",
			rep.Records, rep.Lagging(), rep.MaxSeconds, p.Target, p.Source), rep)
	}
}
