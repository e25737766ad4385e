package kafkaconn_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// countingListener counts the TCP connections a kfake broker accepts.
type countingListener struct {
	net.Listener
	accepted *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

func countConnections(n *atomic.Int64) kfake.Opt {
	return kfake.ListenFn(func(network, addr string) (net.Listener, error) {
		l, err := net.Listen(network, addr)
		if err != nil {
			return nil, err
		}
		return countingListener{l, n}, nil
	})
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestClustersDialsEachClusterOnce opens a session with both clusters and
// asks for them repeatedly: no cluster is connected to again, and Close
// closes every client.
func TestClustersDialsEachClusterOnce(t *testing.T) {
	var accepted atomic.Int64 // both clusters count into it
	p := kfaketest.NewPair(t, kfaketest.Options{ClusterOpts: []kfake.Opt{countConnections(&accepted)}})
	ctx := ctxT(t, 20*time.Second)

	s := kafkaconn.Open(ctx, p.Topology)
	defer s.Close()
	clients := map[string]sarama.Client{}
	for _, name := range []string{"east", "west"} {
		c, err := s.Need(name)
		if err != nil {
			t.Fatalf("Need(%s): %v", name, err)
		}
		if _, err := c.Topics(); err != nil { // use the connection
			t.Fatalf("%s: topics: %v", name, err)
		}
		clients[name] = c
	}
	dialled := accepted.Load()
	if dialled == 0 {
		t.Fatal("no connection counted: the listener hook is not in place")
	}

	s.Connect(ctx)
	s.Connect(ctx, "west", "east")
	for _, name := range []string{"east", "west", "east"} {
		c, err := s.Need(name)
		if err != nil || c != clients[name] {
			t.Fatalf("Need(%s) again = %v, %v; want the session's first client", name, c, err)
		}
		if _, err := c.Topics(); err != nil {
			t.Fatal(err)
		}
	}
	if got := accepted.Load(); got != dialled {
		t.Errorf("connections: %d after the first dial, %d after asking again; want no new connection", dialled, got)
	}
	if got := len(s.Clients()); got != 2 {
		t.Errorf("Clients() holds %d clients; want 2", got)
	}

	s.Close()
	for name, c := range clients {
		if !c.Closed() {
			t.Errorf("client of %s still open after Close", name)
		}
		if _, err := s.Need(name); !errors.Is(err, kafkaconn.ErrUnreachable) {
			t.Errorf("Need(%s) after Close = %v; want not connected", name, err)
		}
	}
	s.Close() // a second Close is harmless
}

// TestClustersUnreachable: a cluster that does not answer is recorded with
// an error naming it, the other cluster is served, and asking again does
// not dial again (it returns the same error at once).
func TestClustersUnreachable(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{})
	p.Stop("west")
	ctx := ctxT(t, 20*time.Second)

	s := kafkaconn.Open(ctx, p.Topology, "east", "west")
	defer s.Close()
	if _, err := s.Need("east"); err != nil {
		t.Fatalf("Need(east): %v", err)
	}
	_, err := s.Need("west")
	if !errors.Is(err, kafkaconn.ErrUnreachable) || !strings.Contains(err.Error(), "cluster west (") {
		t.Fatalf("Need(west) = %v; want an unreachable error naming west", err)
	}
	start := time.Now()
	s.Connect(ctx)
	if d := time.Since(start); d > time.Second {
		t.Errorf("Connect took %v: it dialled the unreachable cluster again", d)
	}
	if _, again := s.Need("west"); again == nil || again.Error() != err.Error() {
		t.Errorf("Need(west) again = %v; want the first error %v", again, err)
	}
	if errs := s.Errors(); len(errs) != 1 || errs["west"] == nil {
		t.Errorf("Errors() = %v; want west only", errs)
	}
	if _, err := s.Need("north"); !errors.Is(err, kafkaconn.ErrUnreachable) || !strings.Contains(err.Error(), "not connected") {
		t.Errorf("Need(north) = %v; want not connected", err)
	}
}

// TestClustersOnlyNamed dials only the clusters named; another is dialled
// when a later Connect names it.
func TestClustersOnlyNamed(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{})
	ctx := ctxT(t, 20*time.Second)
	s := kafkaconn.Open(ctx, p.Topology, "east")
	defer s.Close()
	if _, err := s.Need("west"); err == nil || !strings.Contains(err.Error(), "not connected") {
		t.Fatalf("Need(west) before it was dialled = %v; want not connected", err)
	}
	s.Connect(ctx, "west")
	if _, err := s.Need("west"); err != nil {
		t.Fatalf("Need(west) after Connect: %v", err)
	}
}

func TestIdempotentProducerPreset(t *testing.T) {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	kafkaconn.IdempotentProducer(cfg)
	if !cfg.Producer.Idempotent || cfg.Net.MaxOpenRequests != 1 || cfg.Producer.RequiredAcks != sarama.WaitForAll ||
		!cfg.Producer.Return.Successes || cfg.Producer.Retry.Max != kafkaconn.ProducerRetries || cfg.Producer.Retry.Backoff != kafkaconn.ProducerRetryBackoff {
		t.Fatalf("preset = %+v", cfg.Producer)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the preset does not validate: %v", err)
	}
	cfg.Producer.Transaction.ID = "drctl.test"
	kafkaconn.ManualPartitions(cfg)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the preset with a transactional id does not validate: %v", err)
	}
}

// TestClustersRedialOnlyTheFailed: a run's session redials a cluster that
// was down when it started, once it is back, and never the cluster it
// reaches; a cluster that failed is not dialled again before RedialEvery
// (each dial of a cluster that is down costs its timeout).
func TestClustersRedialOnlyTheFailed(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Persist: true})
	p.Stop("west")
	ctx := ctxT(t, 30*time.Second)
	s := kafkaconn.Open(ctx, p.Topology)
	defer s.Close()
	if _, err := s.Need("west"); err == nil {
		t.Fatal("west answers while stopped")
	}
	east, err := s.Need("east")
	if err != nil {
		t.Fatal(err)
	}
	p.Restart(t, "west")
	s.Redial(ctx)
	if _, err := s.Need("west"); err == nil {
		t.Fatal("Redial dialled west again right after it failed")
	}
	defer func(old time.Duration) { kafkaconn.RedialEvery = old }(kafkaconn.RedialEvery)
	kafkaconn.RedialEvery = 0
	s.Redial(ctx)
	if _, err := s.Need("west"); err != nil {
		t.Fatalf("Need(west) after it came back and Redial: %v", err)
	}
	if again, _ := s.Need("east"); again != east {
		t.Error("Redial replaced the client of east, which it reached")
	}
}
