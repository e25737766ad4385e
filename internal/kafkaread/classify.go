package kafkaread

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/IBM/sarama"
)

// Class is what a caller can do about an error from a Kafka request.
type Class uint8

const (
	// Final: sending the request again cannot help — a missing topic, a
	// refused authorisation, a request the broker rejects, an ended
	// context, a closed client, or an error drctl does not know.
	Final Class = iota
	// Transient: the request may succeed when sent again, after a fresh
	// look-up of the leader, controller or group coordinator — leadership
	// moving, a coordinator loading, a timeout, a broken connection.
	Transient
	// Fenced: a transactional producer lost its transactional id to a newer
	// holder, or its transaction manager gave the transaction up. It must
	// never be used again.
	Fenced
)

func (c Class) String() string {
	switch c {
	case Transient:
		return "transient"
	case Fenced:
		return "fenced"
	}
	return "final"
}

// kafkaErrors classifies Kafka's error codes. It follows Kafka's own
// "retriable" flag for the requests drctl sends; a code that is not listed
// is Final. A few codes Kafka calls retriable are Final here on purpose:
// UNKNOWN_TOPIC_OR_PARTITION (drctl never waits for a topic to appear by
// retrying a request; it reports the topic missing), and the answers of a
// group coordinator about members (REBALANCE_IN_PROGRESS,
// UNKNOWN_MEMBER_ID, ...), which for drctl's member-less commits mean that
// the group is active.
var kafkaErrors = map[sarama.KError]Class{
	// Leadership and replicas moving.
	sarama.ErrNotLeaderForPartition:       Transient,
	sarama.ErrLeaderNotAvailable:          Transient,
	sarama.ErrReplicaNotAvailable:         Transient,
	sarama.ErrFencedLeaderEpoch:           Transient,
	sarama.ErrUnknownLeaderEpoch:          Transient,
	sarama.ErrOffsetNotAvailable:          Transient,
	sarama.ErrNotController:               Transient,
	sarama.ErrPreferredLeaderNotAvailable: Transient,
	sarama.ErrEligibleLeadersNotAvailable: Transient,
	// Brokers slow, busy or short of replicas.
	sarama.ErrRequestTimedOut:              Transient,
	sarama.ErrNetworkException:             Transient,
	sarama.ErrKafkaStorageError:            Transient,
	sarama.ErrNotEnoughReplicas:            Transient,
	sarama.ErrNotEnoughReplicasAfterAppend: Transient,
	sarama.ErrThrottlingQuotaExceeded:      Transient,
	// Group and transaction coordinators moving or loading.
	sarama.ErrNotCoordinatorForConsumer:       Transient,
	sarama.ErrConsumerCoordinatorNotAvailable: Transient,
	sarama.ErrOffsetsLoadInProgress:           Transient,
	sarama.ErrUnstableOffsetCommit:            Transient,
	sarama.ErrConcurrentTransactions:          Transient,
	// A newer producer initialised the transactional id. kfake answers
	// INVALID_TXN_STATE where Kafka answers PRODUCER_FENCED (it checks that
	// the partition is in the already aborted transaction before the
	// epoch); drctl's producers begin, produce and commit in order, so they
	// reach that state only when fenced.
	sarama.ErrProducerFenced:       Fenced,
	sarama.ErrInvalidProducerEpoch: Fenced,
	sarama.ErrInvalidTxnState:      Fenced,
}

// clientErrors classifies sarama's own errors, which carry no Kafka code.
var clientErrors = []struct {
	err   error
	class Class
}{
	{sarama.ErrOutOfBrokers, Transient},
	{sarama.ErrNotConnected, Transient},
	{sarama.ErrBrokerNotFound, Transient},
	{sarama.ErrIncompleteResponse, Transient},
	{sarama.ErrInsufficientData, Transient},
	{sarama.ErrControllerNotAvailable, Transient},
	// sarama's transaction manager returns it once it has given the
	// transaction up; drctl's in-order producers get there only when fenced
	// (under load CommitTxn answers it instead of PRODUCER_FENCED).
	{sarama.ErrTransactionNotReady, Fenced},
}

// Classify says what a caller can do about err. It reads only data: the
// Kafka error codes (sarama.KError) and error values in err's tree
// (errors.Is / errors.As, through wrapping, errors.Join and
// sarama.ProducerErrors), never the message text.
//
// Where the tree holds several errors, Fenced wins over Final and Final over
// Transient: one part that cannot succeed makes the whole request final. A
// broken or timed-out connection (net.Error, io.EOF, a reset or refused
// connection) is Transient; any other error that names no code, an ended
// context and an error marked with MarkFinal are Final. nil is Final
// (there is nothing to retry).
func Classify(err error) Class {
	if err == nil {
		return Final
	}
	class := Transient
	seen := false
	walk(err, func(leaf error) {
		seen = true
		c := classifyLeaf(leaf)
		if c == Fenced || (c == Final && class != Fenced) {
			class = c
		}
	})
	if !seen {
		return Final
	}
	return class
}

// IsFenced reports whether err says that a transactional producer was
// fenced (Classify(err) == Fenced).
func IsFenced(err error) bool { return Classify(err) == Fenced }

// Retriable reports whether a request that failed with err may succeed when
// sent again (Classify(err) == Transient).
func Retriable(err error) bool { return Classify(err) == Transient }

// TxnProducer is what ProducerFenced needs of a sarama producer.
type TxnProducer interface {
	TxnStatus() sarama.ProducerTxnStatusFlag
}

// ProducerFenced reports whether the transactional producer p, whose call
// failed with err, must be given up as fenced: err says so, or p's
// transaction manager is in its fatal state, from which it starts no
// transaction again (it gets there on PRODUCER_FENCED and on the other
// answers that end a transactional id's use). A nil p is judged by err
// alone.
func ProducerFenced(p TxnProducer, err error) bool {
	if IsFenced(err) {
		return true
	}
	return p != nil && p.TxnStatus()&sarama.ProducerTxnFlagFatalError != 0
}

// finalError marks an error as final whatever it wraps.
type finalError struct{ err error }

func (e finalError) Error() string { return e.err.Error() }
func (e finalError) Unwrap() error { return e.err }

// MarkFinal returns err marked Final for Classify (and so for Retry), whatever
// it wraps: for an operation's own decision that retrying cannot help. errors.Is
// and errors.As still see through it. MarkFinal(nil) is nil.
func MarkFinal(err error) error {
	if err == nil {
		return nil
	}
	return finalError{err}
}

func isMarkedFinal(err error) bool {
	_, ok := err.(finalError) //nolint:errorlint // a leaf of walk's: only this node counts
	return ok
}

func classifyLeaf(err error) Class {
	var kerr sarama.KError
	switch {
	case isMarkedFinal(err):
		return Final
	case errors.As(err, &kerr):
		return kafkaErrors[kerr] // Final when not listed
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return Final
	}
	for _, c := range clientErrors {
		if errors.Is(err, c.err) {
			return c.class
		}
	}
	var nerr net.Error
	if errors.As(err, &nerr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return Transient
	}
	return Final
}

// walk calls fn for each leaf of err's tree: an error that wraps nothing, a
// MarkFinal mark, or a sarama sentinel error (whose sentinel Unwrap does not
// reach). sarama.ProducerErrors, which has no Unwrap, is walked element by
// element.
func walk(err error, fn func(error)) {
	switch e := err.(type) { //nolint:errorlint // walk visits the tree one node at a time
	case nil:
		return
	case finalError:
		fn(e)
		return
	case sarama.ProducerErrors:
		for _, pe := range e {
			if pe != nil {
				walk(pe.Err, fn)
			}
		}
		return
	case *sarama.ProducerError:
		walk(e.Err, fn)
		return
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			walk(inner, fn)
		}
		return
	case interface{ Unwrap() error }:
		inner := e.Unwrap()
		if inner == nil {
			fn(err)
			return
		}
		// A sarama sentinel error (sarama.Wrap) is its sentinel and what it
		// wraps; Unwrap reaches only the latter.
		for _, c := range clientErrors {
			if errors.Is(err, c.err) && !errors.Is(inner, c.err) {
				fn(c.err)
			}
		}
		walk(inner, fn)
		return
	}
	fn(err)
}
