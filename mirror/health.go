package mirror

import (
	"context"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

// linkHealth is what the engine measured of its whole link, independently
// of its shards: a shard that fails in a loop refreshes nothing, so the lag
// gauge and the health must not depend on it.
type linkHealth struct {
	lag      int64     // records behind, summed over the ready partitions
	lagSince time.Time // when the lag last went from zero to above it
	advanced time.Time // when the committed progress last moved
	sum      int64     // sum of the committed progress, to see it move
	measured time.Time
}

// measureLink reads the source ends and the committed progress of every
// ready partition of the shards this process owns (blocked ones
// included), publishes each partition's lag and updates the health.
// It runs once per topic sync pass.
func (e *Engine) measureLink(ctx context.Context, src, dst sarama.Client) {
	// Only the shards this process owns: another process reports the
	// others (and a process that owns none is not stalled).
	e.mu.Lock()
	var tps []topology.TopicPartition
	for shard, ps := range e.byShard {
		if e.owned[shard] {
			tps = append(tps, ps...)
		}
	}
	e.mu.Unlock()
	linkCtx := ctx
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ends, err := kafkaread.StableOffsets(ctx, src, tps)
	if err != nil {
		warn(linkCtx, e.log, "cannot measure the link's lag: source ends", "err", err)
		return
	}
	progress, err := linkstate.ReadProgressFull(ctx, dst, e.link, tps, linkstate.CommittedSoFar, e.topicID)
	if err != nil {
		warn(linkCtx, e.log, "cannot measure the link's lag: progress", "err", err)
		return
	}
	starts, err := kafkaread.StartOffsets(ctx, src, tps)
	if err != nil {
		warn(linkCtx, e.log, "cannot measure the link's lag: source starts", "err", err)
		return
	}
	var lag, sum int64
	for _, tp := range tps {
		from := starts[tp]
		if p, ok := progress[tp]; ok {
			from = max(from, p.Next)
			sum += p.Next
		}
		lag += max(ends[tp]-from, 0)
		e.metrics.partitionLag(e.link.String(), tp, ends[tp], from)
	}
	now := time.Now()
	e.mu.Lock()
	h := &e.health
	if lag > 0 && h.lag == 0 {
		h.lagSince = now
	}
	if sum != h.sum || h.advanced.IsZero() {
		h.advanced = now
	}
	h.lag, h.sum, h.measured = lag, sum, now
	e.mu.Unlock()
	stalled := 0.0
	if e.Stalled() != nil {
		stalled = 1
	}
	e.metrics.Safety.Stalled.WithLabelValues(e.link.String()).Set(stalled)
}

// Stalled returns an error saying why when the link is behind and has made
// no progress for Options.StallTimeout, nil otherwise.
func (e *Engine) Stalled() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	h := e.health
	if h.lag == 0 {
		return nil
	}
	since := h.advanced
	if h.lagSince.After(since) {
		since = h.lagSince
	}
	if quiet := time.Since(since); quiet > e.opts.StallTimeout {
		return fmt.Errorf("link %s is %d records behind and has made no progress for %v", e.link, h.lag, quiet.Round(time.Second))
	}
	return nil
}

// noteAdvance records in-process progress (a committed transaction).
func (e *Engine) noteAdvance() {
	e.mu.Lock()
	e.health.advanced = time.Now()
	e.mu.Unlock()
}

// targetChange returns why the target is not the cluster the link was
// started on ("" when it is): another cluster id, or drctl's internal
// topics gone — the standby lost its data — and the cluster id it read.
// Errors reading it say nothing.
func (e *Engine) targetChange(ctx context.Context, dst sarama.Client) (why, id string) {
	id, err := kafkaconn.ClusterID(dst)
	if err != nil {
		return "", ""
	}
	if id != string(e.dstID) {
		return fmt.Sprintf("the target %s now has cluster id %s (was %s): it lost its data", e.link.Target, id, e.dstID), id
	}
	for _, t := range []string{e.link.ShardsTopic(), e.link.OffsetsTopic()} {
		info, err := kafkaread.Topic(ctx, dst, t)
		if err == nil && !info.Exists {
			return fmt.Sprintf("drctl's internal topic %s is gone from the target %s: it lost its data", t, e.link.Target), id
		}
	}
	return "", id
}
