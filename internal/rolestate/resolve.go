package rolestate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/topology"
)

// SourceTopologyFile is View.Source when no cluster holds state.
const SourceTopologyFile = "topology file"

// View is the role state of a topology as reconciled from both clusters.
type View struct {
	// Current is the state that wins: the highest epoch any reachable
	// cluster holds, or the topology file's home roles (Initial) when
	// none holds state. While a cluster is unreachable, Current may be
	// behind what that cluster holds.
	Current State `json:"current"`
	// Source names the cluster Current was read from, or is
	// SourceTopologyFile.
	Source string `json:"source"`
	// Clusters holds what each cluster of the topology said.
	Clusters map[string]ClusterState `json:"clusters"`
	// Lost, when set, says that no cluster holds role state although the
	// clusters show a past failover: the home roles of the file are then
	// not the live ones, and nothing may act on them (see LostState).
	Lost string `json:"lost,omitempty"`
}

// ClusterState is what one cluster holds.
type ClusterState struct {
	// Reachable is false when there was no client for the cluster or its
	// state could not be read; Err then says why, naming the cluster.
	Reachable bool   `json:"reachable"`
	Err       string `json:"error,omitempty"`
	// Found is false when the cluster holds no state for the topology.
	Found bool  `json:"found"`
	State State `json:"state"`
	// Stale is set when the cluster is reachable and behind Current: it
	// holds a lower epoch, or no state while another cluster holds some.
	Stale bool `json:"stale"`
}

// Epoch is the epoch the cluster holds: 0 when it holds no state. It is
// the expected epoch for a compare-and-set on that cluster.
func (c ClusterState) Epoch() int64 { return epochOf(c.State, c.Found) }

// AllReachable reports whether every cluster of the topology was read.
func (v View) AllReachable() bool {
	for _, c := range v.Clusters {
		if !c.Reachable {
			return false
		}
	}
	return true
}

// Resolve reads the topology's state from every cluster concurrently, each
// read bounded by ctx, and reconciles them: the highest epoch wins; of
// equal epochs, the later UpdatedAt, then the cluster name first in order.
// clients maps cluster names to clients; a missing or nil client, or a read
// that fails, makes the cluster unreachable. Resolve itself cannot fail: the
// View records every cluster's outcome.
func Resolve(ctx context.Context, topo *topology.Topology, clients map[string]sarama.Client) View {
	names := topo.ClusterNames()
	states := make([]ClusterState, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			client := clients[name]
			if client == nil {
				states[i] = ClusterState{Err: fmt.Sprintf("cluster %s: not connected", name)}
				return
			}
			s, found, err := Read(ctx, client, topo.Name)
			if err == nil {
				states[i] = ClusterState{Reachable: true, Found: found, State: s}
				return
			}
			msg := fmt.Sprintf("cluster %s: %v", name, err)
			if errors.Is(err, context.DeadlineExceeded) {
				msg = fmt.Sprintf("cluster %s: no answer in time: %v", name, err)
			}
			states[i] = ClusterState{Err: msg}
		})
	}
	wg.Wait()

	v := reconcile(topo, names, states)
	if v.Source == SourceTopologyFile {
		v.Lost = lostState(ctx, topo, clients)
	}
	return v
}

// lostState looks, when no cluster holds role state, for the trace of a
// past failover: the topics of the mirror link into the home active
// (standby -> active), which only a run that made the standby active
// creates. With them present the state was deleted (by hand or a clean-up
// script), and the file's home roles may be the wrong way round: it returns
// what it found and the fix; "" when there is no such trace, or the home
// active cannot be asked.
func lostState(ctx context.Context, topo *topology.Topology, clients map[string]sarama.Client) string {
	c := clients[topo.Active]
	if c == nil {
		return ""
	}
	back := topo.Link(topo.Standby, topo.Active)
	topics, err := c.Topics()
	if err != nil {
		return ""
	}
	for _, t := range topics {
		if slices.Contains(back.InternalTopics(), t) {
			return fmt.Sprintf("the role state (%s) is missing on both clusters, yet %s holds %s, a topic of the mirror link %s that only a failover to %s creates: "+
				"%s may be the live active, and drctl will not guess (the mirror, group sync and every run refuse to act). "+
				"Find which cluster the applications use, then restore the roles with drctl roles restore --active CLUSTER",
				topology.StateTopic, topo.Active, t, back, topo.Standby, topo.Standby)
		}
	}
	return ""
}

// ErrLost is the refusal of an action while View.Lost is set.
var ErrLost = errors.New("the live roles are lost")

// reconcile picks the winning state among what the clusters (names, in
// order) said and marks the clusters behind it.
func reconcile(topo *topology.Topology, names []string, states []ClusterState) View {
	v := View{Current: Initial(topo), Source: SourceTopologyFile, Clusters: make(map[string]ClusterState, len(names))}
	best := -1
	for i, cs := range states {
		if !cs.Found {
			continue
		}
		if best < 0 || newer(cs.State, states[best].State) {
			best = i
		}
	}
	if best >= 0 {
		v.Current, v.Source = states[best].State, names[best]
	}
	for i, cs := range states {
		cs.Stale = cs.Reachable && best >= 0 && (!cs.Found || cs.State.Epoch < v.Current.Epoch)
		v.Clusters[names[i]] = cs
	}
	return v
}

// newer reports whether a wins over b: a higher epoch, or the same epoch
// written later.
func newer(a, b State) bool {
	if a.Epoch != b.Epoch {
		return a.Epoch > b.Epoch
	}
	return a.UpdatedAt.After(b.UpdatedAt)
}

// ErrNoneReachable is returned by ResolveLive when no cluster of the
// topology could be dialled.
var ErrNoneReachable = errors.New("no cluster reachable")

// ResolveLive resolves the live roles through a command's session: it
// dials every cluster of the session's topology that the session has not
// dialled yet (at most once each), then reads and reconciles the state as
// Resolve does. The View is complete even on error; the error, wrapping
// ErrNoneReachable and naming each cluster's failure, says that no cluster
// could be dialled, so Current is only the topology file's home roles.
func ResolveLive(ctx context.Context, clusters *kafkaconn.Clusters) (View, error) {
	clusters.Connect(ctx)
	topo := clusters.Topology()
	clients := clusters.Clients()
	v := Resolve(ctx, topo, clients)
	if len(clients) > 0 {
		return v, nil
	}
	errs := clusters.Errors()
	var why []string
	for _, name := range topo.ClusterNames() {
		if err := errs[name]; err != nil {
			why = append(why, err.Error())
		}
	}
	return v, fmt.Errorf("%w: %s", ErrNoneReachable, strings.Join(why, "; "))
}
