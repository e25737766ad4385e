package mirror

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the mirror's Prometheus series (prefix drctl_). One set
// serves every link a process runs; the link is a label.
type Metrics struct {
	Records      *prometheus.CounterVec
	Bytes        *prometheus.CounterVec
	Skipped      *prometheus.CounterVec
	Lost         *prometheus.CounterVec
	Transactions *prometheus.CounterVec
	Errors       *prometheus.CounterVec
	LagRecords   *prometheus.GaugeVec
	LagSeconds   *prometheus.GaugeVec
	ShardsOwned  *prometheus.GaugeVec
	CommitTime   *prometheus.HistogramVec
	Latency      *prometheus.HistogramVec
	GroupSync    *GroupSyncMetrics
}

// NewMetrics creates the series and registers them with reg (nil: not
// registered, as in tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Records: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drctl_mirror_records_total",
			Help: "Records copied to the target (committed)."}, []string{"link", "topic"}),
		Bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drctl_mirror_bytes_total",
			Help: "Key and value bytes copied to the target (committed)."}, []string{"link", "topic"}),
		Skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drctl_mirror_skipped_records_total",
			Help: "Source records not copied because their origin is the target cluster (loop prevention)."}, []string{"link", "topic"}),
		Lost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drctl_mirror_lost_records_total",
			Help: "Source records removed by retention before they were mirrored."}, []string{"link", "topic"}),
		Transactions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drctl_mirror_transactions_total",
			Help: "Mirror transactions by outcome (committed, aborted)."}, []string{"link", "outcome"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drctl_mirror_errors_total",
			Help: "Mirror errors by kind."}, []string{"link", "kind"}),
		LagRecords: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drctl_mirror_lag_records",
			Help: "Source records (last stable offset minus mirrored position) not yet mirrored."}, []string{"link", "topic", "partition"}),
		LagSeconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drctl_mirror_lag_seconds",
			Help: "Age of the oldest source record not yet mirrored (0 when caught up)."}, []string{"link", "topic", "partition"}),
		ShardsOwned: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drctl_mirror_shards_owned",
			Help: "Shards of the link this process owns."}, []string{"link"}),
		CommitTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "drctl_mirror_commit_seconds",
			Help: "Time to produce and commit one mirror transaction.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}, []string{"link"}),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "drctl_mirror_replication_latency_seconds",
			Help: "From a record's source timestamp to the commit of its copy.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}, []string{"link"}),
	}
	if reg != nil {
		reg.MustRegister(m.Records, m.Bytes, m.Skipped, m.Lost, m.Transactions, m.Errors, m.LagRecords, m.LagSeconds, m.ShardsOwned, m.CommitTime, m.Latency)
	}
	m.GroupSync = newGroupSyncMetrics(reg)
	return m
}
