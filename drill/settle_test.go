package drill

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/plans"
)

// TestSettleWaitsForTheSendInFlight: a canary record whose send is in
// flight when the drill settles is acknowledged before the group's
// catch-up is judged, so it is read, not counted lost. (CI once failed
// TestUnplannedDrillRepeated with "west -> east: 1 canary records lost":
// settle paused the producer without waiting for its send in flight.)
func TestSettleWaitsForTheSendInFlight(t *testing.T) {
	p := newPair(t, "")
	topo := p.Topology
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := ensureCanaryTopic(ctx, kfaketest.Dial(t, topo, "east"), topo); err != nil {
		t.Fatal(err)
	}

	x := &failoverDrill{topo: topo, clusters: kafkaconn.New(topo), id: "settle", app: newFollower(topo, "settle", 50)}
	x.start("east")
	defer x.close()
	for x.app.nextSeq() < 5 {
		if err := ctx.Err(); err != nil {
			t.Fatal("the canary producer never wrote 5 records")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Hold the next produce until released: it is in flight at settle.
	var armed atomic.Bool
	held, released := make(chan struct{}), make(chan struct{})
	p.East.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		p.East.KeepControl()
		if armed.CompareAndSwap(true, false) {
			close(held)
			p.East.SleepControl(func() { <-released })
		}
		return nil, nil, false
	})
	armed.Store(true)
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("no produce request reached east")
	}
	release := time.AfterFunc(300*time.Millisecond, func() { close(released) })
	defer release.Stop()

	x.settle(ctx, &plans.RunContext{Plan: plans.New("settle", "test")})

	x.app.mu.Lock()
	defer x.app.mu.Unlock()
	if len(x.app.acked) < 6 {
		t.Fatalf("%d records acknowledged; want the held one too", len(x.app.acked))
	}
	for seq := range x.app.acked {
		if len(x.app.reads[seq]) == 0 {
			t.Errorf("canary record %d acknowledged but never read by the group when settle returned", seq)
		}
	}
}
