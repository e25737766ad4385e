package main

import (
	"encoding/json"
	"net"
	"sync"
	"testing"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// acceptCounter counts the TCP connections each kfake broker accepts,
// keyed by its listen address.
type acceptCounter struct {
	mu sync.Mutex
	n  map[string]int
}

type countingListener struct {
	net.Listener
	c *acceptCounter
}

func (l countingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err == nil {
		l.c.mu.Lock()
		l.c.n[l.Addr().String()]++
		l.c.mu.Unlock()
	}
	return conn, err
}

func (c *acceptCounter) opt() kfake.Opt {
	return kfake.ListenFn(func(network, addr string) (net.Listener, error) {
		l, err := net.Listen(network, addr)
		if err != nil {
			return nil, err
		}
		return countingListener{l, c}, nil
	})
}

func (c *acceptCounter) snapshot(addrs ...[]string) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]int, len(addrs))
	for i, as := range addrs {
		for _, a := range as {
			out[i] += c.n[a]
		}
	}
	return out
}

// TestStatusOneSessionPerCluster: one drctl status, with both clusters
// reachable and every section filled (topics, groups, the link's lag and
// group sync read), opens as many TCP connections to each cluster as a single
// sarama client does for the same reads: it dials each cluster once.
func TestStatusOneSessionPerCluster(t *testing.T) {
	counter := &acceptCounter{n: map[string]int{}}
	p := kfaketest.NewPair(t, kfaketest.Options{ClusterOpts: []kfake.Opt{counter.opt()}})
	east, west := p.East.ListenAddrs(), p.West.ListenAddrs()

	// A topic with records on both sides, so that status compares topics
	// and measures the link's lag.
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Producer.Return.Successes = true
	for _, addrs := range [][]string{east, west} {
		admin, err := sarama.NewClusterAdmin(addrs, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := admin.CreateTopic("orders", &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1}, false); err != nil {
			t.Fatal(err)
		}
		_ = admin.Close()
	}
	prod, err := sarama.NewSyncProducer(east, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "orders", Partition: int32(i % 2), Value: sarama.StringEncoder("x")}); err != nil {
			t.Fatal(err)
		}
	}
	_ = prod.Close()
	before := counter.snapshot(east, west)
	out, stderr, code := drctl(t, "-c", p.Path, "status", "-o", "json", "--timeout", "30s")
	if code != exitOK {
		t.Fatalf("status exit %d: %s\n%s", code, stderr, out)
	}
	var doc struct {
		Topics []struct{ Name string } `json:"topics"`
		Mirror *struct {
			LagRecords int64 `json:"lag_records"`
		} `json:"mirror"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, out)
	}
	if len(doc.Topics) != 1 || doc.Mirror == nil || doc.Mirror.LagRecords != 10 {
		t.Fatalf("status did not read every section (topics %v, mirror %+v):\n%s", doc.Topics, doc.Mirror, out)
	}
	after := counter.snapshot(east, west)
	got := []int{after[0] - before[0], after[1] - before[1]}
	t.Logf("TCP connections accepted during one drctl status: east %d, west %d", got[0], got[1])
	for i, name := range []string{"east", "west"} {
		if got[i] == 0 || got[i] > perClient {
			t.Errorf("drctl status opened %d connections to %s; one session per cluster opens at most %d", got[i], name, perClient)
		}
	}
}

// perClient is what one sarama client of a one-broker cluster opens: the
// bootstrap connection and the connection to the broker by its id.
const perClient = 2
