// Package failover builds and runs the plans that move the active role
// between the two clusters of a topology (failover, failback), rebuild a
// stale cluster as the new standby (reseed), and fence or unfence a
// cluster. It also produces the status snapshot and validation report the
// front-ends render. Every step it runs is idempotent, so a run killed at
// any point can be resumed, from this or another machine, with the same
// end state.
package failover

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/topology"
)

// ErrUnreachable wraps every failure to reach a cluster a step needs.
var ErrUnreachable = kafkaconn.ErrUnreachable

// world holds connections to the clusters of a topology for one step.
type world struct {
	topo    *topology.Topology
	clients map[string]sarama.Client
	errs    map[string]error
}

// connect dials the named clusters at once; a cluster that cannot be
// reached is recorded, not fatal.
func connect(ctx context.Context, topo *topology.Topology, names ...string) *world {
	if len(names) == 0 {
		names = topo.ClusterNames()
	}
	w := &world{topo: topo, clients: map[string]sarama.Client{}, errs: map[string]error{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := kafkaconn.Dial(ctx, topo.Clusters[name], nil)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				w.errs[name] = err
				return
			}
			w.clients[name] = cl
		}()
	}
	wg.Wait()
	return w
}

func (w *world) close() {
	for _, c := range w.clients {
		_ = c.Close()
	}
}

// need returns the client of name or its connection error.
func (w *world) need(name string) (sarama.Client, error) {
	if c, ok := w.clients[name]; ok {
		return c, nil
	}
	if err, ok := w.errs[name]; ok {
		return nil, err
	}
	return nil, fmt.Errorf("cluster %s: %w: not connected", name, ErrUnreachable)
}

// view resolves the live roles from the reachable clusters.
func (w *world) view(ctx context.Context) rolestate.View {
	return rolestate.Resolve(ctx, w.topo, w.clients)
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
		client, err := w.need(name)
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

var errNoClusters = errors.New("no cluster reachable")
