package drill

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// follower is the canary application of a disruptive drill: a producer of
// sequence-numbered records and a consumer group, both on the cluster the
// drill points them at, as an application redirected by a failover's hooks
// would be. The producer retries a record until a cluster acknowledges
// it; the group reads from its committed position and commits as it goes.
type follower struct {
	topo  *topology.Topology
	id    string
	topic string
	group string
	rate  int

	// sending is held while a record is being sent (see stopWrites).
	sending sync.Mutex

	mu sync.Mutex
	// writeTo and readOn are the clusters the producer and the group use
	// ("": paused).
	writeTo, readOn string
	seq             int
	acked           map[int]ack
	refused         map[string]int       // writes refused, by cluster
	firstAck        map[string]time.Time // first acknowledgement, by cluster
	firstRead       map[string]time.Time // first record the group read, by cluster
	reads           map[int][]readAt     // each time the group read a sequence number
	writeErr        map[string]string    // last write error, by cluster
}

type ack struct {
	Cluster string
	Offset  int64
	At      time.Time
}

type readAt struct {
	Cluster string
	Offset  int64
}

func newFollower(topo *topology.Topology, id string, rate int) *follower {
	return &follower{topo: topo, id: id, topic: topo.CanaryTopic(), group: topo.CanaryGroup(), rate: rate,
		acked: map[int]ack{}, refused: map[string]int{}, firstAck: map[string]time.Time{}, firstRead: map[string]time.Time{},
		reads: map[int][]readAt{}, writeErr: map[string]string{}}
}

// point directs the producer and the group ("" pauses one).
func (f *follower) point(writeTo, readOn string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writeTo, f.readOn = writeTo, readOn
}

func (f *follower) pointWrite(c string) { f.mu.Lock(); f.writeTo = c; f.mu.Unlock() }
func (f *follower) pointRead(c string)  { f.mu.Lock(); f.readOn = c; f.mu.Unlock() }

// run produces and consumes until ctx ends.
func (f *follower) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); f.produce(ctx) }()
	go func() { defer wg.Done(); f.consume(ctx) }()
	wg.Wait()
}

func (f *follower) produce(ctx context.Context) {
	producers := map[string]sarama.SyncProducer{}
	defer func() {
		for _, p := range producers {
			_ = p.Close()
		}
	}()
	tick := time.NewTicker(time.Second / time.Duration(f.rate))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		f.sending.Lock()
		f.produceOne(producers)
		f.sending.Unlock()
	}
}

// produceOne sends the next record to the cluster the producer is pointed
// at, if any.
func (f *follower) produceOne(producers map[string]sarama.SyncProducer) {
	f.mu.Lock()
	to, seq := f.writeTo, f.seq
	f.mu.Unlock()
	if to == "" {
		return
	}
	p := producers[to]
	if p == nil {
		var err error
		if p, err = canaryProducer(f.topo.Clusters[to]); err != nil {
			f.noteWriteErr(to, err)
			return
		}
		producers[to] = p
	}
	at := time.Now()
	_, off, err := p.SendMessage(canaryMessage(f.topic, f.id, seq, at))
	if err != nil {
		f.noteWriteErr(to, err)
		_ = p.Close()
		delete(producers, to)
		return
	}
	f.mu.Lock()
	f.acked[seq] = ack{Cluster: to, Offset: off, At: at}
	if _, ok := f.firstAck[to]; !ok {
		f.firstAck[to] = time.Now()
	}
	f.seq++
	f.mu.Unlock()
}

// stopWrites pauses the producer and returns once no record is in flight:
// every record sent so far is acknowledged or failed.
func (f *follower) stopWrites() {
	f.pointWrite("")
	f.sending.Lock()
	//nolint:staticcheck // an empty critical section: wait for the send in flight
	f.sending.Unlock()
}

func (f *follower) noteWriteErr(cluster string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writeErr[cluster] = err.Error()
	if isRefused(err) {
		f.refused[cluster]++
	}
}

// isRefused reports whether a write failed because the cluster denied it.
func isRefused(err error) bool {
	return errors.Is(err, sarama.ErrTopicAuthorizationFailed) || errors.Is(err, sarama.ErrClusterAuthorizationFailed) ||
		errors.Is(err, sarama.ErrTransactionalIDAuthorizationFailed)
}

func canaryProducer(c *topology.Cluster) (sarama.SyncProducer, error) {
	p, err := kafkaconn.NewSyncProducer(c, func(cfg *sarama.Config) {
		kafkaconn.ManualPartitions(cfg)
		cfg.Producer.Timeout = 5 * time.Second // the brokers' wait for the replicas: a canary is small
	})
	if err != nil {
		return nil, kafkaconn.Explain(c, err)
	}
	return p, nil
}

// consume reads, as the canary group, from its committed position on the
// cluster it is pointed at, and commits after each batch.
func (f *follower) consume(ctx context.Context) {
	clients := map[string]sarama.Client{}
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	for {
		if kafkaread.Sleep(ctx, 100*time.Millisecond) != nil {
			return
		}
		f.mu.Lock()
		on := f.readOn
		f.mu.Unlock()
		if on == "" {
			continue
		}
		c := clients[on]
		if c == nil {
			// The canary application's own client, as an application
			// has its own: not drctl's session.
			var err error
			if c, err = kafkaconn.Dial(ctx, f.topo.Clusters[on], nil); err != nil {
				continue
			}
			clients[on] = c
		}
		f.consumeOnce(ctx, c, on)
	}
}

func (f *follower) consumeOnce(ctx context.Context, c sarama.Client, on string) {
	from, err := committedPosition(ctx, c, f.group, f.topic)
	if err != nil {
		return
	}
	if from < 0 {
		from = 0
	}
	next, err := kafkaread.ReadCommitted(ctx, c, f.topic, 0, from, func(r kafkaread.Record) error {
		seq, ok := canarySeq(r, f.id, 1<<30)
		if !ok {
			return nil
		}
		f.mu.Lock()
		if f.readOn != on { // redirected mid-batch: stop here
			f.mu.Unlock()
			return errRedirected
		}
		f.reads[seq] = append(f.reads[seq], readAt{Cluster: on, Offset: r.Offset})
		if _, ok := f.firstRead[on]; !ok {
			f.firstRead[on] = time.Now()
		}
		f.mu.Unlock()
		return nil
	})
	if err != nil && !errors.Is(err, errRedirected) {
		return
	}
	if next > from {
		_ = commitPosition(ctx, c, f.group, f.topic, next)
	}
}

var errRedirected = errors.New("redirected")

// caughtUp waits until the group has read every acknowledged record but
// those in kept (salvaged: the group cannot read them), or until wait
// passes.
func (f *follower) caughtUp(ctx context.Context, wait time.Duration, kept map[int]bool) {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		f.mu.Lock()
		done := true
		for seq := range f.acked {
			if len(f.reads[seq]) == 0 && !kept[seq] {
				done = false
				break
			}
		}
		f.mu.Unlock()
		if done || kafkaread.Sleep(ctx, 100*time.Millisecond) != nil {
			return
		}
	}
}

// tally counts, over the acknowledged sequence numbers in [lo, hi), those
// never read (lost), those written more than once (duplicated: read at
// distinct offsets of one cluster) and those the group read again (re-read).
// A record in kept (salvaged into quarantine) is not lost.
func (f *follower) tally(lo, hi int, kept map[int]bool) (lost, duplicated, reread int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for seq := lo; seq < hi; seq++ {
		if _, ok := f.acked[seq]; !ok {
			continue
		}
		rs := f.reads[seq]
		if len(rs) == 0 {
			if !kept[seq] {
				lost++
			}
			continue
		}
		offsets := map[readAt]bool{}
		for _, r := range rs {
			offsets[r] = true
		}
		perCluster := map[string]int{}
		for r := range offsets {
			perCluster[r.Cluster]++
		}
		dup := false
		for _, n := range perCluster {
			if n > 1 {
				dup = true
			}
		}
		switch {
		case dup:
			duplicated++
		case len(rs) > len(offsets) || len(perCluster) > 1:
			reread++
		}
	}
	return lost, duplicated, reread
}

// ackedIn counts the records of [lo, hi) a cluster acknowledged.
func (f *follower) ackedIn(lo, hi int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for seq := lo; seq < hi; seq++ {
		if _, ok := f.acked[seq]; ok {
			n++
		}
	}
	return n
}

// ackedBy counts the records cluster acknowledged.
func (f *follower) ackedBy(cluster string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, a := range f.acked {
		if a.Cluster == cluster {
			n++
		}
	}
	return n
}

func (f *follower) nextSeq() int { f.mu.Lock(); defer f.mu.Unlock(); return f.seq }
