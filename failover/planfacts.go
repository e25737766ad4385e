package failover

import (
	"fmt"

	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/plans"
)

// What the front-ends ask of a plan, answered here so that none of them
// decodes the plan's inputs or applies rules of its own.

// ConfirmName is the name of the cluster an operator types to run plan p:
// the cluster that becomes the active in a failover or failback, the
// cluster that is wiped in a reseed (the one whose data the run destroys).
func ConfirmName(p *plans.Plan) (string, error) {
	in, err := inputsOf(p)
	if err != nil {
		return "", err
	}
	name := in.To
	if p.Kind == string(rolestate.RunReseed) {
		name = in.From
	}
	if name == "" {
		return "", fmt.Errorf("plan %s names no cluster to confirm; plan again", p.ID)
	}
	return name, nil
}

// Forced returns the refusal the operator forced plan p past (--force or
// --force-unplanned), and whether there was one.
func Forced(p *plans.Plan) (reason string, forced bool) {
	in, err := inputsOf(p)
	if err != nil || !in.Force {
		return "", false
	}
	return in.ForceReason, true
}

// IsUnplanned reports whether plan p is an unplanned failover (the old
// active is not drained; what never left it is reported as the RPO).
func IsUnplanned(p *plans.Plan) bool {
	in, err := inputsOf(p)
	return err == nil && in.Unplanned
}

func inputsOf(p *plans.Plan) (Inputs, error) {
	var in Inputs
	if p == nil {
		return in, fmt.Errorf("no plan")
	}
	return in, p.DecodeInputs(&in)
}
