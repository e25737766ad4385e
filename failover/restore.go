package failover

import (
	"context"
	"errors"
	"fmt"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/runrecord"
)

// ErrNothingToRestore means a cluster holds role state: there is nothing to
// restore.
var ErrNothingToRestore = errors.New("the role state is there; nothing to restore")

// RestoreState writes the live roles back after the role state was lost
// on both clusters (rolestate.View.Lost): active as the active, the other
// cluster as the standby, phase steady, at an epoch above every one the
// clusters' run records wrote (so that no mirror or run of the time before
// can win over it). The operator names the active: drctl only refuses to
// guess. It needs both clusters, and refuses when either holds state.
func RestoreState(ctx context.Context, clusters *kafkaconn.Clusters, active string) (rolestate.State, error) {
	topo := clusters.Topology()
	if _, ok := topo.Clusters[active]; !ok {
		return rolestate.State{}, fmt.Errorf("no cluster %q in %s; use one of %v", active, topo.Path, topo.ClusterNames())
	}
	w := within(ctx, clusters)
	defer w.Close()
	for _, name := range topo.ClusterNames() {
		if _, err := w.Need(name); err != nil {
			return rolestate.State{}, fmt.Errorf("restoring the roles needs both clusters: %w", err)
		}
	}
	v := w.view(ctx)
	if v.Source != rolestate.SourceTopologyFile {
		return rolestate.State{}, fmt.Errorf("%w: %s holds %s (drctl status shows the roles)", ErrNothingToRestore, v.Source, v.Current)
	}
	epoch := int64(0)
	runs, err := runrecord.List(ctx, w.Clusters)
	if err != nil {
		return rolestate.State{}, fmt.Errorf("read the run records, to restore above their epochs: %w", err)
	}
	for _, r := range runs {
		if r.Plan == nil {
			continue
		}
		for _, s := range r.Plan.Steps {
			var sp stateParams
			if s.DecodeParams(&sp) == nil && sp.State.Epoch > epoch {
				epoch = sp.State.Epoch
			}
		}
	}
	standby := topo.Standby
	if active == topo.Standby {
		standby = topo.Active
	}
	next := rolestate.State{Topology: topo.Name, Epoch: epoch + 1, Active: active, Standby: standby, Phase: rolestate.PhaseSteady}
	if err := w.transition(ctx, next, "", topo.ClusterNames()...); err != nil {
		return rolestate.State{}, err
	}
	return next, nil
}
