package rolestate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"github.com/rcrowley/go-metrics"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// ErrStale is matched (errors.Is) by every *StaleError: the role state is
// not what the writer's plan was made against.
var ErrStale = errors.New("role state is stale")

// StaleError is a refused compare-and-set: the cluster's state was not at
// the expected epoch, or a concurrent writer of the same topology fenced
// this one mid-write. The state is unchanged by the refused write.
type StaleError struct {
	// Expected is the epoch the writer expected the cluster to hold.
	Expected int64
	// Want is the state the writer tried to write.
	Want State
	// Have is the state the cluster held (the zero State when Found is
	// false). For a fenced write it is the state read before writing.
	Have  State
	Found bool
	// Fenced is set when another writer of the same topology started
	// while this one was writing, and this write was aborted.
	Fenced bool
}

func (e *StaleError) Error() string {
	const fix = "run drctl status and plan again"
	switch {
	case e.Fenced:
		return fmt.Sprintf("another drctl wrote the role state of %s at the same time and this write was fenced; %s", e.Want.Topology, fix)
	case !e.Found:
		return fmt.Sprintf("the role state of %s is not stored in this cluster (epoch 0), but this plan was made at epoch %d; %s",
			e.Want.Topology, e.Expected, fix)
	}
	return fmt.Sprintf("the role state of %s moved to epoch %d (active %s, %s) since this plan was made at epoch %d; %s",
		e.Want.Topology, e.Have.Epoch, e.Have.Active, e.Have.Phase, e.Expected, fix)
}

// Is makes errors.Is(err, ErrStale) hold.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

const (
	// txnTimeout bounds how long a crashed writer's open transaction can
	// hold back the state partition's last stable offset.
	txnTimeout = 15 * time.Second
	// stableWait bounds the wait for transactions that were open on the
	// state partition when a writer fenced (other topologies' writers,
	// whose transactions time out after txnTimeout).
	stableWait = 2 * txnTimeout
)

// CompareAndSet writes next as the topology's state in the cluster behind
// client if, and only if, the cluster's committed state is at epoch
// expectedEpoch (a cluster without state counts as epoch 0) and next.Epoch
// is not below it. UpdatedAt and UpdatedBy are stamped when unset. The
// state topic is created (see createTopic) on the first write.
//
// Concurrent writers of one topology are serialised by Kafka's
// transactional-id fencing: the write opens a transactional producer with
// topology.StateTransactionalID(next.Topology), which fences any other writer's open
// transaction, then waits for the transactions open at that moment to
// settle, reads the state, compares, and writes it in a transaction. Of two
// writers racing from one expected epoch exactly one succeeds; the other
// gets a *StaleError (errors.Is(err, ErrStale)), as does any writer whose
// expected epoch is not the stored one.
//
// cfg is the cluster's client configuration (TLS, SASL, timeouts) that the
// producer starts from; nil means client.Config(). It is copied, not
// changed. An error that is not ErrStale leaves the state either unchanged
// or, only when the context ended or the commit itself failed in a way that
// could not be settled, possibly written: the message says so.
func CompareAndSet(ctx context.Context, client sarama.Client, cfg *sarama.Config, expectedEpoch int64, next State) error {
	if client == nil {
		return errors.New("write role state: not connected")
	}
	next = stamp(next)
	if err := next.Validate(); err != nil {
		return fmt.Errorf("write role state: %w", err)
	}
	if next.Epoch < expectedEpoch {
		return fmt.Errorf("write role state of %s: epoch %d is below the expected epoch %d; the epoch never moves back",
			next.Topology, next.Epoch, expectedEpoch)
	}
	if cfg == nil {
		cfg = client.Config()
	}
	pcfg, err := producerConfig(cfg, next.Topology)
	if err != nil {
		return fmt.Errorf("write role state of %s: %w", next.Topology, err)
	}
	value, err := json.Marshal(next)
	if err != nil {
		return fmt.Errorf("write role state of %s: %w", next.Topology, err)
	}
	w := &writer{client: client, cfg: pcfg, expected: expectedEpoch, next: next, value: value}
	w.stage.Store("look up the state topic")
	done := make(chan error, 1)
	go func() { done <- w.run(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		outcome := "nothing was written"
		if w.committing.Load() {
			outcome = "the commit was sent and may still take effect; run drctl status"
		}
		return fmt.Errorf("write role state of %s: %s: %w; %s", next.Topology, w.stage.Load(), ctx.Err(), outcome)
	}
}

// producerConfig derives the transactional producer's configuration from
// the cluster's: connection settings are kept, producer settings are those
// sarama requires for transactions.
func producerConfig(cfg *sarama.Config, name string) (*sarama.Config, error) {
	pc := *cfg
	// Metrics of a short-lived producer must not mix with, or be
	// unregistered from, the caller's client.
	pc.MetricRegistry = metrics.NewRegistry()
	pc.Metadata.AllowAutoTopicCreation = false
	kafkaconn.IdempotentProducer(&pc)
	kafkaconn.ManualPartitions(&pc)
	pc.Producer.Interceptors = nil
	pc.Producer.Transaction.ID = topology.StateTransactionalID(name)
	pc.Producer.Transaction.Timeout = txnTimeout
	if err := pc.Validate(); err != nil {
		return nil, fmt.Errorf("transactional producer configuration: %w", err)
	}
	return &pc, nil
}

// writer is one compare-and-set, run on its own goroutine so that the
// caller can return when its context ends; run always releases the
// producer, aborting its transaction unless it was committed or fenced.
type writer struct {
	client   sarama.Client
	cfg      *sarama.Config
	expected int64
	next     State
	value    []byte

	// stage names what run is doing, for an interrupted caller's error.
	stage atomic.Value // string
	// committing is set once the commit may have reached the cluster.
	committing atomic.Bool
}

func (w *writer) run(ctx context.Context) error {
	name := w.next.Topology
	wrap := func(what string, err error) error {
		return fmt.Errorf("write role state of %s: %s: %w", name, what, err)
	}
	at := func(stage string) { w.stage.Store(stage) }

	info, err := kafkaread.Topic(ctx, w.client, stateTopic)
	if err != nil {
		return wrap("look up the state topic", err)
	}
	if !info.Exists {
		if w.expected != 0 {
			return &StaleError{Expected: w.expected, Want: w.next}
		}
		at("create the state topic")
		if err := createTopic(ctx, w.client); err != nil {
			return wrap("first write", err)
		}
		if info, err = kafkaread.Topic(ctx, w.client, stateTopic); err != nil {
			return wrap("look up the state topic", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return wrap("before fencing", err)
	}

	// Fence: creating the producer initialises the transactional id,
	// which aborts any open transaction of another writer of this
	// topology (and, on real Kafka, waits until that abort or a pending
	// commit is complete).
	at("fence other writers")
	p, err := sarama.NewSyncProducer(info.Brokers, w.cfg)
	if err != nil {
		return wrap("open transactional producer "+topology.StateTransactionalID(name), err)
	}
	var inTxn, fenced bool
	defer func() {
		if inTxn && !fenced {
			_ = p.AbortTxn()
		}
		_ = p.Close()
	}()

	// Transactions open at the fence (other topologies' writers share
	// the partition) hold back the last stable offset; our topology's
	// earlier records are all below the high-water mark seen now, so
	// once the last stable offset passes it, the read sees them all.
	at("wait for open transactions on " + stateTopic)
	if err := awaitStable(ctx, w.client); err != nil {
		return wrap("read before writing", err)
	}
	at("read the current state")
	have, _, found, err := readLatest(ctx, w.client, name)
	if err != nil {
		return wrap("read before writing", err)
	}
	if haveEpoch := epochOf(have, found); haveEpoch != w.expected {
		return &StaleError{Expected: w.expected, Want: w.next, Have: have, Found: found}
	}
	if err := ctx.Err(); err != nil {
		return wrap("before writing", err)
	}

	at("write the state")
	if err := p.BeginTxn(); err != nil {
		fenced = kafkaread.IsFenced(err)
		return w.refused(fenced, have, found, wrap("begin transaction", err))
	}
	inTxn = true
	msg := &sarama.ProducerMessage{Topic: stateTopic, Partition: statePartition,
		Key: sarama.StringEncoder(name), Value: sarama.ByteEncoder(w.value)}
	if _, _, err := p.SendMessage(msg); err != nil {
		fenced = kafkaread.IsFenced(err)
		return w.refused(fenced, have, found, wrap("produce", err))
	}
	if err := ctx.Err(); err != nil {
		return wrap("before commit", err)
	}
	at("commit")
	w.committing.Store(true)
	if err := p.CommitTxn(); err != nil {
		fenced = kafkaread.IsFenced(err)
		if fenced {
			return w.refused(true, have, found, nil)
		}
		// The commit may have happened. Abort what may still be open
		// (this fails harmlessly if the commit went through), then
		// settle the outcome by reading.
		_ = p.AbortTxn()
		inTxn = false
		return w.settle(ctx, wrap("commit", err))
	}
	inTxn = false
	return nil
}

// refused turns a fenced write into a *StaleError; other errors pass.
func (w *writer) refused(fenced bool, have State, found bool, err error) error {
	if fenced {
		return &StaleError{Expected: w.expected, Want: w.next, Have: have, Found: found, Fenced: true}
	}
	return err
}

// settle decides the outcome of a failed commit by reading the state after
// every transaction open now has ended: our value means the commit took
// effect; another epoch means another writer won; an unchanged state means
// our write was aborted and commitErr is the answer.
func (w *writer) settle(ctx context.Context, commitErr error) error {
	unknown := func(err error) error {
		return fmt.Errorf("%w; its outcome could not be checked (%v): run drctl status", commitErr, err)
	}
	if err := awaitStable(ctx, w.client); err != nil {
		return unknown(err)
	}
	have, raw, found, err := readLatest(ctx, w.client, w.next.Topology)
	if err != nil {
		return unknown(err)
	}
	if found && string(raw) == string(w.value) {
		return nil
	}
	if haveEpoch := epochOf(have, found); haveEpoch != w.expected {
		return &StaleError{Expected: w.expected, Want: w.next, Have: have, Found: found}
	}
	return commitErr
}

// awaitStable waits, for at most stableWait, until the state partition's
// last stable offset reaches the high-water mark it had when called.
func awaitStable(ctx context.Context, client sarama.Client) error {
	ends, err := kafkaread.PartitionEnds(ctx, client, stateTopic, statePartition)
	if err != nil {
		return err
	}
	target, stable := ends.High, ends.Stable
	deadline := time.Now().Add(stableWait)
	for stable < target {
		if time.Now().After(deadline) {
			return fmt.Errorf("an open transaction has held %s at offset %d (high-water mark %d) for over %s; retry when it commits or times out",
				stateTopic, stable, target, stableWait)
		}
		if err := kafkaread.Sleep(ctx, 20*time.Millisecond); err != nil {
			return fmt.Errorf("wait for open transactions on %s: %w", stateTopic, err)
		}
		if stable, err = kafkaread.LastStableOffset(ctx, client, stateTopic, statePartition); err != nil {
			return err
		}
	}
	return nil
}

func epochOf(s State, found bool) int64 {
	if !found {
		return 0
	}
	return s.Epoch
}
