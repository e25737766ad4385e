package mirror

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

// TestDaemonFollowsRoles: the daemon mirrors east -> west, serves its
// endpoints, and after a role flip (new epoch on both clusters, old link
// fenced) mirrors west -> east without copying back what came from east.
func TestDaemonFollowsRoles(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"orders\"]}"})
	east, west := p.Topology.Clusters["east"], p.Topology.Clusters["west"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, west)
	kfaketest.CreateTopicOn(t, src, "orders", 2, nil)
	send := func(c sarama.SyncProducer, n int, tag string) {
		for i := range n {
			if _, _, err := c.SendMessage(&sarama.ProducerMessage{Topic: "orders", Partition: int32(i % 2), Value: sarama.StringEncoder(tag)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	count := func(cl sarama.Client) (int, map[string]int) {
		n, tags := 0, map[string]int{}
		for part := range int32(2) {
			d, err := readAll(cl, "orders", part)
			if err != nil {
				return -1, nil
			}
			for _, r := range d {
				tags[string(r.Value)]++
			}
			n += len(d)
		}
		return n, tags
	}
	send(kfaketest.IdempotentProducer(t, east, ""), 50, "from-east")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := make(chan string, 1)
	d := NewDaemon(p.Topology, DaemonOptions{Listen: "127.0.0.1:0", StatePoll: 200 * time.Millisecond,
		Engine:  Options{Shards: 2, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond},
		Started: func(a string) { addr <- a }})
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	base := "http://" + <-addr
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz = %d", code)
	}
	waitFor(t, 20*time.Second, "east -> west mirrored and ready", func() error {
		if n, _ := count(dst); n != 50 {
			return fmt.Errorf("%d of 50 on west", n)
		}
		if code, body := get("/readyz"); code != 200 || !strings.Contains(body, "east->west") {
			return fmt.Errorf("/readyz %d %q", code, body)
		}
		return nil
	})
	_, metrics := get("/metrics")
	for _, want := range []string{`drctl_mirror_records_total{link="east->west",topic="orders"} 50`, "drctl_mirror_shards_owned", "drctl_mirror_transactions_total", "drctl_mirror_lag_records"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// Flip the roles as a failover does: new epoch on both, then fence.
	next := rolestate.Initial(p.Topology)
	next.Epoch, next.Active, next.Standby = 1, "west", "east"
	for _, c := range []struct {
		cl   sarama.Client
		name string
	}{{dst, "west"}, {src, "east"}} {
		cfg, _ := p.Topology.Clusters[c.name].SaramaConfig()
		if err := rolestate.CompareAndSet(ctx, c.cl, cfg, 0, next); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := linkstate.Fence(ctx, kfaketest.Session(t, p.Topology), p.Topology.Link("east", "west")); err != nil {
		t.Fatal(err)
	}
	send(kfaketest.IdempotentProducer(t, west, ""), 30, "from-west")
	waitFor(t, 30*time.Second, "west -> east mirrored", func() error {
		n, tags := count(src)
		if tags["from-west"] != 30 {
			return fmt.Errorf("east holds %d records: %v", n, tags)
		}
		if code, body := get("/readyz"); code != 200 || !strings.Contains(body, "west->east") {
			return fmt.Errorf("/readyz %d %q", code, body)
		}
		return nil
	})
	if n, tags := count(src); n != 80 || tags["from-east"] != 50 {
		t.Errorf("east holds %d records %v: records that came from east were copied back", n, tags)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("daemon: %v", err)
	}
}

// writeRoles writes st as the role state of both clusters of p, west
// first, where it holds epoch expected.
func writeRoles(t *testing.T, p *kfaketest.Pair, st rolestate.State, expected int64) {
	t.Helper()
	for _, name := range []string{"west", "east"} {
		cl := kfaketest.DialCluster(t, p.Topology.Clusters[name])
		cfg, _ := p.Topology.Clusters[name].SaramaConfig()
		if err := rolestate.CompareAndSet(context.Background(), cl, cfg, expected, st); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDaemonNoticesARunWithinASecond: a daemon in steady state learns of a
// failover's run at its next read of the roles, so the default read
// interval bounds how late the old link stops and the reseed's link starts.
// With 5 s, a failover's reseed tail waited up to 5 s for it (the bench's
// runs spread 9 to 18 s); with the default of 1 s the link stops within
// about a second of the flip.
func TestDaemonNoticesARunWithinASecond(t *testing.T) {
	if d := NewDaemon(&topology.Topology{}, DaemonOptions{}); d.opts.StatePoll != time.Second {
		t.Fatalf("default StatePoll %v, want 1s", d.opts.StatePoll)
	}
	_, d, _ := daemonAtFlip(t, 0)
	written := time.Now()
	waitFor(t, 4*time.Second, "the link stopped within a read interval and a stop", func() error {
		if e := d.Current(); e != nil {
			return fmt.Errorf("%s still runs", e.link)
		}
		return nil
	})
	t.Logf("the link stopped %v after the flip was written", time.Since(written).Round(time.Millisecond))
}

// daemonAtFlip runs a daemon (StatePoll statePoll, 0: the default) until
// the test ends; once it mirrors east -> west it writes a failover's flip
// to both clusters' roles: west active, east stale (wiping). It returns
// the pair, the daemon and the state written.
func daemonAtFlip(t *testing.T, statePoll time.Duration) (*kfaketest.Pair, *Daemon, rolestate.State) {
	t.Helper()
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"orders\"]}"})
	src := kfaketest.DialCluster(t, p.Topology.Clusters["east"])
	kfaketest.CreateTopicOn(t, src, "orders", 1, nil)
	ctx, cancel := context.WithCancel(context.Background())
	d := NewDaemon(p.Topology, DaemonOptions{StatePoll: statePoll,
		Engine: Options{Shards: 1, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond}})
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
	waitFor(t, 30*time.Second, "east -> west running", func() error {
		if e := d.Current(); e == nil || !e.Ready() {
			return fmt.Errorf("not ready")
		}
		return nil
	})
	st := rolestate.Initial(p.Topology)
	st.Epoch, st.Active, st.Standby, st.Phase = 1, "west", "east", rolestate.PhaseWiping
	st.Run = &rolestate.Run{ID: "failover-test", Kind: rolestate.RunFailover, StartedAt: time.Now()}
	writeRoles(t, p, st, 0)
	return p, d, st
}

// TestDaemonFollowsATransitionPromptly: once the daemon has seen the roles
// move (any phase but steady), it reads them every transitionPoll, not
// every StatePoll, so that a failover's reseed starts its link within a
// second of its phase being written. Before, a failover's reseed tail
// waited up to a StatePoll (5 s by default) for the mirror to notice it.
func TestDaemonFollowsATransitionPromptly(t *testing.T) {
	// A failover's flip: west active, east stale (wiping), the old link fenced.
	p, d, st := daemonAtFlip(t, 10*time.Second)
	ctx := context.Background()
	if _, err := linkstate.Fence(ctx, kfaketest.Session(t, p.Topology), p.Topology.Link("east", "west")); err != nil {
		t.Fatal(err)
	}
	// The daemon sees the flip at its next read (within StatePoll) and
	// stops the link: no link runs while east is wiped.
	waitFor(t, 30*time.Second, "the link stopped", func() error {
		if e := d.Current(); e != nil {
			return fmt.Errorf("%s still runs", e.link)
		}
		return nil
	})
	// The wipe is done: reseeding east from west.
	st.Phase = rolestate.PhaseReseeding
	writeRoles(t, p, st, 1)
	written := time.Now()
	waitFor(t, 4*time.Second, "west -> east started (StatePoll is 10 s)", func() error {
		if e := d.Current(); e == nil || e.link.Source != "west" || !e.opts.CopyOwnOrigin {
			return fmt.Errorf("no reseeding link west -> east")
		}
		return nil
	})
	t.Logf("the reseed link started %v after its phase was written", time.Since(written).Round(time.Millisecond))
}
