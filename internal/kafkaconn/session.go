package kafkaconn

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/topology"
)

// Clusters is one command's session with the clusters of a topology: each
// cluster is dialled at most once, however many reads and steps the command
// makes, and every client is closed together by Close.
//
// A cluster that cannot be reached is recorded, not fatal: Need returns its
// error (from Explain, naming the cluster and the fix) each time it is
// asked for. A Clusters is safe for concurrent use.
type Clusters struct {
	topo *topology.Topology

	mu      sync.Mutex
	clients map[string]sarama.Client
	errs    map[string]error
	closed  bool
}

// Open starts a session with topo and dials the named clusters (every
// cluster of the topology when none is named) concurrently, each bounded
// by ctx.
func Open(ctx context.Context, topo *topology.Topology, names ...string) *Clusters {
	s := &Clusters{topo: topo, clients: map[string]sarama.Client{}, errs: map[string]error{}}
	s.Connect(ctx, names...)
	return s
}

// Connect dials, concurrently, the named clusters (every cluster of the
// topology when none is named) that this session has not dialled yet; a
// cluster dialled before, reachable or not, is not dialled again. Names
// that are not clusters of the topology are recorded as unreachable.
func (s *Clusters) Connect(ctx context.Context, names ...string) {
	if len(names) == 0 {
		names = s.topo.ClusterNames()
	}
	s.mu.Lock()
	var todo []string
	for _, name := range names {
		_, ok := s.clients[name]
		_, failed := s.errs[name]
		if !ok && !failed && !slices.Contains(todo, name) {
			todo = append(todo, name)
		}
	}
	closed := s.closed
	s.mu.Unlock()
	if closed || len(todo) == 0 {
		return
	}
	var wg sync.WaitGroup
	for _, name := range todo {
		wg.Go(func() {
			var cl sarama.Client
			err := fmt.Errorf("cluster %s: %w: not a cluster of topology %s", name, ErrUnreachable, s.topo.Name)
			if c := s.topo.Clusters[name]; c != nil {
				cl, err = Dial(ctx, c, nil)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			switch {
			case err != nil:
				s.errs[name] = err
			case s.closed: // Close ran while this dial was under way
				_ = cl.Close()
			default:
				s.clients[name] = cl
			}
		})
	}
	wg.Wait()
}

// Redial dials again, concurrently, the named clusters (every cluster of
// the topology when none is named) whose earlier dial failed, and dials
// those never dialled; a cluster the session reaches is left alone. A
// long-lived session (a run's) calls it before each use, so that a
// cluster that was down when the run started is used once it is back.
func (s *Clusters) Redial(ctx context.Context, names ...string) {
	if len(names) == 0 {
		names = s.topo.ClusterNames()
	}
	s.mu.Lock()
	for _, name := range names {
		if _, failed := s.errs[name]; failed && s.topo.Clusters[name] != nil {
			delete(s.errs, name)
		}
	}
	s.mu.Unlock()
	s.Connect(ctx, names...)
}

// Topology is the topology the session belongs to.
func (s *Clusters) Topology() *topology.Topology { return s.topo }

// Need returns the client of cluster name, or why there is none: the
// error its dial returned (wrapping ErrUnreachable), or that it was never
// dialled. The client belongs to the session: callers must not close it.
func (s *Clusters) Need(name string) (sarama.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[name]; ok {
		return c, nil
	}
	if err, ok := s.errs[name]; ok {
		return nil, err
	}
	return nil, fmt.Errorf("cluster %s: %w: not connected", name, ErrUnreachable)
}

// Clients returns the clients of the reachable clusters, keyed by cluster
// name (a new map each call; the clients belong to the session).
func (s *Clusters) Clients() map[string]sarama.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.clients)
}

// Errors returns why each unreachable cluster could not be dialled, keyed
// by cluster name (a new map each call).
func (s *Clusters) Errors() map[string]error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.errs)
}

// Close closes every client of the session. Need answers "not connected"
// afterwards; Close may be called more than once.
func (s *Clusters) Close() {
	s.mu.Lock()
	clients := s.clients
	s.clients, s.errs, s.closed = map[string]sarama.Client{}, map[string]error{}, true
	s.mu.Unlock()
	for _, c := range clients {
		_ = c.Close()
	}
}
