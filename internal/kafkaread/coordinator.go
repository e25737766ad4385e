package kafkaread

import (
	"context"

	"github.com/IBM/sarama"
)

// WithCoordinator runs op against group's coordinator on the cluster behind
// client, and again after a Transient error (the coordinator moved or is
// loading, offsets not yet stable, a broken connection), each time against
// a coordinator looked up anew, within the Patient policy and ctx. It joins
// no group: op sends the coordinator requests itself.
func WithCoordinator(ctx context.Context, client sarama.Client, group string, op func(*sarama.Broker) error) error {
	return Do(ctx, Patient, func(attempt int) error {
		if attempt > 0 {
			_ = client.RefreshCoordinator(group) // the look-up below reports trouble
		}
		coord, err := Await(ctx, func() (*sarama.Broker, error) { return client.Coordinator(group) })
		if err != nil {
			return err
		}
		return op(coord)
	})
}
