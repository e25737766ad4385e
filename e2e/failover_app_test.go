//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// foApp is the application of the failover tests, running as the ordinary
// principal app: a producer of numbered records that writes to whichever
// cluster the live roles name active, and consumer groups that read on a
// cluster the test chooses and commit as they go. It keeps what it needs to
// prove exactly-once across a switch: every sequence number that was
// acknowledged (where, and when it was sent), every one that was refused,
// and how often each was read.
type foApp struct {
	t      *testing.T
	ft     *foTopo
	topics []string // record n goes to topics[n % len(topics)]
	cfg    map[string]*sarama.Config

	inflight sync.Mutex // held while a batch is being produced
	mu       sync.Mutex
	active   string
	paused   bool
	seq      int
	acks     map[int]foAck
	refused  map[int]foRefusal
	switches []string
	errs     map[string]int
}

// foAck is an acknowledged record.
type foAck struct {
	Cluster   string
	Topic     string
	Partition int32
	Offset    int64
	Sent      time.Time // when the batch holding it was handed to the producer
}

// foRefusal is a record the cluster refused.
type foRefusal struct {
	Cluster string
	Err     error
	Sent    time.Time
}

func (r foRefusal) authz() bool { return errors.Is(r.Err, sarama.ErrTopicAuthorizationFailed) }

// newFoApp prepares the application; start runs it.
func newFoApp(t *testing.T, ft *foTopo, topics ...string) *foApp {
	a := &foApp{t: t, ft: ft, topics: topics, cfg: map[string]*sarama.Config{}, active: "east",
		acks: map[int]foAck{}, refused: map[int]foRefusal{}, errs: map[string]int{}}
	for _, c := range env.clusterNames {
		cfg := saramaConfig(t, env.AppUser, env.AppPass, mechSCRAM512)
		cfg.ClientID = "drctl-e2e-app"
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1
		cfg.Producer.Retry.Max = 3
		cfg.Consumer.IsolationLevel = sarama.ReadCommitted
		cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
		cfg.Consumer.Offsets.AutoCommit.Interval = 200 * time.Millisecond
		cfg.Consumer.Group.Session.Timeout = 6 * time.Second
		cfg.Consumer.Group.Heartbeat.Interval = time.Second
		a.cfg[c] = cfg
	}
	return a
}

// start runs the producer (a batch of 5 records every 40 ms) and the role
// watcher until ctx ends; the returned func waits for both.
func (a *foApp) start(ctx context.Context) func() {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a.produce(ctx) }()
	go func() { defer wg.Done(); a.watchRoles(ctx) }()
	return wg.Wait
}

// watchRoles follows the live roles, as an application's service discovery
// would (here: drctl's role state, polled).
func (a *foApp) watchRoles(ctx context.Context) {
	for ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		r, err := inspect.CollectRoles(rctx, session(a.t, a.ft.Topo))
		cancel()
		if err == nil && r.Active != "" {
			a.mu.Lock()
			if r.Active != a.active {
				a.switches = append(a.switches, fmt.Sprintf("%s: %s -> %s (epoch %d, phase %s)", time.Now().Format("15:04:05.000"), a.active, r.Active, r.Epoch, r.Phase))
				a.active = r.Active
			}
			a.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (a *foApp) produce(ctx context.Context) {
	var p sarama.SyncProducer
	var on string
	defer func() {
		if p != nil {
			_ = p.Close()
		}
	}()
	for ctx.Err() == nil {
		a.produceBatch(&p, &on)
		select {
		case <-ctx.Done():
		case <-time.After(40 * time.Millisecond):
		}
	}
}

// produceBatch sends one batch to the active cluster, unless paused. A
// producer that saw an error is replaced, so that no idempotence state
// carries over a refusal.
func (a *foApp) produceBatch(p *sarama.SyncProducer, on *string) {
	a.inflight.Lock()
	defer a.inflight.Unlock()
	a.mu.Lock()
	if a.paused {
		a.mu.Unlock()
		return
	}
	cluster, seq := a.active, a.seq
	a.mu.Unlock()
	if *p != nil && *on != cluster {
		_ = (*p).Close()
		*p = nil
	}
	if *p == nil {
		np, err := sarama.NewSyncProducer([]string{env.bootstrapByCluster[cluster]}, a.cfg[cluster])
		if err != nil {
			a.note(cluster, err)
			return
		}
		*p, *on = np, cluster
	}
	const n = 5
	msgs := make([]*sarama.ProducerMessage, n)
	for i := range msgs {
		s := seq + i
		msgs[i] = &sarama.ProducerMessage{Topic: a.topics[s%len(a.topics)], Key: sarama.StringEncoder("k" + strconv.Itoa(s)),
			Value: sarama.StringEncoder(strconv.Itoa(s)), Metadata: s}
	}
	sent := time.Now()
	err := (*p).SendMessages(msgs)
	failed := map[int]error{}
	var perrs sarama.ProducerErrors
	switch {
	case errors.As(err, &perrs):
		for _, pe := range perrs {
			failed[pe.Msg.Metadata.(int)] = pe.Err
		}
	case err != nil:
		for _, m := range msgs {
			failed[m.Metadata.(int)] = err
		}
	}
	a.mu.Lock()
	for _, m := range msgs {
		s := m.Metadata.(int)
		if e, ok := failed[s]; ok {
			a.refused[s] = foRefusal{Cluster: cluster, Err: e, Sent: sent}
			continue
		}
		a.acks[s] = foAck{Cluster: cluster, Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Sent: sent}
	}
	a.seq += n
	a.mu.Unlock()
	if len(failed) > 0 {
		for _, e := range failed {
			a.note(cluster, e)
			break
		}
		_ = (*p).Close()
		*p = nil
	}
}

func (a *foApp) note(cluster string, err error) {
	a.mu.Lock()
	a.errs[cluster+": "+err.Error()]++
	a.mu.Unlock()
}

// pause stops (true) or restarts the producer; stopping waits for the
// batch in flight.
func (a *foApp) pause(on bool) {
	a.mu.Lock()
	a.paused = on
	a.mu.Unlock()
	a.inflight.Lock()
	a.inflight.Unlock() //nolint:staticcheck // waits for the batch in flight
}

// acked returns the number of acknowledged records.
func (a *foApp) acked() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.acks)
}

// waitAcked waits until n more records than now were acknowledged.
func (a *foApp) waitAcked(n int, timeout time.Duration) {
	a.t.Helper()
	target := a.acked() + n
	kfaketest.WaitFor(a.t, timeout, fmt.Sprintf("%d acknowledged records", target), func() error {
		if got := a.acked(); got < target {
			return fmt.Errorf("%d acknowledged", got)
		}
		return nil
	})
}

// refusals counts, per cluster, records refused with an authorization
// error and with any other error.
func (a *foApp) refusals(cluster string) (authz, other int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range a.refused {
		if r.Cluster != cluster {
			continue
		}
		if r.authz() {
			authz++
		} else {
			other++
		}
	}
	return authz, other
}

// ackedAfter lists records acknowledged by cluster that were sent after t0.
func (a *foApp) ackedAfter(cluster string, t0 time.Time) []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []int
	for s, k := range a.acks {
		if k.Cluster == cluster && k.Sent.After(t0) {
			out = append(out, s)
		}
	}
	sort.Ints(out)
	return out
}

// summary describes the producer's history.
func (a *foApp) summary() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	per := map[string]int{}
	for _, k := range a.acks {
		per[k.Cluster]++
	}
	s := fmt.Sprintf("%d records sent, %d acknowledged (%v), %d refused; role switches seen: %v", a.seq, len(a.acks), per, len(a.refused), a.switches)
	if len(a.errs) > 0 {
		s += fmt.Sprintf("; errors: %v", a.errs)
	}
	return s
}

// probe writes one record to topic on cluster as app and returns the error.
func (a *foApp) probe(cluster, topic string) error {
	cfg := saramaConfig(a.t, env.AppUser, env.AppPass, mechSCRAM512)
	cfg.Producer.Retry.Max = 0
	p, err := sarama.NewSyncProducer([]string{env.bootstrapByCluster[cluster]}, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("probe")})
	return err
}

// foGroup is one consumer group of the application; reads counts, over
// the whole test, how often each sequence number was read.
type foGroup struct {
	app    *foApp
	name   string
	topics []string
	mu     sync.Mutex
	reads  map[int]int
}

func (a *foApp) group(name string, topics ...string) *foGroup {
	return &foGroup{app: a, name: name, topics: topics, reads: map[int]int{}}
}

func (g *foGroup) read() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, c := range g.reads {
		n += c
	}
	return n
}

// foMember is the group's one running consumer, on one cluster.
type foMember struct {
	g       *foGroup
	cluster string
	cg      sarama.ConsumerGroup
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	last    map[string]map[int32]int64 // topic -> partition -> last offset read
}

// start joins the group on cluster and consumes from its committed
// positions (the earliest offset where it has none), marking every record
// it reads; it returns once the member holds its partitions.
func (g *foGroup) start(cluster string) *foMember {
	t := g.app.t
	t.Helper()
	cg, err := sarama.NewConsumerGroup([]string{env.bootstrapByCluster[cluster]}, g.name, g.app.cfg[cluster])
	if err != nil {
		t.Fatalf("group %s on %s: %v", g.name, cluster, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &foMember{g: g, cluster: cluster, cg: cg, cancel: cancel, done: make(chan struct{}), last: map[string]map[int32]int64{}}
	ready := make(chan struct{}, 1)
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, g.topics, foHandler{m: m, ready: ready}); err != nil {
				if errors.Is(err, sarama.ErrClosedConsumerGroup) {
					return
				}
				g.app.note(cluster, fmt.Errorf("group %s: %w", g.name, err))
				time.Sleep(200 * time.Millisecond)
			}
		}
	}()
	t.Cleanup(func() { m.cancel(); _ = m.cg.Close() })
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		t.Fatalf("group %s never got its partitions on %s", g.name, cluster)
	}
	return m
}

// stop leaves the group after committing what was read, and checks that
// the commit landed: the group's committed position of every partition it
// read is the offset after the last record read.
func (m *foMember) stop() {
	t := m.g.app.t
	t.Helper()
	m.cancel()
	if err := m.cg.Close(); err != nil {
		t.Fatalf("close group %s on %s: %v", m.g.name, m.cluster, err)
	}
	<-m.done
	admin, err := sarama.NewClusterAdminFromClient(m.g.app.ft.dial(t, m.cluster))
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	want := map[string][]int32{}
	for topic, parts := range m.last {
		for p := range parts {
			want[topic] = append(want[topic], p)
		}
	}
	if len(want) == 0 {
		return
	}
	resp, err := admin.ListConsumerGroupOffsets(m.g.name, want)
	if err != nil {
		t.Fatalf("offsets of %s on %s: %v", m.g.name, m.cluster, err)
	}
	for topic, parts := range m.last {
		for p, last := range parts {
			b := resp.GetBlock(topic, p)
			if b == nil || b.Offset != last+1 {
				t.Fatalf("group %s on %s: %s/%d committed %v, want %d (the consumer's own final commit did not land)", m.g.name, m.cluster, topic, p, b, last+1)
			}
		}
	}
}

type foHandler struct {
	m     *foMember
	ready chan struct{}
}

func (h foHandler) Setup(sarama.ConsumerGroupSession) error {
	select {
	case h.ready <- struct{}{}:
	default:
	}
	return nil
}

// Cleanup commits synchronously what the session marked.
func (h foHandler) Cleanup(s sarama.ConsumerGroupSession) error {
	s.Commit()
	return nil
}

func (h foHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for {
		select {
		case <-s.Context().Done():
			return nil
		case msg, ok := <-c.Messages():
			if !ok {
				return nil
			}
			seq, err := strconv.Atoi(string(msg.Value))
			if err != nil {
				seq = -1 // not the application's record
			}
			g := h.m.g
			g.mu.Lock()
			g.reads[seq]++
			g.mu.Unlock()
			h.m.mu.Lock()
			if h.m.last[msg.Topic] == nil {
				h.m.last[msg.Topic] = map[int32]int64{}
			}
			h.m.last[msg.Topic][msg.Partition] = msg.Offset
			h.m.mu.Unlock()
			s.MarkMessage(msg, "")
		}
	}
}

// expected returns the acknowledged records of the group's topics.
func (g *foGroup) expected() map[int]foAck {
	a := g.app
	a.mu.Lock()
	defer a.mu.Unlock()
	in := map[string]bool{}
	for _, tp := range g.topics {
		in[tp] = true
	}
	out := map[int]foAck{}
	for s, k := range a.acks {
		if in[k.Topic] {
			out[s] = k
		}
	}
	return out
}

// verify waits until the group has read every acknowledged record of its
// topics, then checks that it read each exactly once and read nothing
// that a cluster refused. It returns a one-line summary.
func (g *foGroup) verify(phase string, timeout time.Duration) string {
	t := g.app.t
	t.Helper()
	want := g.expected()
	kfaketest.WaitFor(t, timeout, fmt.Sprintf("%s: group %s read all %d acknowledged records", phase, g.name, len(want)), func() error {
		g.mu.Lock()
		defer g.mu.Unlock()
		missing := 0
		for s := range want {
			if g.reads[s] == 0 {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d not read yet", missing)
		}
		return nil
	})
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.app
	a.mu.Lock()
	defer a.mu.Unlock()
	var dup, refusedRead, unknown []int
	for s, n := range g.reads {
		_, acked := want[s]
		r, refused := a.refused[s]
		switch {
		case n > 1:
			dup = append(dup, s)
		case !acked && refused && r.authz():
			refusedRead = append(refusedRead, s)
		case !acked && !refused:
			unknown = append(unknown, s)
		}
	}
	sort.Ints(dup)
	sort.Ints(refusedRead)
	sort.Ints(unknown)
	if len(dup) > 0 || len(refusedRead) > 0 || len(unknown) > 0 {
		t.Fatalf("%s: group %s: %d acknowledged records; %d read more than once %v; %d refused by the fence yet read %v; %d never sent yet read %v",
			phase, g.name, len(want), len(dup), foHead(dup), len(refusedRead), foHead(refusedRead), len(unknown), foHead(unknown))
	}
	return fmt.Sprintf("%s: group %s read each of its %d acknowledged records exactly once", phase, g.name, len(want))
}

func foHead(s []int) []int {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}
