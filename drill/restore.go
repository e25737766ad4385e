package drill

import (
	"context"
	"fmt"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/topology"
)

// restoreRoles puts the roles back where the newest drill found them when
// that drill was disruptive and stopped (interrupted, failed) with them
// moved and nobody moved them since: a failover to the cluster it found
// active.
// It runs under the caller's lease, before the caller's own drill, and
// returns the refreshed roles and what it did ("" when nothing). A history
// that cannot be read restores nothing.
func restoreRoles(ctx context.Context, topo *topology.Topology, roles rolestate.State, o Options) (rolestate.State, string, error) {
	hist, err := History(ctx, topo, HistoryOptions{JournalDir: o.journalDir()})
	if err != nil || len(hist) == 0 {
		return roles, "", nil
	}
	last := hist[0] // newest first
	// Only roles the drill itself left moved: a drill that did not pass,
	// and no role change written after it stopped (an operator's failover
	// since then is theirs to keep).
	if !topology.DrillKind(last.Kind).Disruptive() || last.Verdict == Pass || last.Active == "" || last.Active == roles.Active ||
		topo.Clusters[last.Active] == nil || roles.UpdatedAt.After(last.FinishedAt) {
		return roles, "", nil
	}
	p, err := failover.PlanFailover(ctx, topo, last.Active, false, last.Active == topo.Active)
	if err != nil {
		return roles, "", fmt.Errorf("drill %s stopped with %s active; plan its restore to %s: %w", last.ID, roles.Active, last.Active, err)
	}
	if err := failover.Execute(ctx, topo, p, failover.RunOptions{JournalDir: o.journalDir(), Yes: true, Out: o.Out}); err != nil {
		return roles, "", fmt.Errorf("drill %s stopped with %s active; its restore to %s (run %s): %w (drctl resume %s finishes it)", last.ID, roles.Active, last.Active, p.ID, err, p.ID)
	}
	now, err := liveRoles(ctx, topo)
	if err != nil {
		return roles, "", err
	}
	return now, fmt.Sprintf("drill %s had stopped with %s active; run %s made %s active again first", last.ID, roles.Active, p.ID, last.Active), nil
}
