package mirror

import (
	"runtime"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/mirror/groupsync"
	"github.com/drctl/drctl/topology"
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
	LagSeconds   *LagClock
	ShardsOwned  *prometheus.GaugeVec
	// FetchRoundTrip is the source round trip each shard's fetches see
	// (fetchsize.go): a WAN shows here. FetchResponseBytes is the bound of
	// its fetch responses, which grows while the source sets its pace.
	FetchRoundTrip     *prometheus.GaugeVec
	FetchResponseBytes *prometheus.GaugeVec
	CommitTime         *prometheus.HistogramVec
	Latency            *prometheus.HistogramVec
	GroupSync          *groupsync.Metrics
	Safety             *SafetyMetrics

	// Roles are the live role state as the daemon last read it.
	Roles *RoleMetrics
}

// RoleMetrics are the live roles as `drctl mirror run` reads them every
// poll (prefix drctl_role_ and drctl_cluster_). When no cluster answers
// they keep their last values; drctl_cluster_reachable says so.
type RoleMetrics struct {
	Epoch     prometheus.Gauge
	Phase     *prometheus.GaugeVec // 1 for the current phase, 0 for the others
	Active    *prometheus.GaugeVec // 1 for the live active cluster, 0 for the others
	Reachable *prometheus.GaugeVec
	Stale     *prometheus.GaugeVec
	Fenced    *prometheus.GaugeVec // only with failover.fence: acl
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
		LagSeconds: newLagClock(),
		ShardsOwned: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drctl_mirror_shards_owned",
			Help: "Shards of the link this process owns."}, []string{"link"}),
		FetchRoundTrip: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drctl_mirror_fetch_round_trip_seconds",
			Help: "The source's round trip as a shard's fetches see it: the shortest of its latest fetches that found a backlog (a WAN shows here)."}, []string{"link", "shard"}),
		FetchResponseBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drctl_mirror_fetch_response_bytes",
			Help: "The bound of a shard's fetch responses: its base size, grown while the shard waits on the source with a backlog (a WAN), up to its share of the byte budget."}, []string{"link", "shard"}),
		CommitTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "drctl_mirror_commit_seconds",
			Help: "Time to produce and commit one mirror transaction.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}, []string{"link"}),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "drctl_mirror_replication_latency_seconds",
			Help: "From a record's source timestamp to the commit of its copy.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}, []string{"link"}),
	}
	m.Roles = &RoleMetrics{
		Epoch: prometheus.NewGauge(prometheus.GaugeOpts{Name: "drctl_role_epoch",
			Help: "Epoch of the live role state (the higher epoch of the clusters that answered)."}),
		Phase: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drctl_role_phase",
			Help: "1 for the phase of the live role state (steady, failing-over, failing-back, wiping, reseeding), 0 for the others."}, []string{"phase"}),
		Active: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drctl_cluster_active",
			Help: "1 for the live active cluster, 0 for the others."}, []string{"cluster"}),
		Reachable: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drctl_cluster_reachable",
			Help: "1 when the cluster answered the last role-state read, else 0."}, []string{"cluster"}),
		Stale: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drctl_cluster_stale",
			Help: "1 when the cluster answers with an older role state than the live one (an old active that came back), else 0."}, []string{"cluster"}),
		Fenced: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drctl_cluster_fenced",
			Help: "1 when the cluster holds a drctl write fence (ACLs) for the topology, else 0 (failover.fence: acl only). The standby reads 1 while the ACL sync keeps it fenced (mirror.acls); a fence matters on the active (drctl_cluster_active)."}, []string{"cluster"}),
	}
	if reg != nil {
		reg.MustRegister(m.Records, m.Bytes, m.Skipped, m.Lost, m.Transactions, m.Errors, m.LagRecords, m.LagSeconds, m.ShardsOwned, m.FetchRoundTrip, m.FetchResponseBytes, m.CommitTime, m.Latency,
			m.Roles.Epoch, m.Roles.Phase, m.Roles.Active, m.Roles.Reachable, m.Roles.Stale, m.Roles.Fenced)
	}
	m.GroupSync = groupsync.NewMetrics(reg)
	m.Safety = newSafetyMetrics(reg)
	return m
}

// partitionLag sets the lag of one source partition from the source's last
// stable offset and the mirrored position (the next offset to copy).
func (m *Metrics) partitionLag(link string, tp topology.TopicPartition, lso, next int64) {
	m.LagRecords.WithLabelValues(link, tp.Topic, strconv.Itoa(int(tp.Partition))).Set(float64(max(lso-next, 0)))
	if lso > next {
		m.LagSeconds.seenBehind(link, tp)
	} else {
		m.LagSeconds.caught(link, tp)
	}
}

// ForgetLink deletes the gauges of link: once a link stopped in this
// process (the roles flipped, the daemon stopped it) its lag, shards and
// group-sync ages describe nothing any longer, and a frozen series would
// keep alerts firing. Counters and histograms stay: they only ever grow,
// and rate() over them falls to zero on its own.
func (m *Metrics) ForgetLink(link string) {
	l := prometheus.Labels{"link": link}
	m.LagRecords.DeletePartialMatch(l)
	m.LagSeconds.forget(link, nil)
	m.ShardsOwned.DeletePartialMatch(l)
	m.FetchRoundTrip.DeletePartialMatch(l)
	m.FetchResponseBytes.DeletePartialMatch(l)
	m.GroupSync.LastSynced.DeletePartialMatch(l)
}

// forgetPartitions deletes the lag series of partitions this process no
// longer copies (their shard moved to another worker): the new owner
// reports them.
func (m *Metrics) forgetPartitions(link string, tps []topology.TopicPartition) {
	for _, tp := range tps {
		m.LagRecords.DeleteLabelValues(link, tp.Topic, strconv.Itoa(int(tp.Partition)))
	}
	drop := map[topology.TopicPartition]bool{}
	for _, tp := range tps {
		drop[tp] = true
	}
	m.LagSeconds.forget(link, func(tp topology.TopicPartition) bool { return drop[tp] })
}

// observeRoles sets the role gauges from a resolved view.
func (m *Metrics) observeRoles(v rolestate.View) {
	m.Roles.Epoch.Set(float64(v.Current.Epoch))
	for _, p := range rolestate.Phases {
		m.Roles.Phase.WithLabelValues(string(p)).Set(b2f(v.Current.Phase == p || (v.Current.Phase == "" && p == rolestate.PhaseSteady)))
	}
	for name, cs := range v.Clusters {
		m.Roles.Active.WithLabelValues(name).Set(b2f(name == v.Current.Active))
		m.Roles.Reachable.WithLabelValues(name).Set(b2f(cs.Reachable))
		m.Roles.Stale.WithLabelValues(name).Set(b2f(cs.Stale))
	}
}

// noClusterReachable marks every cluster of topo unreachable; the role
// gauges keep their last values.
func (m *Metrics) noClusterReachable(topo *topology.Topology) {
	for name := range topo.Clusters {
		m.Roles.Reachable.WithLabelValues(name).Set(0)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// NewBuildInfo returns drctl_build_info{version,commit,goversion} = 1
// (an empty version or commit reads "unknown").
func NewBuildInfo(version, commit string) prometheus.Collector {
	if version == "" {
		version = "unknown"
	}
	if commit == "" {
		commit = "unknown"
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "drctl_build_info",
		Help:        "Always 1; the labels say which drctl build runs.",
		ConstLabels: prometheus.Labels{"version": version, "commit": commit, "goversion": runtime.Version()}})
	g.Set(1)
	return g
}
