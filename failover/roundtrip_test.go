package failover

import (
	"context"

	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/mirror"
	"github.com/drctl/drctl/topology"
)

// app is the demo application of the round trip: a producer of numbered
// records and a consumer group, both on the live active cluster.
type app struct {
	t     *testing.T
	topo  *topology.Topology
	topic string
	group string

	mu       sync.Mutex
	active   string
	acked    map[int]bool // sequence numbers acknowledged
	consumed map[int]int  // sequence number -> times read
	paused   bool
	seq      int
	inflight sync.Mutex // held while a batch is being produced
}

// pause stops the producer and waits for a batch in flight.
func (a *app) pause(on bool) {
	a.mu.Lock()
	a.paused = on
	a.mu.Unlock()
	a.inflight.Lock()
	a.inflight.Unlock() //nolint:staticcheck // waiting for the batch in flight
}

func (a *app) produceOnce() error {
	a.inflight.Lock()
	defer a.inflight.Unlock()
	a.mu.Lock()
	if a.paused {
		a.mu.Unlock()
		return nil
	}
	active, seq := a.active, a.seq
	a.mu.Unlock()
	c := a.topo.Clusters[active]
	cfg, _ := c.SaramaConfig()
	cfg.Producer.Return.Successes = true
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	p, err := sarama.NewSyncProducer(c.Bootstrap, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	var msgs []*sarama.ProducerMessage
	for i := range 20 {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: a.topic, Key: sarama.StringEncoder(strconv.Itoa(seq + i)), Value: sarama.StringEncoder(strconv.Itoa(seq + i))})
	}
	if err := p.SendMessages(msgs); err != nil {
		return err
	}
	a.mu.Lock()
	for i := range 20 {
		a.acked[seq+i] = true
	}
	a.seq += 20
	a.mu.Unlock()
	return nil
}

// consumeAll reads, as group, everything from its committed position on
// cluster to the end, and commits, as a consumer that stops would.
func (a *app) consumeAll(cluster string) int {
	a.t.Helper()
	c := a.topo.Clusters[cluster]
	cfg, _ := c.SaramaConfig()
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	cl, err := sarama.NewClient(c.Bootstrap, cfg)
	if err != nil {
		a.t.Fatal(err)
	}
	defer cl.Close()
	cons, err := sarama.NewConsumerFromClient(cl)
	if err != nil {
		a.t.Fatal(err)
	}
	defer cons.Close()
	parts, err := cl.Partitions(a.topic)
	if err != nil {
		a.t.Fatal(err)
	}
	coord, err := cl.Coordinator(a.group)
	if err != nil {
		a.t.Fatal(err)
	}
	fetch := &sarama.OffsetFetchRequest{Version: 7, ConsumerGroup: a.group}
	for _, part := range parts {
		fetch.AddPartition(a.topic, part)
	}
	committed, err := coord.FetchOffset(fetch)
	if err != nil {
		a.t.Fatal(err)
	}
	commit := &sarama.OffsetCommitRequest{Version: 7, ConsumerGroup: a.group, ConsumerGroupGeneration: -1}
	n := 0
	for _, part := range parts {
		next := sarama.OffsetOldest
		if b := committed.GetBlock(a.topic, part); b != nil && b.Err == sarama.ErrNoError && b.Offset >= 0 {
			next = b.Offset
		}
		end, err := cl.GetOffset(a.topic, part, sarama.OffsetNewest)
		if err != nil {
			a.t.Fatal(err)
		}
		if next >= end {
			continue
		}
		pc, err := cons.ConsumePartition(a.topic, part, next)
		if err != nil {
			a.t.Fatal(err)
		}
		last := int64(-1)
	read:
		for last+1 < end {
			select {
			case m := <-pc.Messages():
				seq, _ := strconv.Atoi(string(m.Value))
				a.mu.Lock()
				a.consumed[seq]++
				a.mu.Unlock()
				n++
				last = m.Offset
			case <-time.After(time.Second):
				break read // the rest are transaction markers
			}
		}
		pc.Close()
		if last >= 0 {
			commit.AddBlock(a.topic, part, last+1, 0, "")
		}
	}
	if _, err := coord.CommitOffset(commit); err != nil {
		a.t.Fatal(err)
	}
	return n
}

func (a *app) check(phase string) {
	a.t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	var missing, dup []int
	for s := range a.acked {
		switch a.consumed[s] {
		case 0:
			missing = append(missing, s)
		case 1:
		default:
			dup = append(dup, s)
		}
	}
	sort.Ints(missing)
	sort.Ints(dup)
	if len(missing) > 0 || len(dup) > 0 {
		a.t.Fatalf("%s: %d acknowledged records, %d never read (%v...), %d read twice (%v...)", phase, len(a.acked), len(missing), head(missing), len(dup), head(dup))
	}
	a.t.Logf("%s: %d records produced, each read exactly once", phase, len(a.acked))
}

func head(s []int) []int {
	if len(s) > 5 {
		return s[:5]
	}
	return s
}

// TestRoundTrip: planned failover east -> west with the mirror and an
// application running; the group resumes on west and reads every record
// exactly once; the old active is salvaged, wiped and re-seeded; failback
// to east, same check.
func TestRoundTrip(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{
		Mirror: "  topics: {include: [\"orders\"]}\n  groups: {include: [\"billing\"]}\n  group_sync_interval: 500ms",
		Extra:  "failover: {fence: none, drain_timeout: 30s, quiet_period: 300ms}\n",
	})
	topo := p.Topology
	src := kfaketest.Dial(t, topo, "east")
	kfaketest.CreateTopicOn(t, src, "orders", 4, nil)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := mirror.NewDaemon(topo, mirror.DaemonOptions{StatePoll: 200 * time.Millisecond,
		Engine: mirror.Options{Shards: 2, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond}})
	dDone := make(chan error, 1)
	go func() { dDone <- d.Run(ctx) }()
	defer func() { cancel(); <-dDone }()

	a := &app{t: t, topo: topo, topic: "orders", group: "billing", active: "east", acked: map[int]bool{}, consumed: map[int]int{}}
	for range 10 {
		if err := a.produceOnce(); err != nil {
			t.Fatal(err)
		}
	}
	a.consumeAll("east") // the group reads part of the data on east
	for range 10 {
		if err := a.produceOnce(); err != nil {
			t.Fatal(err)
		}
	}
	// Producers keep running during the failover, pausing while the
	// operator says so (fence none).
	prodCtx, stopProd := context.WithCancel(ctx)
	prodDone := make(chan struct{})
	go func() {
		defer close(prodDone)
		for prodCtx.Err() == nil {
			_ = a.produceOnce()
			time.Sleep(20 * time.Millisecond)
		}
	}()

	run := func(to string, failback bool) {
		t.Helper()
		pctx, pcancel := context.WithTimeout(ctx, 30*time.Second)
		req := FailoverRequest{To: to}
		if failback {
			req.Kind = rolestate.RunFailback
		}
		plan, err := PlanFailover(pctx, kfaketest.Session(t, topo), req)
		pcancel()
		if err != nil {
			t.Fatal(err)
		}
		confirm := func(string) error {
			a.pause(true)
			return nil
		}
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Minute)
		defer rcancel()
		if err := Execute(rctx, kfaketest.Session(t, topo), plan, RunOptions{JournalDir: t.TempDir(), Confirm: confirm}); err != nil {
			t.Fatalf("failover to %s: %v", to, err)
		}
		a.mu.Lock()
		a.active, a.paused = to, false
		a.mu.Unlock()
	}
	a.pause(true) // lag reaches zero only while nothing is written
	waitMirrored(t, topo, "east", "west")
	a.pause(false)
	run("west", false)
	a.pause(true)
	a.consumeAll("west")
	a.check("after failover to west")
	a.pause(false)

	for range 10 {
		if err := a.produceOnce(); err != nil {
			t.Fatal(err)
		}
	}
	a.pause(true)
	waitMirrored(t, topo, "west", "east")
	a.pause(false)
	run("east", true)
	stopProd()
	<-prodDone
	a.consumeAll("east")
	a.check("after failback to east")

	st, _ := inspect.CollectStatus(ctx, kfaketest.Session(t, topo))
	if st.Roles.Active != "east" || st.Roles.Phase != "steady" || st.Roles.Epoch < 4 {
		t.Errorf("roles after the round trip: %+v", st.Roles)
	}
}
