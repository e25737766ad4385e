package mirror

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestShardCountKeptByTheLink: a link that ran with 2 shards refuses to
// run with 3 and names the count it ran with and the flag that sets it;
// the engine and the daemon (drctl mirror run) stop with it instead of
// retrying a configuration mistake forever.
func TestShardCountKeptByTheLink(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: `  topics: {include: ["orders"]}`})
	kfaketest.CreateTopic(t, p.Topology, "east", "orders", 2, nil)
	kfaketest.Produce(t, p.Topology, "east", "orders", 10)
	run := func(shards int32, until func() bool) error {
		t.Helper()
		e, err := NewEngine(p.Topology, "east", "west", Options{Epoch: -1, Shards: shards, TopicSyncInterval: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		for until != nil && !until() {
			select {
			case err := <-done:
				return err
			case <-time.After(50 * time.Millisecond):
			}
		}
		if until != nil {
			cancel()
		}
		return <-done
	}
	west := kfaketest.Dial(t, p.Topology, "west")
	copied := func() bool {
		n := 0
		for part := range int32(2) {
			recs, err := readAll(west, "orders", part)
			if err != nil {
				return false
			}
			n += len(recs)
		}
		return n == 10
	}
	if err := run(2, copied); err != nil {
		t.Fatalf("first run with 2 shards: %v", err)
	}
	err := run(3, nil)
	if err == nil || !strings.Contains(err.Error(), "ran with 2 shards, now asked for 3") || !strings.Contains(err.Error(), "--shards 2") {
		t.Fatalf("a run with 3 shards: got %v, want a refusal naming --shards 2", err)
	}
	d := NewDaemon(p.Topology, DaemonOptions{StatePoll: 200 * time.Millisecond, Engine: Options{Shards: 3}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var sc *ShardCountError
	if err := d.Run(ctx); !errors.As(err, &sc) || sc.Ran != 2 || ctx.Err() != nil {
		t.Fatalf("the daemon with 3 shards: got %v (after the deadline: %v), want it to stop with the shard count error", err, ctx.Err() != nil)
	}
}
