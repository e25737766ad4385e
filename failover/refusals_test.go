package failover

// On kfake: a failover that must not happen (a stale plan, a concurrent
// failover, bad input) stops with a
// message naming the problem and the fix, and leaves both clusters as they
// were (role state, ACLs, topics and their offsets, group offsets).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

const ordersBillingYAML = "  topics: {include: [\"orders\"]}\n  groups: {include: [\"billing\"]}\n  group_sync_interval: 200ms"

// confirmCounter counts the operator confirmations a run asks for (fence none).
type confirmCounter struct{ n atomic.Int32 }

func (c *confirmCounter) confirm(string) error {
	c.n.Add(1)
	return nil
}

func execute(t *testing.T, topo *topology.Topology, p *plans.Plan, journal string, c *confirmCounter) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	return Execute(ctx, kfaketest.Session(t, topo), p, RunOptions{JournalDir: journal, Confirm: c.confirm})
}

func planTo(t *testing.T, topo *topology.Topology, to string) *plans.Plan {
	t.Helper()
	p, err := PlanFailover(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), FailoverRequest{To: to})
	if err != nil {
		t.Fatalf("plan failover to %s: %v", to, err)
	}
	return p
}

// seedOrders creates orders (3 partitions) on east with 30 records, and the
// group billing with a committed position on east.
func seedOrders(t *testing.T, topo *topology.Topology) {
	t.Helper()
	kfaketest.CreateTopic(t, topo, "east", "orders", 3, nil)
	kfaketest.Produce(t, topo, "east", "orders", 30)
	kfaketest.Commit(t, topo, "east", "billing", "orders", map[int32]int64{0: 2, 1: 3, 2: 4})
}

// TestRefusalStalePlan: a saved plan whose world moved on is refused as
// stale before its first step, and nothing changes.
func TestRefusalStalePlan(t *testing.T) {
	steady1 := func(topo *topology.Topology) rolestate.State {
		return rolestate.State{Topology: topo.Name, Epoch: 1, Active: "east", Standby: "west", Phase: rolestate.PhaseSteady}
	}
	edit := func(t *testing.T, path, from, to string) *topology.Topology {
		t.Helper()
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), from) {
			t.Fatalf("%s has no %q", path, from)
		}
		if err := os.WriteFile(path, []byte(strings.Replace(string(raw), from, to, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		topo, err := topology.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		return topo
	}
	cases := []struct {
		name string
		// change moves the world after the plan was made and returns
		// the topology the plan is then applied with.
		change func(t *testing.T, p *kfaketest.Pair) *topology.Topology
		want   string
	}{
		{"topology file changed", func(t *testing.T, p *kfaketest.Pair) *topology.Topology {
			return edit(t, p.Path, "drain_timeout: 30s", "drain_timeout: 45s")
		}, "topology file"},
		{"plan of another topology", func(t *testing.T, p *kfaketest.Pair) *topology.Topology {
			return edit(t, p.Path, "name: test", "name: other")
		}, "topology"},
		{"epoch moved on both clusters", func(t *testing.T, p *kfaketest.Pair) *topology.Topology {
			setState(t, p.Topology, 0, steady1(p.Topology), "west", "east")
			return p.Topology
		}, "epoch 0"},
		{"epoch moved on the standby only", func(t *testing.T, p *kfaketest.Pair) *topology.Topology {
			setState(t, p.Topology, 0, steady1(p.Topology), "west")
			return p.Topology
		}, "epoch 0"},
		{"another run in progress", func(t *testing.T, p *kfaketest.Pair) *topology.Topology {
			s := steady1(p.Topology)
			s.Phase = rolestate.PhaseFailingOver
			s.Run = &rolestate.Run{ID: "failover-elsewhere", Kind: rolestate.RunFailover, StartedAt: time.Now().UTC()}
			setState(t, p.Topology, 0, s, "west", "east")
			return p.Topology
		}, "failover-elsewhere"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: "failover: {fence: none, drain_timeout: 30s}\n"})
			seedOrders(t, p.Topology)
			kfaketest.CreateTopic(t, p.Topology, "west", "orders", 3, nil)
			plan := planTo(t, p.Topology, "west")
			topo := tc.change(t, p)
			before := snapshots(t, p.Topology, "east", "west")

			var c confirmCounter
			err := execute(t, topo, plan, t.TempDir(), &c)
			if !errors.Is(err, plans.ErrStalePlan) {
				t.Fatalf("applying the saved plan: got %v, want a stale plan (plans.ErrStalePlan)", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "plan again") {
				t.Errorf("message %q should name the change (%q) and the fix (\"plan again\")", msg, tc.want)
			}
			var gerr *plans.GuardError
			if errors.As(err, &gerr) && gerr.Index != 0 {
				t.Errorf("stopped before step %d, want before the first step", gerr.Index+1)
			}
			if c.n.Load() != 0 {
				t.Errorf("the stale run asked the operator %d time(s)", c.n.Load())
			}
			assertUnchanged(t, p.Topology, before)
			noStepDone(t, p.Topology, plan.ID)
		})
	}
}

// TestRefusalConcurrentFailovers: two failovers to west, planned from the
// same state and run at once: exactly one executes, the other reports its
// plan as stale and leaves no state of its own.
func TestRefusalConcurrentFailovers(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: "failover: {fence: none, drain_timeout: 30s, quiet_period: 300ms}\n"})
	topo := p.Topology
	seedOrders(t, topo)
	startMirror(t, topo, "east", "west")
	waitMirrored(t, topo, "east", "west")

	plansRun := []*plans.Plan{planTo(t, topo, "west"), planTo(t, topo, "west")}
	confirms := []*confirmCounter{{}, {}}
	errs := make([]error, 2)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range plansRun {
		wg.Go(func() {
			<-start
			errs[i] = execute(t, topo, plansRun[i], t.TempDir(), confirms[i])
		})
	}
	close(start)
	wg.Wait()

	var winner, loser int
	switch {
	case errs[0] == nil && errs[1] != nil:
		winner, loser = 0, 1
	case errs[1] == nil && errs[0] != nil:
		winner, loser = 1, 0
	default:
		t.Fatalf("want exactly one failover to succeed; got %v and %v", errs[0], errs[1])
	}
	lerr := errs[loser]
	t.Logf("winner %s; loser %s: %v", plansRun[winner].ID, plansRun[loser].ID, lerr)
	if !errors.Is(lerr, rolestate.ErrStale) && !errors.Is(lerr, plans.ErrStalePlan) {
		t.Errorf("the losing failover reports %v; want a stale plan or role state", lerr)
	}
	if !strings.Contains(lerr.Error(), "plan again") {
		t.Errorf("the losing failover's message %q does not say what to do (plan again)", lerr)
	}
	// Both may ask (the question comes before a run's first change, so
	// before begin settles which run wins); the loser stops at begin.
	if n := confirms[loser].n.Load(); n > 1 {
		t.Errorf("the losing failover asked the operator to stop producers %d time(s); at most once, before its first change", n)
	}
	if next, ok := plans.NextStep(lerr); ok && plansRun[loser].Steps[next].Name != StepBegin && !ChangesNothing(plansRun[loser].Steps[next].Name) {
		t.Errorf("the losing failover stopped before step %s: it went past begin", plansRun[loser].Steps[next].Name)
	}
	if n := confirms[winner].n.Load(); n != 1 {
		t.Errorf("the winning failover asked the operator %d time(s), want 1", n)
	}

	loserID := plansRun[loser].ID
	for _, c := range []string{"east", "west"} {
		st, found, err := rolestate.Read(kfaketest.Ctx(t, 20*time.Second), kfaketest.Dial(t, topo, c), topo.Name)
		if err != nil || !found {
			t.Fatalf("role state of %s: %v (found %v)", c, err, found)
		}
		if st.Epoch != 2 || st.Active != "west" || st.Standby != "east" || st.Phase != rolestate.PhaseSteady || st.Run != nil {
			t.Errorf("%s holds %s; want epoch 2, active west, standby east, steady, no run", c, st)
		}
		for _, s := range stateHistory(t, topo, c) {
			if s.Run != nil && s.Run.ID == loserID {
				t.Errorf("%s recorded a role state of the losing run: %s", c, s)
			}
		}
		if acls := aclsOf(t, kfaketest.Admin(t, kfaketest.Dial(t, topo, c))); len(acls) != 0 {
			t.Errorf("%s has ACLs after a fence-none failover: %v", c, acls)
		}
	}

	// The losing plan, applied again now that the other failover is done,
	// is stale from its first step.
	before := snapshots(t, topo, "east", "west")
	err := execute(t, topo, plansRun[loser], t.TempDir(), confirms[loser])
	if !errors.Is(err, plans.ErrStalePlan) {
		t.Fatalf("re-applying the losing plan: got %v, want plans.ErrStalePlan", err)
	}
	assertUnchanged(t, topo, before)
}

// holdGroup joins group on cluster with a consumer that never commits,
// keeps it a member until the test ends, and waits until the cluster lists
// it as a member.
func holdGroup(t *testing.T, topo *topology.Topology, cluster, group, topic string) (leave func()) {
	t.Helper()
	c := topo.Clusters[cluster]
	cfg, err := c.SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Group.Rebalance.Timeout = 5 * time.Second
	cg, err := sarama.NewConsumerGroup(c.Bootstrap, group, cfg)
	if err != nil {
		t.Fatalf("consumer group %s on %s: %v", group, cluster, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_ = cg.Consume(ctx, []string{topic}, idleHandler{})
		}
	}()
	var once sync.Once
	leave = func() {
		once.Do(func() {
			cancel()
			<-done
			_ = cg.Close()
		})
	}
	t.Cleanup(leave)
	admin := kfaketest.Admin(t, kfaketest.Dial(t, topo, cluster))
	kfaketest.Wait(t, 30*time.Second, "group "+group+" has a member on "+cluster, func() (bool, string) {
		descs, err := admin.DescribeConsumerGroups([]string{group})
		if err != nil || len(descs) != 1 {
			return false, fmt.Sprintf("describe: %v %v", descs, err)
		}
		return descs[0].State == "Stable" && len(descs[0].Members) == 1, descs[0].State
	})
	return leave
}

// idleHandler holds its claims without reading or marking anything.
type idleHandler struct{}

func (idleHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (idleHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (idleHandler) ConsumeClaim(s sarama.ConsumerGroupSession, _ sarama.ConsumerGroupClaim) error {
	<-s.Context().Done()
	return nil
}

// TestRefusalGroupActiveOnStandby: a selected group with a member on the
// standby stops the failover at its preflight, which names the group and
// says to stop those consumers; nothing changes (not even the acl fence).
func TestRefusalGroupActiveOnStandby(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: "failover: {fence: acl, drain_timeout: 30s}\n"})
	topo := p.Topology
	kfaketest.CreateTopic(t, topo, "east", "orders", 3, nil)
	kfaketest.Produce(t, topo, "east", "orders", 30)
	startMirror(t, topo, "east", "west")
	waitMirrored(t, topo, "east", "west")
	holdGroup(t, topo, "west", "billing", "orders")
	// The mirror's group sync makes its snapshot topic on west at its first
	// round: wait for it, or the snapshot below races with it.
	groups := topo.Link("east", "west").GroupsTopic()
	kfaketest.Wait(t, 30*time.Second, "the mirror's group snapshot topic on west", func() (bool, string) {
		info, err := kafkaread.Topic(kfaketest.Ctx(t, 10*time.Second), kfaketest.Dial(t, topo, "west"), groups)
		return err == nil && info.Exists, "not yet"
	})

	plan := planTo(t, topo, "west")
	before := snapshots(t, topo, "east", "west")
	var c confirmCounter
	err := execute(t, topo, plan, t.TempDir(), &c)
	if err == nil {
		t.Fatal("the failover ran with group billing active on west")
	}
	t.Logf("refused: %v", err)
	var serr *plans.StepError
	if !errors.As(err, &serr) || serr.Name != StepPreflight {
		t.Errorf("got %v; want the preflight step to refuse", err)
	}
	msg := err.Error()
	for _, want := range []string{"billing", "west", "stop those consumers"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not contain %q", msg, want)
		}
	}
	if strings.Contains(msg, "no mirror process") || strings.Contains(msg, "missing on") {
		t.Errorf("the preflight found other problems than the group (the test setup is wrong): %s", msg)
	}
	assertUnchanged(t, topo, before)
	noStepDone(t, topo, plan.ID)
}

// TestRefusalUnreachableStandby: planning to a cluster that is down, or to
// the cluster that is already active, is refused with the reason; a plan
// saved while the standby was up stops at its preflight, naming it, and
// the reachable cluster is left as it was.
func TestRefusalUnreachableStandby(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: "failover: {fence: acl, drain_timeout: 30s}\n"})
	topo := p.Topology
	seedOrders(t, topo)
	kfaketest.CreateTopic(t, topo, "west", "orders", 3, nil)

	for _, tc := range []struct{ to, want string }{
		{"east", "east is already the active"},
		{"north", "north"},
	} {
		_, err := PlanFailover(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), FailoverRequest{To: tc.to})
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("plan failover to %s: got %v, want a refusal saying %q", tc.to, err, tc.want)
		}
	}
	saved := planTo(t, topo, "west")
	before := snapshots(t, topo, "east")
	p.Stop("west")

	began := time.Now()
	_, err := PlanFailover(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), FailoverRequest{To: "west"})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "west") || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("plan failover to a stopped west: got %v, want a refusal naming west as unreachable", err)
	}
	t.Logf("refused in %v: %v", time.Since(began).Round(time.Millisecond), err)

	var c confirmCounter
	err = execute(t, topo, saved, t.TempDir(), &c)
	if err == nil {
		t.Fatal("a plan to a stopped west ran")
	}
	if !errors.Is(err, kafkaconn.ErrUnreachable) || !strings.Contains(err.Error(), "west") {
		t.Errorf("applying the saved plan: got %v, want an error naming west as unreachable", err)
	}
	if !strings.Contains(err.Error(), "check") {
		t.Errorf("applying the saved plan: %q does not say what to check", err)
	}
	assertUnchanged(t, topo, before)
	noStepDone(t, topo, saved.ID)
}

// TestRefusalDrainTimeout: the drain cannot finish (the end offsets must
// stay still for 30s, the drain may take 2s); the run fails with
// ErrDrainTimeout and rolls back: the fence ACLs are gone, the roles are the
// starting ones, steady, at the epoch the begin step wrote (start + 1, as
// drainParams.Rollback promises), and nothing else changed. The run cannot
// be resumed into a failover afterwards, and a new plan can be made.
func TestRefusalDrainTimeout(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: "failover: {fence: acl, drain_timeout: 2s, quiet_period: 30s}\n"})
	topo := p.Topology
	seedOrders(t, topo)
	unrelated := &sarama.Acl{Principal: "User:ops", Host: "*", Operation: sarama.AclOperationRead, PermissionType: sarama.AclPermissionAllow}
	if err := kfaketest.Admin(t, kfaketest.Dial(t, topo, "east")).CreateACL(sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: "orders",
		ResourcePatternType: sarama.AclPatternLiteral}, *unrelated); err != nil {
		t.Fatal(err)
	}
	startMirror(t, topo, "east", "west")
	waitMirrored(t, topo, "east", "west")
	waitGroupSynced(t, topo, "west", "billing", 3)

	plan := planTo(t, topo, "west")
	before := snapshots(t, topo, "east", "west")
	journal := t.TempDir()
	var c confirmCounter
	began := time.Now()
	err := execute(t, topo, plan, journal, &c)
	t.Logf("failed after %v: %v", time.Since(began).Round(time.Millisecond), err)
	if !errors.Is(err, ErrDrainTimeout) {
		t.Fatalf("got %v; want ErrDrainTimeout", err)
	}
	for _, want := range []string{"east->west", "drain_timeout", "roles restored", "removed the 1 fence ACL(s) from east"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not contain %q", err, want)
		}
	}

	after := map[string]*clusterSnap{}
	for _, cl := range []string{"east", "west"} {
		after[cl] = snapshotOf(t, topo, cl)
		s := after[cl].State
		if s.Epoch != 1 || s.Active != "east" || s.Standby != "west" || s.Phase != rolestate.PhaseSteady || s.Run != nil {
			t.Errorf("%s holds %s; want the starting roles, steady, no run, at epoch 1", cl, after[cl].Roles)
		}
		b, a := *before[cl], *after[cl]
		b.Roles, a.Roles = "", ""
		a.Topics = maps.Clone(a.Topics)
		if _, had := b.Topics[topology.StateTopic]; !had {
			delete(a.Topics, topology.StateTopic) // the roles, checked above
		}
		if cl == "east" {
			// The fence recorded itself there; the record is all that
			// may remain of it.
			delete(a.Topics, topology.FenceTopic)
		}
		for _, d := range snapDiff(&b, &a) {
			t.Errorf("%s changed: %s", cl, d)
		}
	}
	if rec := fenceRecordOf(t, topo, "east"); rec != nil && len(rec.Added) != 0 {
		t.Errorf("east still records fence ACLs after the rollback: %+v", rec.Added)
	}

	// Resuming the failed run must not pick the failover up again.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rerr := Resume(ctx, kfaketest.Session(t, topo), plan.ID, RunOptions{JournalDir: journal, Confirm: c.confirm})
	if !errors.Is(rerr, plans.ErrStalePlan) {
		t.Errorf("resume after the rollback: got %v, want plans.ErrStalePlan", rerr)
	}
	assertUnchanged(t, topo, after)
	if _, err := PlanFailover(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), FailoverRequest{To: "west"}); err != nil {
		t.Errorf("a new failover cannot be planned after the rollback: %v", err)
	}
}
