package drill

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/topology"
)

// Metrics are the scheduler's Prometheus series, labelled by drill and
// kind (docs/drills.md lists them).
type Metrics struct {
	lastRun     *prometheus.GaugeVec
	lastSuccess *prometheus.GaugeVec
	rpo         *prometheus.GaugeVec
	rto         *prometheus.GaugeVec
	latency     *prometheus.GaugeVec
	failures    *prometheus.CounterVec
	skipped     *prometheus.CounterVec
	missed      *prometheus.CounterVec
}

// NewMetrics registers the drill series on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	l := []string{"drill", "kind"}
	m := &Metrics{
		lastRun: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drctl_drill_last_run_timestamp_seconds",
			Help: "When the drill last finished (Unix seconds), whatever its verdict."}, l),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drctl_drill_last_success_timestamp_seconds",
			Help: "When the drill last passed (Unix seconds)."}, l),
		rpo: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drctl_drill_rpo_seconds",
			Help: "The RPO the drill last measured: seconds of data the standby would miss."}, l),
		rto: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drctl_drill_rto_seconds",
			Help: "The RTO the drill last measured (disruptive kinds) or estimated (canary)."}, l),
		latency: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drctl_drill_canary_latency_seconds",
			Help: "Replication latency of the drill's last canary records, by quantile (0.5, 0.99, 1 = max)."}, append(l, "quantile")),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drctl_drill_failures_total",
			Help: "Drills that failed, or could not run, since the scheduler started."}, l),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drctl_drill_busy_total",
			Help: "Drill slots not run because a failover, failback, reseed or another drill was running until the drill's next slot."}, l),
		missed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drctl_drill_slots_missed_total",
			Help: "Drill slots not run because they came and went while the scheduler ran other drills (the latest of them runs late)."}, l),
	}
	reg.MustRegister(m.lastRun, m.lastSuccess, m.rpo, m.rto, m.latency, m.failures, m.skipped, m.missed)
	return m
}

// Seed sets the gauges from history (newest first), so that a restarted
// scheduler does not report drills as never run.
func (m *Metrics) Seed(hist []Record) {
	seen, passed := map[string]bool{}, map[string]bool{}
	for i := range hist {
		r := &hist[i]
		if !seen[r.Drill] {
			seen[r.Drill] = true
			m.record(r)
		}
		if r.Passed() && !passed[r.Drill] {
			passed[r.Drill] = true
			m.lastSuccess.WithLabelValues(r.Drill, r.Kind).Set(float64(r.FinishedAt.Unix()))
		}
	}
}

// Missed counts n slots of d that came and went while the scheduler ran
// other drills.
func (m *Metrics) Missed(d *topology.NamedDrill, n int) {
	m.missed.WithLabelValues(d.Name, string(d.Kind)).Add(float64(n))
}

// Observe records one scheduled run: rec is nil when the drill could not
// run, err says why.
func (m *Metrics) Observe(d *topology.NamedDrill, rec *Record, err error) {
	kind := string(d.Kind)
	if rec == nil {
		if errIsBusy(err) {
			m.skipped.WithLabelValues(d.Name, kind).Inc()
			return
		}
		m.failures.WithLabelValues(d.Name, kind).Inc()
		return
	}
	m.record(rec)
	if rec.Passed() {
		m.lastSuccess.WithLabelValues(rec.Drill, rec.Kind).Set(float64(rec.FinishedAt.Unix()))
	} else {
		m.failures.WithLabelValues(rec.Drill, rec.Kind).Inc()
	}
}

// tallied is whether every direction was tallied and left nothing behind
// (a drill that stopped before its tally measured no RPO).
func tallied(dirs []Direction) bool {
	for _, d := range dirs {
		if (!d.Tallied && d.RunError != "") || d.RPORecords > 0 {
			return false
		}
	}
	return len(dirs) > 0
}

func (m *Metrics) record(r *Record) {
	d, k := r.Drill, r.Kind
	m.lastRun.WithLabelValues(d, k).Set(float64(r.FinishedAt.Unix()))
	if r.RPO != nil {
		m.rpo.WithLabelValues(d, k).Set(r.RPO.Seconds)
	} else if tallied(r.Directions) {
		// A planned failover drill: its RPO is what the tally found left
		// behind, counted in records; 0 seconds when nothing was.
		m.rpo.WithLabelValues(d, k).Set(0)
	}
	if rto, ok := r.MeasuredRTO(); ok {
		m.rto.WithLabelValues(d, k).Set(rto)
	} else if r.RTO != nil && r.RTO.From != "" {
		m.rto.WithLabelValues(d, k).Set(r.RTO.Seconds)
	}
	if c := r.Canary; c != nil && c.Received > 0 {
		m.latency.WithLabelValues(d, k, "0.5").Set(c.LatencyP50MS / 1000)
		m.latency.WithLabelValues(d, k, "0.99").Set(c.LatencyP99MS / 1000)
		m.latency.WithLabelValues(d, k, "1").Set(c.LatencyMaxMS / 1000)
	}
}

// WatchMetrics keeps m's gauges from the drill records stored in the
// clusters, read every interval until ctx ends: where drills run as
// Kubernetes CronJobs, or inside the sandbox, there is no scheduler's
// /metrics to scrape, and the always-running mirror reports them. It only
// reads. It is a front-end loop of its own: each round opens one session
// and closes it, so that a cluster that went away between rounds (minutes
// apart) is found afresh.
func WatchMetrics(ctx context.Context, topo *topology.Topology, m *Metrics, every time.Duration, log *slog.Logger) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, min(every, 30*time.Second))
		clusters := kafkaconn.Open(rctx, topo)
		hist, err := History(rctx, clusters, HistoryOptions{})
		clusters.Close()
		cancel()
		if len(hist) > 0 {
			m.Seed(hist)
		}
		if err != nil && ctx.Err() == nil && log != nil {
			log.Debug("cannot read every drill record for the drill gauges", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
