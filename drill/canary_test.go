package drill

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/mirror"
	"github.com/drctl/drctl/topology"
)

const testMirror = "  topics: {include: [\"orders\"]}\n  groups: {include: [\"billing\"]}\n  group_sync_interval: 500ms"

// newPair starts two kfake clusters with the given drills: section.
func newPair(t *testing.T, extra string) *kfaketest.Pair {
	t.Helper()
	return kfaketest.NewPair(t, kfaketest.Options{Mirror: testMirror,
		Extra: "failover: {fence: none, drain_timeout: 30s, quiet_period: 300ms}\n" + extra})
}

// startMirror runs the mirror daemon until the returned stop is called.
func startMirror(t *testing.T, topo *topology.Topology) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := mirror.NewDaemon(topo, mirror.DaemonOptions{StatePoll: 200 * time.Millisecond,
		Engine: mirror.Options{Shards: 2, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond}})
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

func runDrill(t *testing.T, topo *topology.Topology, d *topology.NamedDrill, dir string) *Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rec, err := Run(ctx, kfaketest.Session(t, topo), d, Options{JournalDir: dir})
	if err != nil {
		t.Fatalf("drill %s: %v", d.Name, err)
	}
	return rec
}

func smallCanary() *topology.NamedDrill {
	d := topology.DefaultDrill(topology.DrillCanary)
	d.Params.Records, d.Params.Rate = 20, 100
	return d
}

func hasReason(r *Record, sub string) bool {
	for _, s := range r.Reasons {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// TestCanaryHealthyThenStoppedMirror: on a healthy pair the canary passes
// with every measurement in place and is recorded in both clusters and the
// journal; with the mirror stopped it fails with "records not replicated"
// and reports the RPO.
func TestCanaryHealthyThenStoppedMirror(t *testing.T) {
	p := newPair(t, "")
	topo := p.Topology
	stop := startMirror(t, topo)
	dir := t.TempDir()

	rec := runDrill(t, topo, smallCanary(), dir)
	if rec.Verdict != Pass {
		t.Fatalf("healthy pair: verdict %s: %v\nsteps: %+v", rec.Verdict, rec.Reasons, rec.Steps)
	}
	c := rec.Canary
	if c == nil || c.Sent != 20 || c.Received != 20 || c.Missing != 0 || c.Duplicates != 0 || c.OutOfOrder != 0 || c.LatencyMaxMS <= 0 || c.LatencyP50MS > c.LatencyP99MS || len(c.Samples) != 20 {
		t.Errorf("canary: %+v", c)
	}
	if g := rec.GroupSync; g == nil || !g.Exact || g.ReRead != 0 || g.Skipped != 0 || g.StandbyOffset < 0 {
		t.Errorf("group sync: %+v", g)
	}
	if rec.Preflight == nil {
		t.Fatal("no preflight recorded")
	}
	if v := rec.Preflight.Readiness; v == nil || (v.Level != inspect.Ready && v.Level != inspect.ReadyWarn) {
		t.Errorf("preflight readiness %+v, want a READY verdict", v)
	}
	if rec.Preflight == nil || !rec.Preflight.Ready || rec.RPO == nil || rec.RTO == nil || !rec.RTO.Estimated {
		t.Errorf("preflight %+v rpo %+v rto %+v", rec.Preflight, rec.RPO, rec.RTO)
	}
	for _, s := range rec.Steps {
		if s.Status != "done" || s.StartedAt.IsZero() {
			t.Errorf("step %+v", s)
		}
	}
	if rec.Active != "east" || rec.Standby != "west" || rec.By == "" || rec.TopologyDigest != topo.Digest {
		t.Errorf("record header: %+v", rec)
	}
	// Recorded in both clusters and the journal.
	for _, name := range []string{"east", "west"} {
		recs, err := clusterHistory(context.Background(), kfaketest.Session(t, topo), name)
		if err != nil || len(recs) != 1 || recs[0].ID != rec.ID || recs[0].Verdict != Pass {
			t.Errorf("history on %s: %v %+v", name, err, recs)
		}
	}
	hist, err := History(context.Background(), kfaketest.Session(t, topo), HistoryOptions{JournalDir: dir})
	if err != nil || len(hist) != 1 {
		t.Fatalf("history: %v %d", err, len(hist))
	}

	stop()
	d := smallCanary()
	d.Objectives.MaxCanaryLatency = time.Second // bounds the wait for records that never come
	rec2 := runDrill(t, topo, d, dir)
	if rec2.Verdict != Fail || !hasReason(rec2, "20 of 20 canary records not replicated to west") {
		t.Fatalf("stopped mirror: verdict %s: %v", rec2.Verdict, rec2.Reasons)
	}
	if rec2.RPO == nil || rec2.RPO.Records < 20 {
		t.Errorf("stopped mirror: RPO %+v, want at least the 20 canary records", rec2.RPO)
	}
	if rec2.GroupSync == nil || rec2.GroupSync.Skip == "" {
		t.Errorf("group sync should be skipped: %+v", rec2.GroupSync)
	}
	if !hasReason(rec2, "no mirror process runs") {
		t.Errorf("the failover preflight should name the stopped mirror: %v", rec2.Reasons)
	}
	hist, _ = History(context.Background(), kfaketest.Session(t, topo), HistoryOptions{JournalDir: dir})
	if len(hist) != 2 || hist[0].ID != rec2.ID {
		t.Errorf("history, newest first: %+v", hist)
	}
}

// TestCanaryLatencyBeyondObjective: a mirror slower than the objective
// fails the drill with the measured latency, though every record arrived.
func TestCanaryLatencyBeyondObjective(t *testing.T) {
	p := newPair(t, "")
	startMirror(t, p.Topology)
	d := smallCanary()
	d.Objectives.MaxCanaryLatency = time.Millisecond
	rec := runDrill(t, p.Topology, d, t.TempDir())
	if rec.Verdict != Fail || !hasReason(rec, "exceeds the objective 1 ms") {
		t.Fatalf("verdict %s: %v", rec.Verdict, rec.Reasons)
	}
	if rec.Canary.Missing != 0 {
		t.Errorf("records missing: %+v", rec.Canary)
	}
}

// TestCanaryStandbyGroupWithMembers: a selected group with members on the
// standby makes the failover preflight, and so the drill, fail.
func TestCanaryStandbyGroupWithMembers(t *testing.T) {
	p := newPair(t, "")
	topo := p.Topology
	startMirror(t, topo)
	cfg, _ := topo.Clusters["west"].SaramaConfig()
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	admin, err := sarama.NewClusterAdmin(topo.Clusters["west"].Bootstrap, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.CreateTopic("orders", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		t.Fatal(err)
	}
	g, err := sarama.NewConsumerGroup(topo.Clusters["west"].Bootstrap, "billing", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	joined := make(chan struct{}, 1)
	go func() {
		for ctx.Err() == nil {
			_ = g.Consume(ctx, []string{"orders"}, handler{joined})
		}
	}()
	select {
	case <-joined:
	case <-time.After(30 * time.Second):
		t.Fatal("the consumer never joined billing on west")
	}
	rec := runDrill(t, topo, smallCanary(), t.TempDir())
	if rec.Verdict != Fail || !hasReason(rec, "group billing has 1 member(s) on west") {
		t.Fatalf("verdict %s: %v", rec.Verdict, rec.Reasons)
	}
}

type handler struct{ joined chan struct{} }

func (h handler) Setup(sarama.ConsumerGroupSession) error {
	select {
	case h.joined <- struct{}{}:
	default:
	}
	return nil
}
func (handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (handler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for range c.Messages() {
	}
	return nil
}
