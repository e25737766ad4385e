package mirror

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// TestStandbyLosesItsData (#8 case 5): the standby restarts empty on the
// same address (a new cluster id). The mirror notices, rebuilds its
// internal topics, copies every record again from the source's earliest
// offset, and says so (Troubles, the resets counter, the lag report).
func TestStandbyLosesItsData(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Persist: true, Mirror: "  topics: {include: [\"orders\"]}"})
	east := p.Topology.Clusters["east"]
	src := kfaketest.DialCluster(t, east)
	kfaketest.CreateTopicOn(t, src, "orders", 1, nil)
	prod := kfaketest.IdempotentProducer(t, east, "")
	sendN(t, prod, "orders", 20, "a")
	e := runEngine(t, p.Topology, Options{Shards: 2})
	dst := kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	waitCopied(t, src, dst, "orders", "kfake-east")

	addr := p.West.ListenAddrs()[0]
	p.Stop("west")
	port := 0
	if _, err := fmt.Sscanf(addr[strings.LastIndexByte(addr, ':')+1:], "%d", &port); err != nil {
		t.Fatal(err)
	}
	fresh, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("kfake-west-rebuilt"), kfake.Ports(port),
		kfake.DataDir(filepath.Join(t.TempDir(), "west-rebuilt")))
	if err != nil {
		t.Fatal(err)
	}
	p.West = fresh // closed by the pair's cleanup
	sendN(t, prod, "orders", 10, "b")

	dst2 := kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	waitCopied(t, src, dst2, "orders", "kfake-east")
	if note := e.ResetNote(); !strings.Contains(note, "cluster id kfake-west-rebuilt") && !strings.Contains(note, "lost its data") {
		t.Errorf("reset note = %q", note)
	}
	if n := testutil.ToFloat64(e.metrics.Safety.TargetResets.WithLabelValues("east->west")); n != 1 {
		t.Errorf("target resets counted = %v, want 1: the standby lost its data once", n)
	}
	waitFor(t, 20*time.Second, "the reset in the lag report", func() error {
		if rep := measureLag(t, p.Topology); !strings.Contains(rep.Reset, "re-seeded from the source's earliest offset") || rep.TotalRecords != 0 {
			return fmt.Errorf("reset %q, %d records behind", rep.Reset, rep.TotalRecords)
		}
		return nil
	})
}

// TestHealthFailsWhileStalled (#8 case 5): while the link is behind and
// copies nothing, the lag gauge shows the records behind and /healthz fails
// after the stall timeout; it passes again once the link moves.
func TestHealthFailsWhileStalled(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"orders\"]}"})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, "orders", 1, nil)
	prod := kfaketest.IdempotentProducer(t, east, "")
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	d := NewDaemon(p.Topology, DaemonOptions{Listen: "127.0.0.1:0", StatePoll: 200 * time.Millisecond,
		Engine: Options{Shards: 1, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond,
			StallTimeout: 2 * time.Second, BlockedRetry: time.Hour},
		Started: func(a string) { addr <- a }})
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
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
	sendN(t, prod, "orders", 5, "a")
	waitCopied(t, src, dst, "orders", "kfake-east")
	if code, body := get("/healthz"); code != 200 {
		t.Fatalf("/healthz while copying = %d %q", code, body)
	}

	fault := p.West.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "orders", Err: kerr.InvalidRecord, Count: -1})
	sendN(t, prod, "orders", 10, "b")
	waitFor(t, 30*time.Second, "/healthz failing", func() error {
		if code, body := get("/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "10 records behind") {
			return fmt.Errorf("/healthz = %d %q", code, body)
		}
		return nil
	})
	waitFor(t, 10*time.Second, "the lag and the stall in the metrics", func() error {
		code, metrics := get("/metrics")
		if !strings.Contains(metrics, `drctl_mirror_lag_records{link="east->west",partition="0",topic="orders"} 10`) ||
			!strings.Contains(metrics, `drctl_mirror_stalled{link="east->west"} 1`) {
			return fmt.Errorf("%d: %s", code, metricLines(metrics, "drctl_mirror_lag_records", "drctl_mirror_stalled"))
		}
		return nil
	})
	fault.Remove()
	e := d.Current()
	e.mu.Lock()
	e.blocked = map[topology.TopicPartition]blockedPart{} // retry now rather than in an hour
	e.mu.Unlock()
	waitCopied(t, src, dst, "orders", "kfake-east")
	waitFor(t, 30*time.Second, "/healthz passing again", func() error {
		if code, body := get("/healthz"); code != 200 {
			return fmt.Errorf("/healthz = %d %q", code, body)
		}
		return nil
	})
}

func metricLines(s string, subs ...string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		for _, sub := range subs {
			if strings.HasPrefix(l, sub) {
				out = append(out, l)
			}
		}
	}
	return strings.Join(out, "\n")
}
