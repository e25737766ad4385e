package drill

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// idleClaims holds its claims without reading.
type idleClaims struct{}

func (idleClaims) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (idleClaims) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (idleClaims) ConsumeClaim(s sarama.ConsumerGroupSession, _ sarama.ConsumerGroupClaim) error {
	<-s.Context().Done()
	return nil
}

// TestFailedDrillNamesTheNextCommand: an unplanned drill whose wipe is
// refused (a consumer of a selected group stays on the old active past
// failover.clients.timeout) leaves its failover unfinished; its record
// names drctl resume of that run first, and the reason names the consumer.
func TestFailedDrillNamesTheNextCommand(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: testMirror,
		Extra: "failover: {fence: none, drain_timeout: 30s, quiet_period: 300ms, clients: {timeout: 1s}}\ndrills: {allow_disruptive: true}\n"})
	topo := p.Topology
	kfaketest.CreateTopic(t, topo, "east", "orders", 1, nil)
	startMirror(t, topo)
	// A billing consumer on east that never leaves.
	c := topo.Clusters["east"]
	cfg, err := c.SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.ClientID = "billing-app"
	cg, err := sarama.NewConsumerGroup(c.Bootstrap, "billing", cfg)
	if err != nil {
		t.Fatal(err)
	}
	cctx, stopConsumer := context.WithCancel(context.Background())
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for cctx.Err() == nil {
			_ = cg.Consume(cctx, []string{"orders"}, idleClaims{})
		}
	}()
	t.Cleanup(func() { stopConsumer(); <-consumed; _ = cg.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rec, err := Run(ctx, kfaketest.Session(t, topo), unplannedDrill(), Options{JournalDir: t.TempDir(), Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Verdict != Fail || !strings.HasPrefix(rec.Next, "drctl resume failover-") {
		t.Fatalf("verdict %s, next %q; want a failure naming drctl resume of its failover first", rec.Verdict, rec.Next)
	}
	t.Logf("next: %s", rec.Next)
	if !hasReason(rec, "client billing-app") {
		t.Errorf("reasons %q do not name the consumer that stayed", rec.Reasons)
	}
}
