package mirror

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/rolestate"
)

// work joins the link's worker group on the target and copies the shards
// the group assigns to this process until ctx ends or the link is retired.
// Processes share shards through Kafka's own group protocol: when one
// dies, the others take its shards over after the session timeout, and
// initialising a shard's transactional id fences the dead one for good.
func (e *Engine) work(ctx context.Context) error {
	client, err := e.dial(ctx, e.dstCluster, func(c *sarama.Config) {
		partialMetadata(c)
		c.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRoundRobin()}
		c.Consumer.Group.Session.Timeout = e.opts.SessionTimeout
		c.Consumer.Group.Heartbeat.Interval = max(e.opts.SessionTimeout/10, 100*time.Millisecond)
		c.Consumer.Group.Rebalance.Timeout = e.opts.SessionTimeout
		c.Consumer.Offsets.AutoCommit.Enable = false
		c.Consumer.Offsets.Initial = sarama.OffsetNewest
		c.Consumer.Return.Errors = true
	})
	if err != nil {
		return err
	}
	defer client.Close()
	group, err := sarama.NewConsumerGroupFromClient(e.link.WorkersGroup(), client)
	if err != nil {
		return err
	}
	defer group.Close()
	linkCtx := ctx // the closure must not see the reassignment below
	go func() {
		for gerr := range group.Errors() {
			e.metrics.Errors.WithLabelValues(e.link.String(), "group").Inc()
			warn(linkCtx, e.log, "worker group", "err", gerr)
		}
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h := &shardHandler{e: e, retired: make(chan error, 1), cancel: cancel}
	for ctx.Err() == nil {
		err := group.Consume(ctx, []string{e.link.ShardsTopic()}, h)
		select {
		case rerr := <-h.retired:
			return rerr
		default:
		}
		if err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) && ctx.Err() == nil {
			e.metrics.Errors.WithLabelValues(e.link.String(), "group").Inc()
			e.log.Warn("worker group session ended", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
	return nil
}

// shardHandler runs one shard loop per claimed partition of the shards
// topic for as long as the group session lasts.
type shardHandler struct {
	e       *Engine
	retired chan error
	cancel  context.CancelFunc // ends every shard of the process
}

func (h *shardHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *shardHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *shardHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	e := h.e
	id := claim.Partition()
	ctx := sess.Context()
	e.setOwned(id, true)
	defer e.setOwned(id, false)
	log := e.log.With("shard", id)
	log.Info("shard claimed")
	for attempt := 0; ctx.Err() == nil; attempt++ {
		s := &shard{id: id, e: e, log: log}
		err := s.run(ctx)
		if err == nil || ctx.Err() != nil {
			break
		}
		if errors.Is(err, ErrFenced) {
			if rerr := e.retired(ctx); rerr != nil {
				err = rerr
			}
		}
		if _, resharded := errors.AsType[*ShardCountError](err); resharded || errors.Is(err, ErrLinkRetired) {
			log.Warn("link retired or resharded; stopping", "err", err)
			select {
			case h.retired <- err:
			default:
			}
			h.cancel()
			break
		}
		// A fenced shard usually means another worker owns it now and this
		// session is about to end: wait for that rather than fencing the
		// new owner back.
		wait := time.Duration(min(attempt+1, 5)) * time.Second
		switch {
		case errors.Is(err, ErrFenced):
			wait = e.opts.SessionTimeout + time.Second
		case errors.Is(err, errPartitionBlocked), errors.Is(err, errResize), errors.Is(err, errTargetMoved):
			// Not the shard's trouble: go on at once without the blocked
			// partition, or with a larger producer.
			wait, attempt = 100*time.Millisecond, -1
		}
		log.Warn("shard stopped; restarting from committed progress", "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		if attempt > 0 && !errors.Is(err, ErrFenced) {
			attempt = min(attempt, 5)
		}
	}
	log.Info("shard released")
	return nil
}

// retired returns ErrLinkRetired (wrapped) when the target's role state no
// longer allows the link, nil otherwise or when it cannot tell.
func (e *Engine) retired(ctx context.Context) error {
	if e.opts.Epoch < 0 {
		return nil
	}
	dst, err := e.dial(ctx, e.dstCluster, nil)
	if err != nil {
		return nil
	}
	defer dst.Close()
	st, found, err := rolestate.Read(ctx, dst, e.link.Topology)
	if err != nil || !found {
		return nil
	}
	if !e.opts.Allowed(st) {
		return fmt.Errorf("%w: state is epoch %d (active %s), this link runs for epoch %d", ErrLinkRetired, st.Epoch, st.Active, e.opts.Epoch)
	}
	return nil
}
