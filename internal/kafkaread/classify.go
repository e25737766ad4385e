package kafkaread

import (
	"errors"
	"strings"

	"github.com/IBM/sarama"
)

// RetriableCoordinator reports whether a group-coordinator request (offset
// fetch or commit) that failed with err may succeed when sent again after
// the coordinator is looked up anew.
func RetriableCoordinator(err error) bool {
	var kerr sarama.KError
	if errors.As(err, &kerr) {
		switch kerr {
		case sarama.ErrUnstableOffsetCommit, sarama.ErrNotCoordinatorForConsumer, sarama.ErrConsumerCoordinatorNotAvailable,
			sarama.ErrOffsetsLoadInProgress, sarama.ErrRequestTimedOut:
			return true
		}
		return false
	}
	return true // network errors
}

// IsFenced reports whether err says that a transactional producer was
// fenced: another producer initialised its transactional id.
func IsFenced(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, sarama.ErrProducerFenced) || errors.Is(err, sarama.ErrInvalidProducerEpoch) || errors.Is(err, sarama.ErrTransactionalIDAuthorizationFailed) {
		return true
	}
	msg := err.Error()
	for _, sub := range []string{"fenced", "ProducerFenced", "Unknown error", "transaction is not ready", "invalid producer epoch"} {
		if strings.Contains(msg, sub) {
			return true
		}
	}
	return false
}
