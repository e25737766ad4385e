package kafkaread

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestConnectedWaitsForADialAnotherGoroutineAnnounced: goroutines sharing
// a broker that is not open yet each open it and ask for metadata at once,
// as drctl status's readers do on one client. sarama marks the broker open
// before its dial takes the connection lock, so a request in that moment
// failed with "broker not connected" (status then reported the cluster
// unreachable: 3 of 1,200 such requests here, 2 of 600 status runs under
// load). After Connected, none may.
func TestConnectedWaitsForADialAnotherGoroutineAnnounced(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg := baseConfig()
	const rounds, readers = 1000, 4
	var failed atomic.Int32
	var first atomic.Value
	for range rounds {
		b := sarama.NewBroker(c.ListenAddrs()[0])
		var wg sync.WaitGroup
		for range readers {
			wg.Go(func() {
				err := Connected(context.Background(), b, cfg)
				if err == nil {
					_, err = b.GetMetadata(&sarama.MetadataRequest{Version: 7})
				}
				if err != nil {
					failed.Add(1)
					first.CompareAndSwap(nil, err)
				}
			})
		}
		wg.Wait()
		_ = b.Close()
	}
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d metadata requests failed on a reachable broker; first: %v", n, rounds*readers, first.Load())
	}
}

// TestConnectedReportsAFailedDial: nothing listens, so Connected returns
// the dial's error at once rather than waiting for a connection.
func TestConnectedReportsAFailedDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	b := sarama.NewBroker(addr)
	start := time.Now()
	err = Connected(context.Background(), b, baseConfig())
	if _, ok := errors.AsType[*net.OpError](err); !ok {
		t.Fatalf("Connected to a closed port: %v, want the dial's error", err)
	}
	if d := time.Since(start); d > openWait/2 {
		t.Fatalf("Connected took %v to report a refused dial", d)
	}
}
