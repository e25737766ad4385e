package failover

import (
	"context"
	"fmt"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/topology"
)

// world is a step's view of the session with the clusters of a topology
// (kafkaconn.Clusters, each cluster dialled at most once), with the
// clients of the reachable ones it asked for at hand.
type world struct {
	*kafkaconn.Clusters
	topo    *topology.Topology
	clients map[string]sarama.Client
}

// within is a world over the command's (or the run's) session: the named
// clusters (all when none is named) that the session does not reach yet
// are dialled again, the others are used as they are, and Close leaves the
// session open.
func within(ctx context.Context, session *kafkaconn.Clusters, names ...string) *world {
	session.Redial(ctx, names...)
	clients := session.Clients()
	if len(names) > 0 {
		named := map[string]sarama.Client{}
		for _, n := range names {
			if c, ok := clients[n]; ok {
				named[n] = c
			}
		}
		clients = named
	}
	return &world{Clusters: session, topo: session.Topology(), clients: clients}
}

// Close does nothing: the clients belong to the session, which its owner
// closes.
func (w *world) Close() {}

// view resolves the live roles from the reachable clusters.
func (w *world) view(ctx context.Context) rolestate.View {
	v, _ := rolestate.ResolveLive(ctx, w.Clusters)
	return v
}

// sameState reports whether a stored state is the intended one (ignoring
// the stamp of who wrote it and when).
func sameState(a, b rolestate.State) bool {
	if a.Epoch != b.Epoch || a.Active != b.Active || a.Standby != b.Standby || a.Phase != b.Phase {
		return false
	}
	if (a.Run == nil) != (b.Run == nil) {
		return false
	}
	return a.Run == nil || a.Run.ID == b.Run.ID
}

// transition moves the role state of each named cluster, in order, to
// next: a cluster that already holds next is left alone (so a re-run step
// does nothing twice); one that holds an epoch below next's is
// compare-and-set from the epoch it holds, provided it holds one of the
// allowed predecessors; anything else means the world moved under the
// plan (ErrStale). A state that belongs to run runID may be replaced at
// the same epoch (a phase change within the run).
func (w *world) transition(ctx context.Context, next rolestate.State, runID string, clusters ...string) error {
	for _, name := range clusters {
		client, err := w.Need(name)
		if err != nil {
			return err
		}
		cur, found, err := rolestate.Read(ctx, client, w.topo.Name)
		if err != nil {
			return fmt.Errorf("cluster %s: read role state: %w", name, err)
		}
		if !found {
			cur = rolestate.Initial(w.topo)
		}
		if sameState(cur, next) {
			continue
		}
		ours := cur.Run != nil && cur.Run.ID == runID
		if cur.Epoch > next.Epoch || (cur.Epoch == next.Epoch && !ours) {
			return fmt.Errorf("cluster %s: %w: it holds %s, the run wants %s; run drctl status and plan again", name, rolestate.ErrStale, cur, next)
		}
		if cur.Run != nil && !ours {
			return fmt.Errorf("cluster %s: %w: run %s is in progress there (drctl resume %s finishes it)", name, rolestate.ErrStale, cur.Run.ID, cur.Run.ID)
		}
		cfg := *client.Config()
		if err := rolestate.CompareAndSet(ctx, client, &cfg, cur.Epoch, next); err != nil {
			return fmt.Errorf("cluster %s: %w", name, err)
		}
	}
	return nil
}
