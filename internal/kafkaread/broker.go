package kafkaread

import (
	"context"
	"errors"
	"time"

	"github.com/IBM/sarama"
)

// openWait bounds how long Connected waits for a dial another goroutine
// has announced but not begun.
const openWait = time.Second

// Connected opens b with cfg unless it is open, and returns once its
// connection is up, or with the dial's error.
//
// A broker of a client is shared by every goroutine that uses the client.
// sarama's Broker.Open marks the broker open before it takes the lock its
// dial holds; in that moment a request from another goroutine finds no
// connection and fails at once with ErrNotConnected, although the dial is
// about to run. Connected waits that moment out instead, so a request sent
// after it does not fail for a connection that was merely still to come.
func Connected(ctx context.Context, b *sarama.Broker, cfg *sarama.Config) error {
	deadline := time.Now().Add(openWait)
	for wait := 100 * time.Microsecond; ; wait = min(2*wait, 20*time.Millisecond) {
		if err := b.Open(cfg); err != nil && !errors.Is(err, sarama.ErrAlreadyConnected) {
			return err
		}
		// Connected takes the lock a dial in progress holds: it answers
		// once that dial is done.
		ok, err := b.Connected()
		switch {
		case ok:
			return nil
		case err != nil:
			return err
		case time.Now().After(deadline):
			return sarama.ErrNotConnected
		}
		if err := Sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// AnyBrokerMetadata sends req to the broker of client that has the fewest
// requests in flight, once its connection is up (see Connected).
func AnyBrokerMetadata(ctx context.Context, client sarama.Client, req *sarama.MetadataRequest) (*sarama.MetadataResponse, *sarama.Broker, error) {
	if client == nil || client.Closed() {
		return nil, nil, sarama.ErrClosedClient
	}
	b := client.LeastLoadedBroker()
	if b == nil {
		return nil, nil, sarama.ErrOutOfBrokers
	}
	md, err := Await(ctx, func() (*sarama.MetadataResponse, error) {
		if err := Connected(ctx, b, client.Config()); err != nil {
			return nil, err
		}
		return b.GetMetadata(req)
	})
	return md, b, err
}
