package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/poll"
	"github.com/drctl/drctl/topology"
)

// produceTick is how often the demo producer sends; each send carries the
// records owed at Rate since the last one.
const produceTick = 100 * time.Millisecond

// retryBackoff spaces the reconnections and retries of a failed consume:
// a second, then longer while the trouble lasts, up to five.
func retryBackoff() *poll.Backoff { return &poll.Backoff{Initial: time.Second, Max: 5 * time.Second} }

// Transactions: every txnEvery-th send that holds payments records writes
// them in a transaction, and every abortEvery-th transaction is aborted on
// purpose, so that read_committed matters downstream.
const (
	txnEvery   = 10
	abortEvery = 3
	txnID      = "drctl-sandbox-payments"
)

// traffic is the demo producer and consumer groups. They run on one cluster
// at a time, the one Options.ActiveFn names, and move when it changes.
type traffic struct {
	topo     *topology.Topology
	rate     int
	activeFn func(context.Context) string
	poll     time.Duration
	log      *logger
	runID    string // tags this run's records (header sandbox.run)

	// seq numbers the records of this run; it continues across cluster
	// switches, so a gap or a repeat downstream is visible.
	seq        atomic.Int64
	payBatches atomic.Int64
	txns       atomic.Int64

	produced, aborted, consumed, abortedRead, errs atomic.Int64

	mu      sync.Mutex
	active  string
	closing []error
}

func newTraffic(topo *topology.Topology, o Options, log *logger) *traffic {
	return &traffic{
		topo:     topo,
		rate:     o.Rate,
		activeFn: o.ActiveFn,
		poll:     o.ActivePoll,
		log:      log,
		runID:    strconv.FormatInt(time.Now().UnixMilli(), 10),
	}
}

func (t *traffic) stats() Stats {
	t.mu.Lock()
	active := t.active
	t.mu.Unlock()
	return Stats{
		Active:      active,
		Produced:    t.produced.Load(),
		Aborted:     t.aborted.Load(),
		Consumed:    t.consumed.Load(),
		AbortedRead: t.abortedRead.Load(),
		Errors:      t.errs.Load(),
	}
}

func (t *traffic) setActive(name string) {
	t.mu.Lock()
	t.active = name
	t.mu.Unlock()
}

// closeErr returns the errors met while closing clients.
func (t *traffic) closeErr() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return errors.Join(t.closing...)
}

// run follows the active cluster until ctx ends: on a change it stops the
// producer and consumers on the old cluster, waits until they have closed
// (the groups commit their positions and leave), and starts them on the
// new one, where the groups resume from their committed offsets there.
func (t *traffic) run(ctx context.Context) {
	poll := time.NewTicker(t.poll)
	defer poll.Stop()
	var (
		asked string // the last answer of activeFn
		stop  func() // stops the workers of the cluster they run on
	)
	for {
		want := t.ask(ctx)
		if ctx.Err() != nil {
			break
		}
		if want != asked {
			if stop != nil {
				stop()
				stop = nil
				t.setActive("")
				if t.topo.Clusters[want] == nil {
					t.log.hold()
					t.log.printf("traffic paused on %s: the roles are moving (a failover, failback or reseed is running)", asked)
				} else {
					t.log.printf("traffic stopped on %s", asked)
				}
			}
			asked = want
			if c := t.topo.Clusters[want]; c != nil {
				t.log.release()
				t.ensureUnmirroredTopics(c)
				stop = t.startOn(ctx, c)
				t.setActive(want)
				t.log.printf("traffic runs on %s, the active cluster: %d records/s; groups billing and analytics consume", want, t.rate)
			}
		}
		select {
		case <-ctx.Done():
		case <-poll.C:
		}
	}
	if stop != nil {
		stop()
	}
	t.setActive("")
}

// ask calls activeFn with a deadline, so a stuck lookup cannot stall the
// traffic forever.
func (t *traffic) ask(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, max(4*t.poll, 5*time.Second))
	defer cancel()
	return t.activeFn(ctx)
}

// startOn starts the producer and the consumer groups on c and returns a
// function that stops them and waits until every client is closed.
func (t *traffic) startOn(ctx context.Context, c *topology.Cluster) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { t.produce(ctx, c) })
	for _, g := range demoGroups {
		wg.Go(func() { t.consume(ctx, c, g) })
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// produce sends the demo records to c at the configured rate until ctx ends.
func (t *traffic) produce(ctx context.Context, c *topology.Cluster) {
	cfg, err := saramaConfig(c, "drctl-sandbox-producer", func(cfg *sarama.Config) {
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Producer.Return.Successes = true
	})
	if err != nil {
		t.fail("config "+c.Name, "producer on %s: %v", c.Name, err)
		return
	}
	var plain sarama.SyncProducer
	connect := func() (err error) {
		plain, err = sarama.NewSyncProducer(c.Bootstrap, cfg)
		return err
	}
	if !t.retry(ctx, "producer "+c.Name, "producer on "+c.Name, connect) {
		return
	}
	defer t.closeClient("producer on "+c.Name, plain)
	tx := &txnProducer{t: t, c: c}
	defer tx.close()

	tick := time.NewTicker(produceTick)
	defer tick.Stop()
	owed := 0.0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		owed += float64(t.rate) * produceTick.Seconds()
		n := int(owed)
		owed -= float64(n)
		if n == 0 {
			continue
		}
		now := time.Now()
		var msgs, payments []*sarama.ProducerMessage
		for range n {
			seq := t.seq.Add(1) - 1
			m := demoMessage(t.runID, seq, now)
			if isPayment(seq) {
				payments = append(payments, m)
			} else {
				msgs = append(msgs, m)
			}
		}
		if len(payments) > 0 && t.payBatches.Add(1)%txnEvery == 0 {
			tx.send(payments, t.txns.Add(1)%abortEvery == 0)
		} else {
			msgs = append(msgs, payments...)
		}
		t.sendPlain(c, plain, msgs)
	}
}

func (t *traffic) sendPlain(c *topology.Cluster, p sarama.SyncProducer, msgs []*sarama.ProducerMessage) {
	if len(msgs) == 0 {
		return
	}
	err := p.SendMessages(msgs)
	failed := 0
	if err != nil {
		var perrs sarama.ProducerErrors
		if errors.As(err, &perrs) && len(perrs) > 0 {
			failed, err = len(perrs), perrs[0].Err // the first cause says more than "failed to deliver"
		} else {
			failed = len(msgs)
		}
		t.fail("produce "+c.Name, "produce to %s: %d of %d records failed: %v (retrying with the next records)",
			c.Name, failed, len(msgs), err)
	}
	t.produced.Add(int64(len(msgs) - failed))
}

// txnProducer is the transactional payments producer on one cluster,
// created at its first transaction and recreated after any failure (which
// also fences and aborts what the failed one left open).
type txnProducer struct {
	t *traffic
	c *topology.Cluster
	p sarama.SyncProducer
}

func (x *txnProducer) send(msgs []*sarama.ProducerMessage, abort bool) {
	t, c := x.t, x.c
	if x.p == nil {
		cfg, err := saramaConfig(c, "drctl-sandbox-txn-producer", func(cfg *sarama.Config) {
			kafkaconn.IdempotentProducer(cfg)
			cfg.Producer.Transaction.ID = txnID
			cfg.Producer.Transaction.Timeout = 10 * time.Second
		})
		if err == nil {
			x.p, err = sarama.NewSyncProducer(c.Bootstrap, cfg)
		}
		if err != nil {
			t.fail("txn "+c.Name, "transactional producer on %s: %v (retrying at the next transaction)", c.Name, err)
			return
		}
	}
	for _, m := range msgs {
		markTxn(m, abort)
	}
	err := x.p.BeginTxn()
	if err == nil {
		err = x.p.SendMessages(msgs)
	}
	if err == nil {
		if abort {
			err = x.p.AbortTxn()
		} else {
			err = x.p.CommitTxn()
		}
	}
	if err != nil {
		t.fail("txn "+c.Name, "transaction on %s failed: %v (the producer is recreated)", c.Name, err)
		x.close()
		return
	}
	if abort {
		t.aborted.Add(int64(len(msgs)))
	} else {
		t.produced.Add(int64(len(msgs)))
	}
}

// close aborts a transaction left open (Close alone would leave readers
// blocked until it times out) and closes the producer.
func (x *txnProducer) close() {
	if x.p == nil {
		return
	}
	if x.p.TxnStatus()&sarama.ProducerTxnFlagInTransaction != 0 {
		_ = x.p.AbortTxn() // best effort: a failed abort is fenced by the next producer
	}
	x.t.closeClient("transactional producer on "+x.c.Name, x.p)
	x.p = nil
}

// retry calls connect until it succeeds or ctx ends, and reports which.
func (t *traffic) retry(ctx context.Context, key, what string, connect func() error) bool {
	b := retryBackoff()
	for {
		err := connect()
		if err == nil {
			return true
		}
		t.fail(key, "%s: %v (retrying)", what, err)
		if !b.Wait(ctx) {
			return false
		}
	}
}

// fail counts an error and logs it, at most once per errorEvery per key.
func (t *traffic) fail(key, format string, args ...any) {
	t.errs.Add(1)
	t.log.errorf(key, format, args...)
}

func (t *traffic) closeClient(what string, c io.Closer) {
	if err := c.Close(); err != nil {
		err = fmt.Errorf("sandbox: close %s: %w", what, err)
		t.log.printf("%v", err)
		t.mu.Lock()
		t.closing = append(t.closing, err)
		t.mu.Unlock()
	}
}

// ensureUnmirroredTopics creates, on the cluster the traffic moves to, the
// demo topics the mirror does not select (scratch): no mirror brings them
// there, and the demo producer writes to them wherever it runs.
func (t *traffic) ensureUnmirroredTopics(c *topology.Cluster) {
	var missing []demoTopic
	for _, dt := range demoTopics {
		if !t.topo.Mirrors(dt.name) {
			missing = append(missing, dt)
		}
	}
	if err := createTopics(c, missing); err != nil {
		t.fail("topics "+c.Name, "%v (the demo records for them fail until it succeeds)", err)
	}
}
