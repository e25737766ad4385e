package mirror

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drctl/drctl/topology"
)

// LagClock is drctl_mirror_lag_seconds: per source partition, the age of
// the oldest source record not yet mirrored, computed when scraped, so that
// it keeps growing while the mirror is stuck (a gauge set on progress would
// freeze exactly when it matters).
//
// What it knows of the oldest pending record:
//   - the source timestamp of the first record of a transaction being
//     copied (records of a partition arrive in offset order, so the first
//     one past the committed position is the oldest pending one);
//   - before that record was fetched, the time the mirror first saw the
//     source end past its position: a lower bound of the record's age;
//   - once the mirrored position reaches the source end: nothing pending,
//     the partition reads 0.
//
// Transaction markers also move the source end, so a partition whose only
// pending offsets are markers reads a few seconds until the idle probe
// moves its position past them (as drctl_mirror_lag_records does).
type LagClock struct {
	desc *prometheus.Desc
	now  func() time.Time

	mu    sync.Mutex
	since map[lagKey]time.Time // zero: caught up
}

type lagKey struct {
	link string
	tp   topology.TopicPartition
}

func newLagClock() *LagClock {
	return &LagClock{
		desc: prometheus.NewDesc("drctl_mirror_lag_seconds",
			"Age of the oldest source record not yet mirrored (0 when caught up).",
			[]string{"link", "topic", "partition"}, nil),
		now:   time.Now,
		since: map[lagKey]time.Time{},
	}
}

// caught records that nothing of tp is pending.
func (c *LagClock) caught(link string, tp topology.TopicPartition) {
	c.mu.Lock()
	c.since[lagKey{link, tp}] = time.Time{}
	c.mu.Unlock()
}

// seenBehind records that the source end of tp is past the mirrored
// position; it keeps an older, better-known timestamp.
func (c *LagClock) seenBehind(link string, tp topology.TopicPartition) {
	c.mu.Lock()
	k := lagKey{link, tp}
	if c.since[k].IsZero() {
		c.since[k] = c.now()
	}
	c.mu.Unlock()
}

// oldestPending records the source timestamp of the oldest record of tp
// not yet mirrored, replacing whatever was known.
func (c *LagClock) oldestPending(link string, tp topology.TopicPartition, ts time.Time) {
	c.mu.Lock()
	c.since[lagKey{link, tp}] = ts
	c.mu.Unlock()
}

// forget drops the series of the partitions of link for which drop says
// yes (all of them when drop is nil).
func (c *LagClock) forget(link string, drop func(topology.TopicPartition) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.since {
		if k.link == link && (drop == nil || drop(k.tp)) {
			delete(c.since, k)
		}
	}
}

// Describe implements prometheus.Collector.
func (c *LagClock) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *LagClock) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for k, since := range c.since {
		age := 0.0
		if !since.IsZero() {
			age = max(now.Sub(since).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, age, k.link, k.tp.Topic, strconv.Itoa(int(k.tp.Partition)))
	}
}
