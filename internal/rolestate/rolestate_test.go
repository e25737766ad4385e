package rolestate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// env is a kfake pair with one sarama client per cluster, configured from
// the topology file as drctl configures them.
type env struct {
	pair    *kfaketest.Pair
	topo    *topology.Topology
	clients map[string]sarama.Client
	cfgs    map[string]*sarama.Config
}

func newEnv(t *testing.T) *env {
	t.Helper()
	p := kfaketest.NewPair(t, kfaketest.Options{})
	e := &env{pair: p, topo: p.Topology, clients: map[string]sarama.Client{}, cfgs: map[string]*sarama.Config{}}
	for _, name := range p.Topology.ClusterNames() {
		c := p.Topology.Clusters[name]
		cfg, err := c.SaramaConfig()
		if err != nil {
			t.Fatal(err)
		}
		client, err := sarama.NewClient(c.Bootstrap, cfg)
		if err != nil {
			t.Fatalf("connect %s: %v", name, err)
		}
		t.Cleanup(func() { _ = client.Close() })
		e.clients[name], e.cfgs[name] = client, cfg
	}
	return e
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// failover returns the state after moving the active role to the other
// cluster, one epoch on.
func failover(s State) State {
	s.Epoch++
	s.Active, s.Standby = s.Standby, s.Active
	s.UpdatedAt, s.UpdatedBy = time.Time{}, ""
	return s
}

func (e *env) cas(t *testing.T, cluster string, expected int64, next State) error {
	t.Helper()
	return CompareAndSet(ctxT(t, 20*time.Second), e.clients[cluster], e.cfgs[cluster], expected, next)
}

func (e *env) read(t *testing.T, cluster string) (State, bool) {
	t.Helper()
	s, found, err := Read(ctxT(t, 10*time.Second), e.clients[cluster], e.topo.Name)
	if err != nil {
		t.Fatalf("read %s: %v", cluster, err)
	}
	return s, found
}

func sameState(a, b State) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func TestReadFreshClusterAndResolveNothing(t *testing.T) {
	e := newEnv(t)
	if s, found := e.read(t, "east"); found {
		t.Fatalf("fresh cluster holds %v", s)
	}
	info, err := kafkaread.Topic(ctxT(t, 5*time.Second), e.clients["east"], topology.StateTopic)
	if err != nil || info.Exists {
		t.Fatalf("after a read, the state topic exists=%v (err %v); reads must not create it", info.Exists, err)
	}
	v := Resolve(ctxT(t, 10*time.Second), e.topo, e.clients)
	want := State{Topology: "test", Epoch: 0, Active: "east", Standby: "west", Phase: PhaseSteady}
	if !sameState(v.Current, want) || v.Source != SourceTopologyFile {
		t.Fatalf("Resolve = %v from %q; want the topology file's %v", v.Current, v.Source, want)
	}
	for name, cs := range v.Clusters {
		if !cs.Reachable || cs.Found || cs.Stale || cs.Err != "" {
			t.Errorf("cluster %s: %+v; want reachable, no state, not stale", name, cs)
		}
	}
}

func TestCompareAndSet(t *testing.T) {
	e := newEnv(t)
	s1 := failover(Initial(e.topo))
	s1.Phase, s1.Run = PhaseFailingOver, &Run{ID: "r1", Kind: RunFailover, Step: 2, StartedAt: time.Now().UTC().Truncate(time.Millisecond), By: "ops@host"}
	if err := e.cas(t, "east", 0, s1); err != nil {
		t.Fatalf("first write: %v", err)
	}
	got, found := e.read(t, "east")
	if !found || got.Epoch != 1 || got.Active != "west" || got.Run == nil || got.Run.Step != 2 || got.UpdatedBy == "" || got.UpdatedAt.IsZero() {
		t.Fatalf("read back %+v (found %v)", got, found)
	}
	info, err := kafkaread.Topic(ctxT(t, 5*time.Second), e.clients["east"], topology.StateTopic)
	if err != nil || !info.Exists || info.Partitions != 1 {
		t.Fatalf("state topic after first write: %+v, %v", info, err)
	}
	if policy := topicConfig(t, e, "east", "cleanup.policy"); policy != "compact" {
		t.Errorf("state topic cleanup.policy = %q, want compact", policy)
	}

	// Progress within an epoch: the epoch may stay.
	s1b := got
	s1b.Run.Step, s1b.UpdatedAt = 3, time.Time{}
	if err := e.cas(t, "east", 1, s1b); err != nil {
		t.Fatalf("same-epoch write: %v", err)
	}

	tests := []struct {
		name      string
		cluster   string
		expected  int64
		next      State
		wantStale bool
		wantHave  int64
		wantFound bool
		wantInMsg []string
	}{
		{name: "expected epoch behind", cluster: "east", expected: 0, next: s1, wantStale: true, wantHave: 1, wantFound: true,
			wantInMsg: []string{"moved to epoch 1", "active west", "drctl status"}},
		{name: "expected epoch ahead", cluster: "east", expected: 4, next: failover(failover(failover(failover(s1)))), wantStale: true, wantHave: 1, wantFound: true},
		{name: "no state but an epoch expected", cluster: "west", expected: 1, next: failover(s1), wantStale: true, wantFound: false,
			wantInMsg: []string{"not stored", "drctl status"}},
		{name: "epoch moving back", cluster: "east", expected: 1, next: Initial(e.topo), wantInMsg: []string{"never moves back"}},
		{name: "invalid state", cluster: "east", expected: 1, next: State{Topology: "test", Epoch: 2, Active: "east", Standby: "east", Phase: PhaseSteady},
			wantInMsg: []string{"both \"east\""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := e.cas(t, tt.cluster, tt.expected, tt.next)
			if err == nil {
				t.Fatal("write succeeded")
			}
			var se *StaleError
			if errors.Is(err, ErrStale) != tt.wantStale || errors.As(err, &se) != tt.wantStale {
				t.Fatalf("err = %v; stale = %v, want %v", err, errors.Is(err, ErrStale), tt.wantStale)
			}
			if se != nil && (se.Have.Epoch != tt.wantHave || se.Found != tt.wantFound || se.Expected != tt.expected) {
				t.Errorf("StaleError = %+v; want have epoch %d, found %v", se, tt.wantHave, tt.wantFound)
			}
			for _, s := range tt.wantInMsg {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message %q lacks %q", err, s)
				}
			}
		})
	}
	if got, _ := e.read(t, "east"); got.Epoch != 1 || got.Run.Step != 3 {
		t.Errorf("refused writes changed the state: %v", got)
	}
	info, err = kafkaread.Topic(ctxT(t, 5*time.Second), e.clients["west"], topology.StateTopic)
	if err != nil || info.Exists {
		t.Errorf("a refused write created the state topic on west (exists=%v, err %v)", info.Exists, err)
	}
}

func TestResolvePicksHigherEpoch(t *testing.T) {
	e := newEnv(t)
	s1 := failover(Initial(e.topo))
	s2 := failover(s1)
	for _, w := range []struct {
		cluster  string
		expected int64
		next     State
	}{{"east", 0, s1}, {"east", 1, s2}, {"west", 0, s1}} {
		if err := e.cas(t, w.cluster, w.expected, w.next); err != nil {
			t.Fatalf("write %s epoch %d: %v", w.cluster, w.next.Epoch, err)
		}
	}
	v := Resolve(ctxT(t, 10*time.Second), e.topo, e.clients)
	if v.Current.Epoch != 2 || v.Current.Active != "east" || v.Source != "east" {
		t.Fatalf("Resolve = %v from %s; want epoch 2 from east", v.Current, v.Source)
	}
	if east, west := v.Clusters["east"], v.Clusters["west"]; east.Stale || !west.Stale || west.State.Epoch != 1 || west.Epoch() != 1 {
		t.Fatalf("east %+v, west %+v; want west stale at epoch 1", east, west)
	}
	if !v.AllReachable() {
		t.Error("AllReachable = false")
	}
}

// topicConfig returns one config value of the state topic.
func topicConfig(t *testing.T, e *env, cluster, key string) string {
	t.Helper()
	cfg, err := e.topo.Clusters[cluster].SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Metadata.Full = true // sarama's admin needs it to find the controller
	admin, err := sarama.NewClusterAdmin(e.topo.Clusters[cluster].Bootstrap, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topology.StateTopic, ConfigNames: []string{key}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range entries {
		if c.Name == key {
			return c.Value
		}
	}
	return ""
}

// TestReadRejectsForeignRecords writes records drctl did not write under
// the topology's key: only the latest one counts, and an unusable latest
// one is an error that names the fix, for reads and writes alike.
func TestReadRejectsForeignRecords(t *testing.T) {
	e := newEnv(t)
	if err := e.cas(t, "east", 0, failover(Initial(e.topo))); err != nil {
		t.Fatal(err)
	}
	pcfg, err := e.topo.Clusters["east"].SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	pcfg.Producer.Return.Successes = true
	pcfg.Producer.Partitioner = sarama.NewManualPartitioner
	plain, err := sarama.NewSyncProducer(e.topo.Clusters["east"].Bootstrap, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	put := func(value string) {
		t.Helper()
		msg := &sarama.ProducerMessage{Topic: topology.StateTopic, Partition: 0, Key: sarama.StringEncoder(e.topo.Name), Value: sarama.StringEncoder(value)}
		if _, _, err := plain.SendMessage(msg); err != nil {
			t.Fatal(err)
		}
	}
	put("{not json")
	_, _, err = Read(ctxT(t, 10*time.Second), e.clients["east"], e.topo.Name)
	if err == nil || !strings.Contains(err.Error(), "not valid JSON") || !strings.Contains(err.Error(), "delete topic "+topology.StateTopic) {
		t.Fatalf("Read over garbage: %v; want an error naming the fix", err)
	}
	if err := e.cas(t, "east", 1, failover(failover(Initial(e.topo)))); err == nil || errors.Is(err, ErrStale) {
		t.Fatalf("write over garbage: %v; want a plain error", err)
	}
	put(`{"topology":"other","epoch":7,"active":"east","standby":"west","phase":"steady","run":null}`)
	if _, _, err := Read(ctxT(t, 10*time.Second), e.clients["east"], e.topo.Name); err == nil || !strings.Contains(err.Error(), `names topology "other"`) {
		t.Fatalf("Read of another topology's state under this key: %v", err)
	}
	put(`{"topology":"test","epoch":4,"active":"east","standby":"west","phase":"steady","run":null}`)
	if got, _ := e.read(t, "east"); got.Epoch != 4 {
		t.Fatalf("read %v; the latest good record should win", got)
	}
}

// TestConcurrentCompareAndSet races two writers from the same expected
// epoch, round after round: exactly one wins each round.
func TestConcurrentCompareAndSet(t *testing.T) {
	e := newEnv(t)
	const rounds = 20
	state := Initial(e.topo)
	for round := range rounds {
		next := failover(state)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range errs {
			wg.Go(func() {
				mine := next
				mine.UpdatedBy = fmt.Sprintf("writer-%d", i)
				<-start
				errs[i] = e.cas(t, "east", state.Epoch, mine)
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("round %d: both writers won", round)
				}
				winner = i
			case !errors.Is(err, ErrStale):
				t.Fatalf("round %d: writer %d: %v; want success or ErrStale", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no writer won: %v", round, errs)
		}
		got, _ := e.read(t, "east")
		if got.Epoch != state.Epoch+1 || got.UpdatedBy != fmt.Sprintf("writer-%d", winner) {
			t.Fatalf("round %d: stored %v by %s; want epoch %d by writer-%d", round, got, got.UpdatedBy, state.Epoch+1, winner)
		}
		state = got
	}
	if state.Epoch != rounds {
		t.Fatalf("epoch %d after %d rounds", state.Epoch, rounds)
	}
}

// txnProducer is a transactional producer writing raw state records, as a
// crashed or misbehaving writer would.
func txnProducer(t *testing.T, e *env, cluster, id string) sarama.SyncProducer {
	t.Helper()
	cfg, err := producerConfig(e.cfgs[cluster], "ignored")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Transaction.ID = id
	p, err := sarama.NewSyncProducer(e.topo.Clusters[cluster].Bootstrap, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func sendState(t *testing.T, p sarama.SyncProducer, s State) {
	t.Helper()
	s = stamp(s)
	b, _ := json.Marshal(s)
	if err := p.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topology.StateTopic, Partition: 0, Key: sarama.StringEncoder(s.Topology), Value: sarama.ByteEncoder(b)}); err != nil {
		t.Fatal(err)
	}
}

func TestReadSkipsAbortedAndOpenTransactions(t *testing.T) {
	e := newEnv(t)
	s1 := failover(Initial(e.topo))
	rogue := txnProducer(t, e, "east", "rogue")

	if err := e.cas(t, "east", 0, s1); err != nil {
		t.Fatal(err)
	}
	// An aborted epoch 5, then a committed epoch 2: Read sees 2.
	bad := s1
	bad.Epoch = 5
	sendState(t, rogue, bad)
	if err := rogue.AbortTxn(); err != nil {
		t.Fatal(err)
	}
	s2 := failover(s1)
	if err := e.cas(t, "east", 1, s2); err != nil {
		t.Fatalf("write after an aborted transaction: %v", err)
	}
	if got, _ := e.read(t, "east"); got.Epoch != 2 {
		t.Fatalf("read %v; want epoch 2", got)
	}
	// An aborted epoch 9 after the committed one stays invisible.
	bad.Epoch = 9
	sendState(t, rogue, bad)
	if err := rogue.AbortTxn(); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.read(t, "east"); got.Epoch != 2 {
		t.Fatalf("read %v after an aborted epoch 9; want epoch 2", got)
	}
	// A transaction left open (epoch 10) is not seen, and reading does
	// not wait for it.
	bad.Epoch = 10
	sendState(t, rogue, bad)
	start := time.Now()
	if got, _ := e.read(t, "east"); got.Epoch != 2 {
		t.Fatalf("read %v with epoch 10 uncommitted; want epoch 2", got)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("read took %v past an open transaction", d)
	}
	// A writer waits for a foreign open transaction, within its context.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := CompareAndSet(ctx, e.clients["east"], e.cfgs["east"], 2, failover(s2))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "nothing was written") || time.Since(start) > 5*time.Second {
		t.Fatalf("write behind a foreign open transaction: %v; want the context's deadline", err)
	}
	if err := rogue.AbortTxn(); err != nil {
		t.Fatal(err)
	}
	if err := e.cas(t, "east", 2, failover(s2)); err != nil {
		t.Fatalf("write once the foreign transaction ended: %v", err)
	}
}

// TestCompareAndSetFencesCrashedWriter leaves a transaction of the state's
// own transactional id open, as a writer killed mid-write would. The next
// writer fences it at once instead of waiting for its timeout, and the
// crashed writer can no longer commit.
func TestCompareAndSetFencesCrashedWriter(t *testing.T) {
	e := newEnv(t)
	s1 := failover(Initial(e.topo))
	if err := e.cas(t, "east", 0, s1); err != nil {
		t.Fatal(err)
	}
	crashed := txnProducer(t, e, "east", topology.StateTransactionalID(e.topo.Name))
	zombie := failover(s1)
	zombie.UpdatedBy = "zombie"
	sendState(t, crashed, zombie)

	start := time.Now()
	s2 := failover(s1)
	if err := e.cas(t, "east", 1, s2); err != nil {
		t.Fatalf("write past a crashed writer: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("write took %v: it waited for the crashed transaction instead of fencing it", d)
	}
	if err := crashed.CommitTxn(); err == nil {
		t.Fatal("the fenced writer committed")
	}
	if got, _ := e.read(t, "east"); got.Epoch != 2 || got.UpdatedBy == "zombie" {
		t.Fatalf("read %v by %s; want epoch 2 by this writer", got, got.UpdatedBy)
	}
}

func TestResolveWithClosedCluster(t *testing.T) {
	e := newEnv(t)
	if err := e.cas(t, "east", 0, failover(Initial(e.topo))); err != nil {
		t.Fatal(err)
	}
	e.pair.Stop("west")

	start := time.Now()
	v := Resolve(ctxT(t, 12*time.Second), e.topo, e.clients)
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("Resolve took %v with a closed cluster", d)
	}
	west := v.Clusters["west"]
	if west.Reachable || !strings.Contains(west.Err, "west") || west.Stale {
		t.Fatalf("west = %+v; want unreachable with an error naming it", west)
	}
	if east := v.Clusters["east"]; !east.Reachable || !east.Found || v.Current.Epoch != 1 || v.Source != "east" {
		t.Fatalf("Resolve = %+v", v)
	}
	if v.AllReachable() {
		t.Error("AllReachable = true")
	}

	// No client at all is unreachable too.
	v = Resolve(ctxT(t, 5*time.Second), e.topo, map[string]sarama.Client{"east": e.clients["east"]})
	if w := v.Clusters["west"]; w.Reachable || !strings.Contains(w.Err, "cluster west: not connected") {
		t.Fatalf("west without a client = %+v", w)
	}
}

// TestResolveWithHangingCluster makes west accept connections but never
// answer metadata requests: Resolve returns when its context ends.
func TestResolveWithHangingCluster(t *testing.T) {
	e := newEnv(t)
	west := e.pair.West
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	west.ControlKey(3, func(kmsg.Request) (kmsg.Response, error, bool) { // 3: Metadata
		west.KeepControl()
		west.SleepControl(func() { <-release })
		return nil, nil, false
	})

	start := time.Now()
	v := Resolve(ctxT(t, time.Second), e.topo, e.clients)
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Resolve took %v; its context allowed 1s", d)
	}
	if w := v.Clusters["west"]; w.Reachable || !strings.Contains(w.Err, "cluster west: no answer in time") {
		t.Fatalf("west = %+v; want unreachable, no answer in time", w)
	}
	if east := v.Clusters["east"]; !east.Reachable {
		t.Fatalf("east = %+v", east)
	}
}

func TestWriteAll(t *testing.T) {
	e := newEnv(t)
	targets := func(expectEast, expectWest int64) []Target {
		return []Target{
			{Cluster: "east", Client: e.clients["east"], Config: e.cfgs["east"], Expected: expectEast},
			{Cluster: "west", Client: e.clients["west"], Config: e.cfgs["west"], Expected: expectWest},
		}
	}
	s1 := failover(Initial(e.topo))
	for _, r := range WriteAll(ctxT(t, 20*time.Second), targets(0, 0), s1) {
		if r.Err != nil {
			t.Fatalf("write %s: %v", r.Cluster, r.Err)
		}
	}
	east, _ := e.read(t, "east")
	west, _ := e.read(t, "west")
	if !sameState(east, west) || east.Epoch != 1 {
		t.Fatalf("east %v and west %v differ", east, west)
	}

	results := WriteAll(ctxT(t, 20*time.Second), targets(1, 0), failover(s1))
	if results[0].Cluster != "east" || results[0].Err != nil {
		t.Errorf("east: %+v; want success", results[0])
	}
	if r := results[1]; r.Cluster != "west" || !errors.Is(r.Err, ErrStale) || !strings.Contains(r.Err.Error(), "cluster west") {
		t.Errorf("west: %+v; want ErrStale naming the cluster", r)
	}
	v := Resolve(ctxT(t, 10*time.Second), e.topo, e.clients)
	if v.Current.Epoch != 2 || !v.Clusters["west"].Stale {
		t.Errorf("after a partial write: %+v", v)
	}
}

func TestReconcile(t *testing.T) {
	topo := &topology.Topology{Name: "test", Active: "east", Standby: "west"}
	at := func(epoch int64, active string, sec int) ClusterState {
		standby := map[string]string{"east": "west", "west": "east"}[active]
		return ClusterState{Reachable: true, Found: true, State: State{Topology: "test", Epoch: epoch, Active: active, Standby: standby,
			Phase: PhaseSteady, UpdatedAt: time.Unix(int64(sec), 0)}}
	}
	none := ClusterState{Reachable: true}
	down := ClusterState{Err: "cluster x: unreachable"}
	tests := []struct {
		name        string
		east, west  ClusterState
		wantEpoch   int64
		wantSource  string
		wantStale   [2]bool
		wantCurrent string // active cluster
	}{
		{"nothing anywhere", none, none, 0, SourceTopologyFile, [2]bool{false, false}, "east"},
		{"both unreachable", down, down, 0, SourceTopologyFile, [2]bool{false, false}, "east"},
		{"state on one side", none, at(1, "west", 1), 1, "west", [2]bool{true, false}, "west"},
		{"higher epoch wins", at(3, "east", 1), at(2, "west", 9), 3, "east", [2]bool{false, true}, "east"},
		{"equal epochs: later write wins, none stale", at(2, "west", 1), at(2, "west", 5), 2, "west", [2]bool{false, false}, "west"},
		{"unreachable is never stale", down, at(1, "west", 1), 1, "west", [2]bool{false, false}, "west"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := reconcile(topo, []string{"east", "west"}, []ClusterState{tt.east, tt.west})
			if v.Current.Epoch != tt.wantEpoch || v.Source != tt.wantSource || v.Current.Active != tt.wantCurrent {
				t.Errorf("current %v from %s; want epoch %d (active %s) from %s", v.Current, v.Source, tt.wantEpoch, tt.wantCurrent, tt.wantSource)
			}
			if got := [2]bool{v.Clusters["east"].Stale, v.Clusters["west"].Stale}; got != tt.wantStale {
				t.Errorf("stale (east, west) = %v, want %v", got, tt.wantStale)
			}
		})
	}
}

func TestStateValidate(t *testing.T) {
	run := &Run{ID: "r", Kind: RunFailover}
	ok := State{Topology: "t", Active: "a", Standby: "b", Phase: PhaseSteady}
	with := func(f func(*State)) State { s := ok; f(&s); return s }
	tests := []struct {
		name    string
		s       State
		wantErr string
	}{
		{"steady", ok, ""},
		{"failing over with a run", with(func(s *State) { s.Phase, s.Run = PhaseFailingOver, run }), ""},
		{"no topology", with(func(s *State) { s.Topology = "" }), "no topology name"},
		{"negative epoch", with(func(s *State) { s.Epoch = -1 }), "negative epoch"},
		{"same clusters", with(func(s *State) { s.Standby = "a" }), "both \"a\""},
		{"missing standby", with(func(s *State) { s.Standby = "" }), "missing"},
		{"unknown phase", with(func(s *State) { s.Phase = "failing" }), "unknown phase"},
		{"steady with a run", with(func(s *State) { s.Run = run }), "steady with run"},
		{"reseeding without a run", with(func(s *State) { s.Phase = PhaseReseeding }), "without a run"},
		{"unknown run kind", with(func(s *State) { s.Phase, s.Run = PhaseFailingBack, &Run{ID: "r", Kind: "x"} }), "unknown kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.s.Validate()
			if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Validate() = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestStateJSON pins the stored schema: changing a field name breaks every
// cluster's stored state.
func TestStateJSON(t *testing.T) {
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s := State{Topology: "payments", Epoch: 3, Active: "west", Standby: "east", Phase: PhaseFailingOver,
		Run:       &Run{ID: "r-1", Kind: RunFailover, Step: 4, StartedAt: at, By: "ops@box"},
		UpdatedAt: at, UpdatedBy: "ops@box"}
	want := `{"topology":"payments","epoch":3,"active":"west","standby":"east","phase":"failing-over",` +
		`"run":{"id":"r-1","kind":"failover","step":4,"started_at":"2025-03-01T12:00:00Z","by":"ops@box"},` +
		`"updated_at":"2025-03-01T12:00:00Z","updated_by":"ops@box"}`
	b, err := json.Marshal(s)
	if err != nil || string(b) != want {
		t.Fatalf("JSON = %s (%v)\nwant   %s", b, err, want)
	}
	var back State
	if err := json.Unmarshal(b, &back); err != nil || !sameState(back, s) {
		t.Fatalf("round trip = %+v (%v)", back, err)
	}
	steady, _ := json.Marshal(State{Topology: "p", Active: "a", Standby: "b", Phase: PhaseSteady})
	if !strings.Contains(string(steady), `"run":null`) {
		t.Errorf("a steady state's run is not null: %s", steady)
	}
}

// TestResolveLive resolves through a command's session: it dials the
// clusters the session has not dialled yet, reads both, and fails (with a
// complete View) only when no cluster can be dialled.
func TestResolveLive(t *testing.T) {
	e := newEnv(t)
	if err := e.cas(t, "west", 0, failover(Initial(e.topo))); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 30*time.Second)
	s := kafkaconn.Open(ctx, e.topo, "east") // west is dialled by ResolveLive
	defer s.Close()
	v, err := ResolveLive(ctx, s)
	if err != nil || v.Current.Epoch != 1 || v.Current.Active != "west" || v.Source != "west" || !v.Clusters["east"].Stale {
		t.Fatalf("ResolveLive = %+v, %v; want epoch 1 from west, east stale", v, err)
	}
	if _, err := s.Need("west"); err != nil {
		t.Fatalf("west not in the session after ResolveLive: %v", err)
	}

	e.pair.Stop("east")
	e.pair.Stop("west")
	none := kafkaconn.Open(ctx, e.topo)
	defer none.Close()
	v, err = ResolveLive(ctx, none)
	if !errors.Is(err, ErrNoneReachable) || !strings.Contains(err.Error(), "cluster east (") || !strings.Contains(err.Error(), "cluster west (") {
		t.Fatalf("ResolveLive with no cluster = %v; want ErrNoneReachable naming both", err)
	}
	if v.Source != SourceTopologyFile || v.Clusters["east"].Reachable || v.Clusters["west"].Reachable {
		t.Fatalf("View with no cluster = %+v; want both unreachable, home roles", v)
	}
}
