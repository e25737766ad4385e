package kafkaread

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/IBM/sarama"
)

// TestClassify is the classifier's table: Kafka codes and error values,
// wrapped, joined and inside sarama's own containers. The last rows prove
// that message text decides nothing.
func TestClassify(t *testing.T) {
	errOurs := errors.New("consumer group is active on the standby")
	for _, tc := range []struct {
		name string
		err  error
		want Class
	}{
		{"nil", nil, Final},
		{"leader moved", sarama.ErrNotLeaderForPartition, Transient},
		{"wrapped coordinator moved", fmt.Errorf("commit: %w", sarama.ErrNotCoordinatorForConsumer), Transient},
		{"coordinator loading", sarama.ErrOffsetsLoadInProgress, Transient},
		{"unstable offsets", sarama.ErrUnstableOffsetCommit, Transient},
		{"request timed out", sarama.ErrRequestTimedOut, Transient},
		{"controller moved", sarama.ErrNotController, Transient},
		{"concurrent transactions", sarama.ErrConcurrentTransactions, Transient},
		{"missing topic", sarama.ErrUnknownTopicOrPartition, Final},
		{"authorisation", sarama.ErrTopicAuthorizationFailed, Final},
		{"transactional id denied", sarama.ErrTransactionalIDAuthorizationFailed, Final},
		{"group has members", sarama.ErrRebalanceInProgress, Final},
		{"offset out of range", fmt.Errorf("fetch: %w", sarama.ErrOffsetOutOfRange), Final},
		{"producer fenced", sarama.ErrProducerFenced, Fenced},
		{"code 90 unnamed", sarama.KError(90), Fenced},
		{"invalid producer epoch", fmt.Errorf("commit: %w", sarama.ErrInvalidProducerEpoch), Fenced},
		{"kfake's fence answer", sarama.ErrInvalidTxnState, Fenced},
		{"transaction manager gave up", fmt.Errorf("commit: %w", sarama.ErrTransactionNotReady), Fenced},
		{"fence inside a sarama sentinel", sarama.Wrap(sarama.ErrAddPartitionsToTxn, sarama.ErrProducerFenced), Fenced},
		{"a sarama sentinel alone", sarama.Wrap(sarama.ErrTransactionNotReady), Fenced},
		{"transient and final joined", errors.Join(sarama.ErrNotLeaderForPartition, fmt.Errorf("p/1: %w", sarama.ErrUnknownTopicOrPartition)), Final},
		{"transient and fenced joined", errors.Join(sarama.ErrRequestTimedOut, sarama.ErrProducerFenced), Fenced},
		{"all transient joined", errors.Join(sarama.ErrNotLeaderForPartition, sarama.ErrLeaderNotAvailable), Transient},
		{"producer errors, one fenced", sarama.ProducerErrors{{Err: sarama.ErrNotEnoughReplicas}, {Err: sarama.ErrProducerFenced}}, Fenced},
		{"producer errors, transient", sarama.ProducerErrors{{Err: sarama.ErrNotEnoughReplicas}}, Transient},
		{"refused connection", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, Transient},
		{"connection reset", fmt.Errorf("read: %w", syscall.ECONNRESET), Transient},
		{"connection closed", io.EOF, Transient},
		{"response cut", fmt.Errorf("decode: %w", io.ErrUnexpectedEOF), Transient},
		{"out of brokers", sarama.ErrOutOfBrokers, Transient},
		{"not connected", sarama.ErrNotConnected, Transient},
		{"closed client", sarama.ErrClosedClient, Final},
		{"cancelled", fmt.Errorf("read: %w", context.Canceled), Final},
		{"deadline", context.DeadlineExceeded, Final},
		{"an error of ours", fmt.Errorf("%w: the coordinator refused the commit: %v", errOurs, sarama.ErrRebalanceInProgress), Final},
		{"marked final", MarkFinal(sarama.ErrNotLeaderForPartition), Final},
		{"marked final, wrapped", fmt.Errorf("x: %w", MarkFinal(sarama.ErrOffsetsLoadInProgress)), Final},
		{"text that looks fenced", errors.New("fenced: ProducerFenced: Unknown error: transaction is not ready: invalid producer epoch"), Final},
		{"text that looks transient", errors.New("kafka server: Request exceeded the user-specified time limit in the request"), Final},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.err); got != tc.want {
				t.Errorf("Classify(%v) = %s, want %s", tc.err, got, tc.want)
			}
			if got := IsFenced(tc.err); got != (tc.want == Fenced) {
				t.Errorf("IsFenced = %v", got)
			}
			if got := Retriable(tc.err); got != (tc.want == Transient) {
				t.Errorf("Retriable = %v", got)
			}
		})
	}
}

func TestMarkFinalKeepsTheChain(t *testing.T) {
	err := MarkFinal(fmt.Errorf("commit: %w", sarama.ErrNotCoordinatorForConsumer))
	var kerr sarama.KError
	if !errors.Is(err, sarama.ErrNotCoordinatorForConsumer) || !errors.As(err, &kerr) || err.Error() != "commit: "+sarama.ErrNotCoordinatorForConsumer.Error() {
		t.Fatalf("MarkFinal hid the error: %v", err)
	}
	if MarkFinal(nil) != nil {
		t.Fatal("MarkFinal(nil) is not nil")
	}
}

// status is a transaction manager's state, as a producer reports it.
type status sarama.ProducerTxnStatusFlag

func (s status) TxnStatus() sarama.ProducerTxnStatusFlag { return sarama.ProducerTxnStatusFlag(s) }

func TestProducerFenced(t *testing.T) {
	fatal := status(sarama.ProducerTxnFlagInError | sarama.ProducerTxnFlagFatalError)
	abortable := status(sarama.ProducerTxnFlagInError | sarama.ProducerTxnFlagAbortableError)
	ready := status(sarama.ProducerTxnFlagReady)
	for _, tc := range []struct {
		name string
		p    TxnProducer
		err  error
		want bool
	}{
		{"fenced error, ready manager", ready, sarama.ErrProducerFenced, true},
		{"manager in its fatal state", fatal, errors.New("shard 3: no acknowledgement within 10s"), true},
		{"manager gave up after a transition", fatal, sarama.ErrTransitionNotAllowed, true},
		{"abortable error", abortable, sarama.ErrNotEnoughReplicas, false},
		{"ready manager, timeout", ready, sarama.ErrRequestTimedOut, false},
		{"no producer, fenced error", nil, fmt.Errorf("open: %w", sarama.ErrInvalidProducerEpoch), true},
		{"no producer, other error", nil, sarama.ErrOutOfBrokers, false},
	} {
		if got := ProducerFenced(tc.p, tc.err); got != tc.want {
			t.Errorf("%s: ProducerFenced = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestFencedProducerOnKfake: a transactional producer whose id a second
// producer initialises is recognised as fenced from the error of its
// next commit and its transaction manager, on a real Kafka wire protocol.
func TestFencedProducerOnKfake(t *testing.T) {
	c, _ := newCluster(t)
	old := producer(t, c, "drctl.test.fence")
	must(t, old.BeginTxn())
	send(t, old, "before the fence")
	_ = producer(t, c, "drctl.test.fence") // initialises the id: fences old
	err := old.CommitTxn()
	if err == nil {
		t.Fatal("the fenced producer committed")
	}
	if !ProducerFenced(old, err) {
		t.Fatalf("not recognised as fenced: %v (class %s, status %v)", err, Classify(err), old.TxnStatus())
	}
	t.Logf("fenced producer's commit: %v (class %s)", err, Classify(err))
	err = old.BeginTxn()
	if err == nil || !ProducerFenced(old, err) {
		t.Fatalf("a later call of the fenced producer: %v", err)
	}
}
