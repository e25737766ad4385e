package failover

import (
	"context"
	"testing"
	"time"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/mirror"
)

// TestRPOReadLiveFromAnAnsweringActive: the mirror stopped observing east
// (hung or stopped) before 7 more records were written there. An
// unplanned failover forced past east, which answers, reports those 7 as
// its RPO (read from east after the fence), not the 0 the mirror's last
// observation says; with east down the report falls back to that
// observation, without waiting long for east.
func TestRPOReadLiveFromAnAnsweringActive(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Persist: true, Mirror: ordersBillingYAML, Extra: "failover: {fence: none, drain_timeout: 30s}\n"})
	topo := p.Topology
	kfaketest.CreateTopic(t, topo, "east", "orders", 1, nil)
	kfaketest.Produce(t, topo, "east", "orders", 20)
	ctx, cancel := context.WithCancel(context.Background())
	d := mirror.NewDaemon(topo, mirror.DaemonOptions{StatePoll: 200 * time.Millisecond,
		Engine: mirror.Options{Shards: 1, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond}})
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	waitMirrored(t, topo, "east", "west")
	kfaketest.Wait(t, 30*time.Second, "the mirror observed east's end", func() (bool, string) {
		rep, err := inspect.ObservedRPO(kfaketest.Ctx(t, 10*time.Second), kfaketest.Session(t, topo), "east", "west")
		if err != nil || len(rep.Partitions) == 0 {
			return false, "no observation yet"
		}
		return rep.Records == 0, "records past the mirror"
	})
	cancel()
	<-done
	kfaketest.Produce(t, topo, "east", "orders", 7)

	rep, err := inspect.MeasureRPO(kfaketest.Ctx(t, 10*time.Second), kfaketest.Session(t, topo), "east", "west")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 7 || !rep.Live || rep.Lagging() != 1 {
		t.Errorf("east answers: RPO %d record(s) over %d partition(s), live %v; want the 7 the mirror never saw, read live", rep.Records, rep.Lagging(), rep.Live)
	}

	p.Stop("east")
	start := time.Now()
	rep, err = inspect.MeasureRPO(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), "east", "west")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Live || rep.Records != 0 {
		t.Errorf("east down: RPO %d, live %v; want the mirror's last observation (0), not live", rep.Records, rep.Live)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("east down: the RPO took %v; the attempt to read east must stay bounded", took)
	}
}
