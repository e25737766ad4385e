package kafkaconn

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

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
	// failedAt is when each cluster in errs last failed to be dialled.
	failedAt map[string]time.Time
	// producers are the session's bookkeeping producers (Producer).
	producers map[string]sarama.SyncProducer
	closed    bool
}

// RedialEvery is how often Redial dials again a cluster that could not be
// dialled: a cluster that is down costs each dial its timeout, and a run
// that asks for it at every step must not pay that at every step.
var RedialEvery = 10 * time.Second

// Open starts a session with topo and dials the named clusters (every
// cluster of the topology when none is named) concurrently, each bounded
// by ctx.
func Open(ctx context.Context, topo *topology.Topology, names ...string) *Clusters {
	s := New(topo)
	s.Connect(ctx, names...)
	return s
}

// New starts a session with topo that has dialled nothing yet: for a
// command that may not need a cluster at all (shell completion from the
// local journal), or dials only later (Connect, Redial).
func New(topo *topology.Topology) *Clusters {
	return &Clusters{topo: topo, clients: map[string]sarama.Client{}, errs: map[string]error{}, failedAt: map[string]time.Time{},
		producers: map[string]sarama.SyncProducer{}}
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
				s.errs[name], s.failedAt[name] = err, time.Now()
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
// the topology when none is named) whose earlier dial failed at least
// RedialEvery ago, and dials those never dialled; a cluster the session
// reaches is left alone. A long-lived session (a run's) calls it before
// each use, so that a cluster that was down when the run started is used
// once it is back.
func (s *Clusters) Redial(ctx context.Context, names ...string) {
	if len(names) == 0 {
		names = s.topo.ClusterNames()
	}
	s.mu.Lock()
	for _, name := range names {
		if _, failed := s.errs[name]; failed && s.topo.Clusters[name] != nil && time.Since(s.failedAt[name]) >= RedialEvery {
			delete(s.errs, name)
		}
	}
	s.mu.Unlock()
	s.Connect(ctx, names...)
}

// Drop closes and forgets the clients of the named clusters, so that the
// next Connect or Redial dials them anew: for a long-lived session whose
// reads through a cluster's client keep failing (the cluster was rebuilt,
// or its brokers moved). Nobody may be using those clients meanwhile.
func (s *Clusters) Drop(names ...string) {
	s.mu.Lock()
	var closing []sarama.Client
	var stopping []sarama.SyncProducer
	for _, name := range names {
		if c, ok := s.clients[name]; ok {
			closing = append(closing, c)
			delete(s.clients, name)
		}
		if p, ok := s.producers[name]; ok {
			stopping = append(stopping, p)
			delete(s.producers, name)
		}
		delete(s.errs, name)
	}
	s.mu.Unlock()
	for _, p := range stopping {
		_ = p.Close()
	}
	for _, c := range closing {
		_ = c.Close()
	}
}

// Producer returns the session's producer for drctl's own records on
// cluster name (NewSyncProducer with manual partitions), made on first use
// and closed with the session: a command that writes its records many
// times (a run's record at every step) opens its connections once. It
// fails when the cluster is not reached by the session.
func (s *Clusters) Producer(name string) (sarama.SyncProducer, error) {
	if _, err := s.Need(name); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("cluster %s: %w: the session is closed", name, ErrUnreachable)
	}
	if p, ok := s.producers[name]; ok {
		return p, nil
	}
	c := s.topo.Clusters[name]
	p, err := NewSyncProducer(c, ManualPartitions)
	if err != nil {
		return nil, Explain(c, err)
	}
	s.producers[name] = p
	return p, nil
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
	clients, producers := s.clients, s.producers
	s.clients, s.errs, s.failedAt, s.producers, s.closed = map[string]sarama.Client{}, map[string]error{}, map[string]time.Time{}, map[string]sarama.SyncProducer{}, true
	s.mu.Unlock()
	for _, p := range producers {
		_ = p.Close()
	}
	for _, c := range clients {
		_ = c.Close()
	}
}
