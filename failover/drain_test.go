package failover

// The drain on kfake with SASL and ACLs enforced: with the acl fence it
// ends as soon as the drain is proven complete, far inside a long quiet
// period, and not while a transaction is open on a fenced partition.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

// drainQuiet is the quiet period of these tests: far longer than a proven
// drain may take, so that "the drain ended before it" cannot pass by luck
// under load.
const drainQuiet = 30 * time.Second

// fencedPair is a kfake pair with SASL and ACLs enforced, on which the
// application "app" may write to every topic and run transactions, and
// drctl fences with ACLs (User:* by default).
func fencedPair(t *testing.T, failover string) *kfaketest.Pair {
	allow := func(rt kmsg.ACLResourceType, op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: rt, Name: "*", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
	}
	return kfaketest.NewPair(t, kfaketest.Options{
		SASL: true,
		ClusterOpts: []kfake.Opt{kfake.EnableACLs(), kfake.User("SCRAM-SHA-512", "app", "app-secret",
			allow(kmsg.ACLResourceTypeTopic, kmsg.ACLOperationWrite),
			allow(kmsg.ACLResourceTypeTopic, kmsg.ACLOperationDescribe),
			allow(kmsg.ACLResourceTypeTransactionalId, kmsg.ACLOperationWrite),
			allow(kmsg.ACLResourceTypeTransactionalId, kmsg.ACLOperationDescribe),
		)},
		Mirror: ordersBillingYAML,
		Extra:  failover,
	})
}

// stepClock records, as a run goes, when each step started and ended and
// the progress messages of each.
type stepClock struct {
	mu       sync.Mutex
	started  map[string]time.Time
	done     map[string]time.Time
	elapsed  map[string]time.Duration
	outputs  map[string]json.RawMessage
	progress map[string][]string
	// atStart, if set, runs as each step starts.
	atStart func(name string)
}

func newStepClock() *stepClock {
	return &stepClock{started: map[string]time.Time{}, done: map[string]time.Time{}, elapsed: map[string]time.Duration{},
		outputs: map[string]json.RawMessage{}, progress: map[string][]string{}}
}

func (c *stepClock) Handle(_ context.Context, e plans.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch e.Type {
	case plans.EventStepStarted:
		c.started[e.Name] = time.Now()
		if c.atStart != nil {
			c.atStart(e.Name)
		}
	case plans.EventStepDone:
		c.done[e.Name] = time.Now()
		c.elapsed[e.Name] = time.Duration(e.ElapsedMS) * time.Millisecond
		c.outputs[e.Name] = e.Outputs
	case plans.EventStepProgress:
		c.progress[e.Name] = append(c.progress[e.Name], e.Message)
	}
	return nil
}

func (c *stepClock) get(name string) (started, done time.Time, elapsed time.Duration, out json.RawMessage, progress []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started[name], c.done[name], c.elapsed[name], c.outputs[name], append([]string(nil), c.progress[name]...)
}

// runWithClock runs plan to its end with clock as one more hook.
func runWithClock(t *testing.T, topo *topology.Topology, plan *plans.Plan, clock *stepClock) *stepClock {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := Execute(ctx, kfaketest.Session(t, topo), plan, RunOptions{JournalDir: t.TempDir(), Yes: true, Hooks: []plans.Hook{clock}}); err != nil {
		t.Fatalf("failover: %v", err)
	}
	return clock
}

// TestDrainProvenEndsEarly: producers stopped, the mirror caught up, the
// fence (DENY WRITE for User:*) in force: the drain is proven complete
// and ends far inside the 30s quiet period, and says so. The fence really
// holds (app cannot write to orders on east as the drain starts), and
// west, the new active, holds every record east had.
func TestDrainProvenEndsEarly(t *testing.T) {
	p := fencedPair(t, "failover: {fence: acl, drain_timeout: 2m, quiet_period: 30s}\n")
	topo := p.Topology
	seedOrders(t, topo)
	app := kfaketest.Producer(t, appCluster(topo.Clusters["east"]), 0)
	if err := tryProduce(app, "orders"); err != nil {
		t.Fatalf("app cannot write to orders before the fence (test setup): %v", err)
	}
	startMirror(t, topo, "east", "west")
	waitMirrored(t, topo, "east", "west")
	waitGroupSynced(t, topo, "west", "billing", 3)

	clock := newStepClock()
	var whileDraining error
	clock.atStart = func(name string) {
		if name == StepDrain {
			whileDraining = tryProduce(app, "orders")
		}
	}
	runWithClock(t, topo, planTo(t, topo, "west"), clock)
	if !errors.Is(whileDraining, sarama.ErrTopicAuthorizationFailed) {
		t.Errorf("app wrote to orders on east as the drain started (%v): the fence the drain proved did not hold", whileDraining)
	}
	_, _, took, out, progress := clock.get(StepDrain)
	t.Logf("drain took %v: %s; progress %q", took, out, progress)
	if took >= drainQuiet {
		t.Errorf("the drain took %v, not less than the quiet period %v: it did not end on the proof", took, drainQuiet)
	}
	var o struct {
		Proven bool  `json:"proven"`
		Lag    int64 `json:"lag_records"`
	}
	if err := json.Unmarshal(out, &o); err != nil || !o.Proven || o.Lag != 0 {
		t.Errorf("drain outputs %s (%v); want proven, lag 0", out, err)
	}
	west := kfaketest.Dial(t, topo, "west")
	total := 0
	for part := range int32(3) {
		recs, err := readCommitted(west, "orders", part)
		if err != nil {
			t.Fatal(err)
		}
		total += len(recs)
	}
	if total != 31 { // seedOrders' 30 and app's probe
		t.Errorf("west holds %d records of orders after the failover, want 31", total)
	}
}

// TestDrainWaitsForOpenTransaction: app began a transaction on orders
// before the fence and never commits it (it times out after txnTimeout).
// A producer the fence stopped could still commit it (ending a transaction
// needs no WRITE on the topic), so the drain is not proven while it is
// open: it waits, saying why, and ends on the proof only once the broker
// aborted the transaction, still far inside the 30s quiet period. The
// aborted record never reaches west.
func TestDrainWaitsForOpenTransaction(t *testing.T) {
	p := fencedPair(t, "failover: {fence: acl, drain_timeout: 2m, quiet_period: 30s}\n")
	topo := p.Topology
	seedOrders(t, topo)
	startMirror(t, topo, "east", "west")
	waitMirrored(t, topo, "east", "west")
	waitGroupSynced(t, topo, "west", "billing", 3)

	const txnTimeout = 12 * time.Second
	cfg, err := appCluster(topo.Clusters["east"]).SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Transaction.ID = "app-open-txn"
	cfg.Producer.Transaction.Timeout = txnTimeout
	txn, err := sarama.NewSyncProducer(topo.Clusters["east"].Bootstrap, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = txn.Close() })
	plan := planTo(t, topo, "west")
	if err := txn.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if _, _, err := txn.SendMessage(&sarama.ProducerMessage{Topic: "orders", Partition: 1, Value: sarama.StringEncoder("never committed")}); err != nil {
		t.Fatalf("write in the open transaction: %v", err)
	}
	// The broker aborts the transaction no sooner than this.
	abortedAt := began.Add(txnTimeout)

	clock := runWithClock(t, topo, plan, newStepClock())
	started, done, took, out, progress := clock.get(StepDrain)
	t.Logf("drain started %v after the transaction began, took %v, ended %v after its timeout: %s",
		started.Sub(began).Round(time.Millisecond), took, done.Sub(abortedAt).Round(time.Millisecond), out)
	if !started.Before(abortedAt) {
		t.Fatalf("the drain started %v after the transaction began, past its timeout %v: the test did not hold it open into the drain",
			started.Sub(began).Round(time.Millisecond), txnTimeout)
	}
	if done.Before(abortedAt) {
		t.Errorf("the drain ended %v before the open transaction could time out", abortedAt.Sub(done).Round(time.Millisecond))
	}
	if took >= drainQuiet {
		t.Errorf("the drain took %v, not less than the quiet period %v: it did not end on the proof once the transaction was aborted", took, drainQuiet)
	}
	said := false
	for _, m := range progress {
		said = said || strings.Contains(m, "a transaction is open on 1 partition(s): orders/1")
	}
	if !said {
		t.Errorf("the drain's progress never named the open transaction: %q", progress)
	}
	var o struct {
		Proven bool `json:"proven"`
	}
	if err := json.Unmarshal(out, &o); err != nil || !o.Proven {
		t.Errorf("drain outputs %s (%v); want proven", out, err)
	}
	recs, err := readCommitted(kfaketest.Dial(t, topo, "west"), "orders", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if string(r.Value) == "never committed" {
			t.Errorf("the aborted record reached west at offset %d", r.Offset)
		}
	}
}
