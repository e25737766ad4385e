package verify_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/mirror"
	"github.com/drctl/drctl/topology"
	"github.com/drctl/drctl/verify"
)

// follower is a mirror daemon with the verifier beside its link, as drctl
// mirror run runs them, and what the verifier's rounds read.
type follower struct {
	metrics *verify.Metrics
	mu      sync.Mutex
	rounds  int
	read    map[string]int64 // source records read, by partition
	compare map[string]int64 // records compared, by partition
	stop    func()
}

func (f *follower) sums() (rounds int, read, compared map[string]int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rounds, maps.Clone(f.read), maps.Clone(f.compare)
}

func startFollower(t *testing.T, p *kfaketest.Pair) *follower {
	t.Helper()
	f := &follower{metrics: verify.NewMetrics(nil), read: map[string]int64{}, compare: map[string]int64{}}
	ctx, cancel := context.WithCancel(context.Background())
	d := mirror.NewDaemon(p.Topology, mirror.DaemonOptions{StatePoll: 200 * time.Millisecond,
		Engine: mirror.Options{Shards: 1, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond},
		Beside: func(ctx context.Context, link topology.Link, leads func() bool) {
			clusters := kafkaconn.Open(ctx, p.Topology, link.Source, link.Target)
			defer clusters.Close()
			_ = verify.Follow(ctx, clusters, link, verify.FollowOptions{Verify: p.Topology.Mirror.Verify, Metrics: f.metrics, Leads: leads, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
				Round: func(rep *verify.Report) {
					f.mu.Lock()
					defer f.mu.Unlock()
					f.rounds++
					for _, pr := range rep.Partitions {
						tp := fmt.Sprintf("%s/%d", pr.Topic, pr.Partition)
						f.read[tp] += pr.SourceRead
						f.compare[tp] += pr.Compared
					}
				}})
		}})
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var once sync.Once
	f.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("mirror: %v", err)
			}
		})
	}
	t.Cleanup(f.stop)
	return f
}

func proofsOn(t *testing.T, p *kfaketest.Pair) map[string]linkstate.Proof {
	t.Helper()
	got, err := linkstate.ReadProofs(kfaketest.Ctx(t, 10*time.Second), kfaketest.Dial(t, p.Topology, "west"), p.Topology.Link("east", "west"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]linkstate.Proof{}
	for tp, pr := range got {
		out[tp.String()] = pr
	}
	return out
}

// TestVerifyFollow: the verifier beside a clean mirror moves each
// partition's watermark up to the mirrored position (metric and stored
// record); a record produced straight into the standby while the mirror
// is stopped is found once, on its partition, after a restart that
// resumes from the stored watermark: the records proven before are not
// compared again.
func TestVerifyFollow(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"f\"]}\n  group_sync_interval: 1h\n  verify: {mode: full, interval: 100ms}\n"})
	kfaketest.CreateTopic(t, p.Topology, "east", "f", 2, nil)
	kfaketest.ProduceEach(t, p.Topology, "east", "f", 2, 20)
	link := p.Topology.Link("east", "west").String()

	f := startFollower(t, p)
	proven := func(f *follower, part string) float64 {
		return testutil.ToFloat64(f.metrics.Proven.WithLabelValues(link, "f", part))
	}
	kfaketest.Wait(t, 60*time.Second, "both watermarks at the mirrored position 20", func() (bool, string) {
		return proven(f, "0") == 20 && proven(f, "1") == 20, fmt.Sprintf("proven %v, %v", proven(f, "0"), proven(f, "1"))
	})
	kfaketest.Wait(t, 10*time.Second, "the watermarks stored on the standby", func() (bool, string) {
		got := proofsOn(t, p)
		ok := true
		for _, tp := range []string{"f/0", "f/1"} {
			pr := got[tp]
			ok = ok && pr.Mode == "full" && pr.From == 0 && pr.Proven == 20 && pr.Checked == 20 && pr.Next == 20 && pr.Records == 20 && pr.Differences == 0
		}
		return ok, fmt.Sprintf("%+v", got)
	})
	kfaketest.Wait(t, 10*time.Second, "nothing left behind", func() (bool, string) {
		b0 := testutil.ToFloat64(f.metrics.Behind.WithLabelValues(link, "f", "0"))
		b1 := testutil.ToFloat64(f.metrics.Behind.WithLabelValues(link, "f", "1"))
		return b0 == 0 && b1 == 0, fmt.Sprintf("behind %v, %v", b0, b1)
	})
	if n := testutil.ToFloat64(f.metrics.Records.WithLabelValues(link, "f")); n != 40 {
		t.Errorf("drctl_verify_records_total %v, want 40", n)
	}
	_, _, compared := f.sums()
	if compared["f/0"] != 20 || compared["f/1"] != 20 {
		t.Errorf("compared %v, want 20 per partition: a record verified twice", compared)
	}
	if n := testutil.ToFloat64(f.metrics.Differences.WithLabelValues(link, "f", "0")); n != 0 {
		t.Errorf("differences on a clean mirror: %v", n)
	}
	f.stop()

	// The mirror stopped: a record written straight into the standby's f/1.
	rogue := kfaketest.IdempotentProducer(t, p.Topology.Clusters["west"], "")
	_, rogueAt, err := rogue.SendMessage(&sarama.ProducerMessage{Topic: "f", Partition: 1, Value: sarama.StringEncoder("rogue")})
	if err != nil {
		t.Fatal(err)
	}
	kfaketest.ProduceEach(t, p.Topology, "east", "f", 2, 10)

	g := startFollower(t, p)
	kfaketest.Wait(t, 60*time.Second, "f/0 proven to 30, the difference on f/1 counted", func() (bool, string) {
		d := testutil.ToFloat64(g.metrics.Differences.WithLabelValues(link, "f", "1"))
		return proven(g, "0") == 30 && d == 1, fmt.Sprintf("proven %v, %v; differences on f/1 %v", proven(g, "0"), proven(g, "1"), d)
	})
	kfaketest.Wait(t, 10*time.Second, "f/1's record on the standby", func() (bool, string) {
		pr := proofsOn(t, p)["f/1"]
		return pr.Differences == 1 && pr.Proven == 20 && pr.Checked == 30 && pr.Records == 30, fmt.Sprintf("%+v", pr)
	})
	if pr := proofsOn(t, p)["f/1"]; pr.FirstDifference != fmt.Sprintf("unexpected: source offset -1, standby offset %d: no source record maps to this committed standby record", rogueAt) {
		t.Errorf("f/1's first difference: %q (the rogue record is at %d)", pr.FirstDifference, rogueAt)
	}
	// drctl status and the readiness verdict say so, read from the clusters.
	st, _ := inspect.CollectStatus(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, p.Topology))
	if st.Mirror == nil || st.Mirror.Proof == nil || st.Mirror.Proof.Differences != 1 || st.Mirror.Proof.Partitions != 2 {
		t.Errorf("status: the link's proof %+v", st.Mirror)
	}
	wantProblem := fmt.Sprintf("mirror east->west: the standby differs from the source: the mirror's verifier found 1 difference(s) on 1 partition(s): f/1 (unexpected: source offset -1, standby offset %d", rogueAt)
	if !slices.ContainsFunc(st.Problems, func(p string) bool { return strings.HasPrefix(p, wantProblem) }) {
		t.Errorf("status problems %q do not say %q", st.Problems, wantProblem)
	}
	if v := st.Readiness; v.Level != inspect.NotReady || !slices.ContainsFunc(v.Reasons, func(r string) bool { return strings.HasPrefix(r, "the standby differs") }) {
		t.Errorf("readiness %+v: want NOT READY, the standby differs", v)
	}
	if proven(g, "1") != 20 {
		t.Errorf("f/1 proven to %v after its difference, want 20", proven(g, "1"))
	}
	rounds, read, compared := g.sums()
	for _, tp := range []string{"f/0", "f/1"} {
		// The restart resumed at 20: it compared the 10 new records, and
		// read few of the 20 before (a batch may hold some).
		if compared[tp] != 10 || read[tp] >= 20 {
			t.Errorf("%s after the restart: compared %d (want 10), read %d source records over %d rounds (want < 20: resumed from the watermark)", tp, compared[tp], read[tp], rounds)
		}
	}
	// The difference is counted once, however many rounds ran since.
	g.mu.Lock()
	more := g.rounds + 3
	g.mu.Unlock()
	kfaketest.Wait(t, 30*time.Second, "three more rounds", func() (bool, string) {
		n, _, _ := g.sums()
		return n >= more, fmt.Sprint(n)
	})
	if d := testutil.ToFloat64(g.metrics.Differences.WithLabelValues(link, "f", "1")); d != 1 {
		t.Errorf("differences on f/1 after more rounds: %v, want 1", d)
	}
	g.stop()

	// A restarted verifier's counter says what the record says: the
	// difference stays visible (and alerting) without being found again.
	h := startFollower(t, p)
	kfaketest.Wait(t, 60*time.Second, "the restarted verifier's first round", func() (bool, string) {
		n, _, _ := h.sums()
		return n >= 1, fmt.Sprint(n)
	})
	if d := testutil.ToFloat64(h.metrics.Differences.WithLabelValues(link, "f", "1")); d != 1 || proofsOn(t, p)["f/1"].Differences != 1 {
		t.Errorf("after a restart: differences on f/1 %v (want 1, from the record), record %+v", d, proofsOn(t, p)["f/1"])
	}
}

// TestVerifyFollowSampled: in sample mode the watermark follows the
// mirror and about one record in N is compared.
func TestVerifyFollowSampled(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"s\"]}\n  group_sync_interval: 1h\n  verify: {sample: 10, interval: 100ms}\n"})
	kfaketest.CreateTopic(t, p.Topology, "east", "s", 1, nil)
	kfaketest.ProduceEach(t, p.Topology, "east", "s", 1, 100)
	f := startFollower(t, p)
	link := p.Topology.Link("east", "west").String()
	kfaketest.Wait(t, 60*time.Second, "the watermark at 100", func() (bool, string) {
		v := testutil.ToFloat64(f.metrics.Proven.WithLabelValues(link, "s", "0"))
		return v == 100, fmt.Sprint(v)
	})
	kfaketest.ProduceEach(t, p.Topology, "east", "s", 1, 100)
	kfaketest.Wait(t, 60*time.Second, "the watermark at 200", func() (bool, string) {
		v := testutil.ToFloat64(f.metrics.Proven.WithLabelValues(link, "s", "0"))
		return v == 200, fmt.Sprint(v)
	})
	_, _, compared := f.sums()
	if pr := proofsOn(t, p)["s/0"]; pr.Mode != "sample" || pr.Sample != 10 || compared["s/0"] != 20 || pr.Records != 20 {
		t.Errorf("sampled every 10th of 200 records: compared %d, stored %+v; want 20", compared["s/0"], pr)
	}
}

// TestVerifyFollowOff: with mirror.verify.mode off the daemon runs no
// verifier: no round, no proof topic on the standby.
func TestVerifyFollowOff(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"o\"]}\n  group_sync_interval: 1h\n  verify: {mode: off}\n"})
	kfaketest.CreateTopic(t, p.Topology, "east", "o", 1, nil)
	kfaketest.ProduceEach(t, p.Topology, "east", "o", 1, 10)
	f := startFollower(t, p)
	link := p.Topology.Link("east", "west")
	kfaketest.Wait(t, 60*time.Second, "the mirror to catch up", func() (bool, string) {
		rep, err := linkstate.MeasureLag(kfaketest.Ctx(t, 10*time.Second), kfaketest.Session(t, p.Topology), link)
		if err != nil {
			return false, err.Error()
		}
		return rep.Caught(), fmt.Sprintf("%+v", rep.Partitions)
	})
	f.stop()
	info, err := kafkaread.Topic(kfaketest.Ctx(t, 10*time.Second), kfaketest.Dial(t, p.Topology, "west"), link.ProofTopic())
	if err != nil {
		t.Fatal(err)
	}
	if rounds, _, _ := f.sums(); rounds != 0 || info.Exists {
		t.Errorf("mode off: %d rounds, proof topic exists %v", rounds, info.Exists)
	}
}

// TestVerifyFollowStandbyLostWatermarks: when the standby loses the
// verifier's watermarks (its data lost, drctl's topics deleted), the
// verifier starts over from the map's first record instead of resuming
// from the watermarks it held in memory.
func TestVerifyFollowStandbyLostWatermarks(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"w\"]}\n  group_sync_interval: 1h\n  verify: {mode: full, interval: 100ms}\n"})
	kfaketest.CreateTopic(t, p.Topology, "east", "w", 1, nil)
	kfaketest.ProduceEach(t, p.Topology, "east", "w", 1, 20)
	f := startFollower(t, p)
	kfaketest.Wait(t, 60*time.Second, "the watermark stored at 20", func() (bool, string) {
		pr := proofsOn(t, p)["w/0"]
		return pr.Proven == 20 && pr.Records == 20, fmt.Sprintf("%+v", pr)
	})
	west := kfaketest.Dial(t, p.Topology, "west")
	if err := kfaketest.Admin(t, west).DeleteTopic(p.Topology.Link("east", "west").ProofTopic()); err != nil {
		t.Fatal(err)
	}
	kfaketest.Wait(t, 60*time.Second, "the 20 records compared again, into a new record", func() (bool, string) {
		_, _, compared := f.sums()
		pr := proofsOn(t, p)["w/0"]
		return compared["w/0"] == 40 && pr.From == 0 && pr.Proven == 20 && pr.Records == 20, fmt.Sprintf("compared %d, %+v", compared["w/0"], pr)
	})
}
