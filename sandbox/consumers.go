package sandbox

import (
	"context"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/topology"
)

// demoGroup is a consumer group of the demo, one member each.
type demoGroup struct {
	id     string
	topics []string
}

var demoGroups = []demoGroup{
	{id: "billing", topics: []string{"orders", "payments.eu", "payments.us"}},
	{id: "analytics", topics: []string{"orders", "customers"}},
}

// consume runs group g on cluster c until ctx ends. It reads committed
// records only, commits its position every second, and on a new cluster
// resumes from the group's committed offsets there (from the oldest record
// if it has none). Missing topics, as on a standby the mirror has not filled
// yet, are retried.
func (t *traffic) consume(ctx context.Context, c *topology.Cluster, g demoGroup) {
	what := "group " + g.id + " on " + c.Name
	cfg, err := saramaConfig(c, "drctl-sandbox-"+g.id, func(cfg *sarama.Config) {
		cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
		cfg.Consumer.Offsets.AutoCommit.Enable = true
		cfg.Consumer.Offsets.AutoCommit.Interval = time.Second
		cfg.Consumer.IsolationLevel = sarama.ReadCommitted
		cfg.Consumer.MaxWaitTime = 250 * time.Millisecond
	})
	if err != nil {
		t.fail("config "+what, "%s: %v", what, err)
		return
	}
	var cg sarama.ConsumerGroup
	connect := func() (err error) {
		cg, err = sarama.NewConsumerGroup(c.Bootstrap, g.id, cfg)
		return err
	}
	if !t.retry(ctx, what, what, connect) {
		return
	}
	// Close commits what was marked and leaves the group, so the next
	// member (here or on the other cluster) starts where this one stopped.
	defer t.closeClient(what, cg)
	h := groupHandler{t: t}
	b := retryBackoff()
	for ctx.Err() == nil {
		// Consume returns at every rebalance and when ctx ends.
		if err := cg.Consume(ctx, g.topics, h); err != nil && ctx.Err() == nil {
			t.fail(what, "%s: %v (retrying)", what, err)
			b.Wait(ctx)
			continue
		}
		b.Reset()
	}
}

// groupHandler counts and marks every record it is handed.
type groupHandler struct{ t *traffic }

func (groupHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (groupHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h groupHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			h.t.consumed.Add(1)
			if wasAborted(m) {
				h.t.abortedRead.Add(1)
			}
			sess.MarkMessage(m, "")
		case <-sess.Context().Done():
			return nil
		}
	}
}
