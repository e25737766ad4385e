package mirror

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// TestDaemonKeepsItsRoleConnections: the daemon reads the live roles every
// poll through the same connections while the clusters answer. Before, each
// poll dialled both clusters anew: a connection and its handshakes per
// cluster per poll, about 7 round trips across a WAN before the first read.
func TestDaemonKeepsItsRoleConnections(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: `  topics: {include: ["orders"]}`})
	src := kfaketest.DialCluster(t, p.Topology.Clusters["east"])
	kfaketest.CreateTopicOn(t, src, "orders", 1, nil)
	var connections, polls atomic.Int64
	p.East.ControlKey(int16(kmsg.ApiVersions), func(kmsg.Request) (kmsg.Response, error, bool) {
		p.East.KeepControl()
		connections.Add(1) // every new connection asks for the versions first
		return nil, nil, false
	})
	p.East.ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
		p.East.KeepControl()
		for _, tp := range req.(*kmsg.MetadataRequest).Topics {
			if tp.Topic != nil && *tp.Topic == topology.StateTopic {
				polls.Add(1)
				break
			}
		}
		return nil, nil, false
	})
	ctx, cancel := context.WithCancel(context.Background())
	d := NewDaemon(p.Topology, DaemonOptions{StatePoll: 50 * time.Millisecond,
		Engine: Options{Shards: 1, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: time.Minute}})
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
	waitFor(t, 30*time.Second, "the link running", func() error {
		if e := d.Current(); e == nil || !e.Ready() {
			return fmt.Errorf("not ready")
		}
		return nil
	})
	conns, seen := connections.Load(), polls.Load()
	waitFor(t, 30*time.Second, "ten more role reads", func() error {
		if n := polls.Load() - seen; n < 10 {
			return fmt.Errorf("%d role reads", n)
		}
		return nil
	})
	if n := connections.Load() - conns; n > 2 {
		t.Errorf("%d new connections to east over ten role reads, want the same ones kept (at most 2 from elsewhere)", n)
	}
}
