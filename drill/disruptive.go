package drill

import (
	"context"
	"fmt"

	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

// Step names of the disruptive drills.
const (
	StepFailover          = "drill-failover"
	StepHold              = "hold"
	StepFailback          = "drill-failback"
	StepUnplannedFailover = "drill-unplanned-failover"
)

func failoverPlan(topo *topology.Topology, d *topology.NamedDrill, id, active, standby string, o Options) (*plans.Plan, *plans.Registry) {
	return notYet(id, d.Kind)
}

func unplannedPlan(topo *topology.Topology, d *topology.NamedDrill, id, active, standby string, o Options) (*plans.Plan, *plans.Registry) {
	return notYet(id, d.Kind)
}

func notYet(id string, kind topology.DrillKind) (*plans.Plan, *plans.Registry) {
	p := plans.New(id, "drill-"+string(kind))
	_ = p.Add(plans.StepSpec{Name: "not-implemented", Title: "The " + string(kind) + " drill"})
	r := plans.NewRegistry()
	_ = r.Register("not-implemented", plans.ActionFunc(func(context.Context, plans.Step, *plans.RunContext) (plans.Result, error) {
		return plans.Result{}, fmt.Errorf("the %s drill is not implemented in this build", kind)
	}))
	return p, r
}
