package drill

import (
	"context"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/linkstate"
)

// nextStep is the one command an operator runs after a disruptive drill
// failed, with why, read from the clusters as the drill left them: the run
// it left unfinished is resumed; roles it left moved, or a mirror pause it
// left holding, are put back by drctl resume (it restores what a stopped
// drill left); otherwise nothing is left to undo and status says the rest.
func nextStep(ctx context.Context, clusters *kafkaconn.Clusters, rec *Record) string {
	topo := clusters.Topology()
	roles, err := liveRoles(ctx, clusters)
	if err != nil {
		return fmt.Sprintf("drctl status: the clusters could not be read after the drill (%v)", err)
	}
	if roles.Run != nil {
		return fmt.Sprintf("drctl resume %s: the drill's %s is unfinished (phase %s); resume finishes it and then puts the roles back where the drill found them (%s active)",
			roles.Run.ID, roles.Run.Kind, roles.Phase, rec.Active)
	}
	if id, err := failover.ResumeID(ctx, clusters, ""); err == nil {
		return fmt.Sprintf("drctl resume %s: a cluster still records that run in progress", id)
	}
	if rec.Active != "" && roles.Active != rec.Active {
		return fmt.Sprintf("drctl resume: the drill left %s active (it found %s active); resume puts the roles back", roles.Active, rec.Active)
	}
	holding := false
	_ = withClients(ctx, clusters, func(cs map[string]sarama.Client) error {
		ps, err := linkstate.Pauses(ctx, cs, topo.Name)
		for _, p := range ps {
			holding = holding || (!p.Released && time.Now().Before(p.Until))
		}
		return err
	})
	if holding {
		return "drctl resume: the drill left the mirror paused; resume releases the pause"
	}
	return fmt.Sprintf("drctl status: nothing is left to undo (%s active, as the drill found it); read the reasons below", roles.Active)
}
