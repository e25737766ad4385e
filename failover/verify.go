package failover

import (
	"errors"
	"fmt"
	"slices"

	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

// ErrPlanChanged means a plan is not what drctl made from its inputs (it
// was edited after it was made); nothing of it ran.
var ErrPlanChanged = errors.New("the plan was changed after it was made")

// verifyPlan re-derives every step of p (name, title, params, expected
// and intended values, the destructive mark) from its inputs and the
// topology, and refuses any difference, and inputs that contradict
// themselves (a failover whose source is not the active it started from).
// The live state is the guard's to compare with the inputs before each
// step. A plan whose topology digest differs is left to the guard, which
// reports the topology change.
func verifyPlan(topo *topology.Topology, p *plans.Plan, in Inputs) error {
	if in.TopologyDigest != topo.Digest {
		return nil
	}
	fix := replanCommand(p.Kind, in)
	changed := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s; make a new plan with %s", ErrPlanChanged, fmt.Sprintf(format, args...), fix)
	}
	known := func(c string) bool { _, ok := topo.Clusters[c]; return ok }
	switch rolestate.RunKind(p.Kind) {
	case rolestate.RunFailover, rolestate.RunFailback:
		switch {
		case in.From != in.Active || in.To != in.Standby || !known(in.From) || !known(in.To) || in.From == in.To:
			return changed("its inputs fail over from %q to %q, but it was made with %q active and %q standby", in.From, in.To, in.Active, in.Standby)
		case p.Kind == string(rolestate.RunFailback) && (in.To != topo.Active || in.Unplanned):
			return changed("its inputs fail back to %q, the home active is %s", in.To, topo.Active)
		case in.Force && !in.Unplanned:
			return changed("its inputs force a planned failover (only an unplanned one can be forced)")
		}
	case rolestate.RunReseed:
		if in.To != in.Active || in.From != in.Standby || !known(in.From) || in.Unplanned {
			return changed("its inputs re-seed %q from %q, but it was made with %q active and %q standby", in.From, in.To, in.Active, in.Standby)
		}
	default:
		return changed("its kind %q is none drctl makes (failover, failback, reseed)", p.Kind)
	}
	if in.Phase != rolestate.PhaseSteady {
		return changed("its inputs start from phase %s; drctl plans only from steady", in.Phase)
	}
	want := &plans.Plan{FormatVersion: p.FormatVersion, ID: p.ID, Kind: p.Kind, CreatedAt: p.CreatedAt, CreatedBy: p.CreatedBy, Inputs: p.Inputs}
	if err := buildSteps(topo, want, in); err != nil {
		return changed("%v", err)
	}
	if i, what, differ := plans.FirstDifference(p.Steps, want.Steps); differ {
		name := "(none)"
		if i < len(p.Steps) {
			name = p.Steps[i].Name
		}
		return changed("step %d %s: %s", i+1, name, what)
	}
	return nil
}

// replanCommand is the command that makes a fresh plan of the same kind.
func replanCommand(kind string, in Inputs) string {
	switch rolestate.RunKind(kind) {
	case rolestate.RunFailback:
		return "drctl plan failover --to " + in.To + " (or drctl failback)"
	case rolestate.RunReseed:
		return "drctl plan failover, or run drctl reseed " + in.From + " again"
	}
	s := "drctl plan failover --to " + in.To
	if in.Unplanned {
		s += " --unplanned"
	}
	return s
}

// writesState reports whether one of the plan's steps writes s (the
// stored state of a run in progress must be one its own plan writes).
func writesState(p *plans.Plan, s rolestate.State) bool {
	return slices.ContainsFunc(p.Steps, func(st plans.Step) bool {
		var sp stateParams
		if st.DecodeParams(&sp) == nil && sp.State.Topology != "" && sameState(s, sp.State) {
			return true
		}
		var dp drainParams
		return st.DecodeParams(&dp) == nil && dp.Rollback.State.Topology != "" && sameState(s, dp.Rollback.State)
	})
}
