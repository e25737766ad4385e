package drill

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// TestCanaryGroupNotExact: when the canary group's position on the standby
// is not the exact one (here group sync cannot move it: a consumer holds
// the group on the standby), the drill fails and counts the records the
// group would read again.
func TestCanaryGroupNotExact(t *testing.T) {
	p := newPair(t, "")
	topo := p.Topology
	startMirror(t, topo)
	dir := t.TempDir()
	first := runDrill(t, topo, smallCanary(), dir)
	if first.Verdict != Pass {
		t.Fatalf("first canary: %v", first.Reasons)
	}
	stale := first.GroupSync.StandbyOffset

	cfg, _ := topo.Clusters["west"].SaramaConfig()
	g, err := sarama.NewConsumerGroup(topo.Clusters["west"].Bootstrap, topo.CanaryGroup(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	joined := make(chan struct{}, 1)
	go func() {
		for ctx.Err() == nil {
			_ = g.Consume(ctx, []string{topo.CanaryTopic()}, handler{joined}) // reads, never commits
		}
	}()
	select {
	case <-joined:
	case <-time.After(30 * time.Second):
		t.Fatal("the consumer never joined the canary group on west")
	}

	rec := runDrill(t, topo, smallCanary(), dir)
	gs := rec.GroupSync
	if rec.Verdict != Fail || gs == nil || gs.Exact || gs.StandbyOffset != stale || gs.ReRead != 10 || gs.Skipped != 0 {
		t.Fatalf("verdict %s %v; group sync %+v (stale position %d)", rec.Verdict, rec.Reasons, gs, stale)
	}
	if !hasReason(rec, "the exact position is") || !hasReason(rec, "(10 re-read, 0 skipped)") {
		t.Errorf("reasons: %v", rec.Reasons)
	}
}
