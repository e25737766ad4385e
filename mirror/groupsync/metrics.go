package groupsync

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the series of the mirror's continuous group sync
// (prefix drctl_group_sync_). Link and group are labels.
type Metrics struct {
	// Rounds counts sync rounds by outcome: ok, error, or paused (this
	// process does not own shard 0, or the role state does not allow the
	// link to write).
	Rounds *prometheus.CounterVec
	// CommittedPartitions counts committed offsets moved on the standby.
	CommittedPartitions *prometheus.CounterVec
	// SkippedActive counts rounds that left a group alone because it has
	// members on the standby.
	SkippedActive *prometheus.CounterVec
	// LastSynced is, per group, the Unix time at which the source offsets
	// whose translation the standby holds were read.
	LastSynced *prometheus.GaugeVec
	// RoundTime is how long one round takes.
	RoundTime *prometheus.HistogramVec
}

// NewMetrics creates the series and registers them with reg (nil:
// not registered, as in tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Rounds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drctl_group_sync_rounds_total",
			Help: "Group sync rounds by outcome (ok, error, paused)."}, []string{"link", "outcome"}),
		CommittedPartitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drctl_group_sync_committed_partitions_total",
			Help: "Committed offsets moved on the standby by the group sync."}, []string{"link", "group"}),
		SkippedActive: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drctl_group_sync_skipped_active_total",
			Help: "Group sync rounds that left a group alone because it has members on the standby."}, []string{"link", "group"}),
		LastSynced: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drctl_group_sync_last_synced_timestamp_seconds",
			Help: "Unix time at which the source offsets whose translation the standby holds were read."}, []string{"link", "group"}),
		RoundTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "drctl_group_sync_round_seconds",
			Help: "Time of one group sync round.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 12)}, []string{"link"}),
	}
	if reg != nil {
		reg.MustRegister(m.Rounds, m.CommittedPartitions, m.SkippedActive, m.LastSynced, m.RoundTime)
	}
	return m
}
