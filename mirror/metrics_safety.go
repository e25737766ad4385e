package mirror

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/drctl/drctl/linkstate"
)

// SafetyMetrics are the series that say the mirror is not copying
// something it should: blocked partitions, a target that lost its
// data, a stalled link, topics changed under the mirror.
type SafetyMetrics struct {
	Blocked      *prometheus.GaugeVec
	TargetResets *prometheus.CounterVec
	Stalled      *prometheus.GaugeVec
	TopicChanges *prometheus.GaugeVec
}

func newSafetyMetrics(reg prometheus.Registerer) *SafetyMetrics {
	m := &SafetyMetrics{
		Blocked: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drctl_mirror_partition_blocked",
			Help: "1 while the target refuses a partition's records (see drctl mirror lag for the error); the shard's other partitions go on."}, []string{"link", "topic", "partition"}),
		TargetResets: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drctl_mirror_target_resets_total",
			Help: "Times the target came back with another cluster id or without drctl's internal topics: rebuilt and re-seeded from the source's earliest offsets."}, []string{"link"}),
		Stalled: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drctl_mirror_stalled",
			Help: "1 while the link is behind and has made no progress for the stall timeout (then /healthz fails)."}, []string{"link"}),
		TopicChanges: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drctl_mirror_topic_changed",
			Help: "1 for a mirrored topic deleted (kind=deleted) or recreated (kind=recreated) on the source; its copy is kept."}, []string{"link", "topic", "kind"}),
	}
	if reg != nil {
		reg.MustRegister(m.Blocked, m.TargetResets, m.Stalled, m.TopicChanges)
	}
	return m
}

// publishTopicChanges sets drctl_mirror_topic_changed to the changes of
// this pass, forgetting the topics no longer changed.
func (e *Engine) publishTopicChanges(changes []linkstate.TopicChange) {
	g := e.metrics.Safety.TopicChanges
	g.DeletePartialMatch(prometheus.Labels{"link": e.link.String()})
	for _, c := range changes {
		g.WithLabelValues(e.link.String(), c.Topic, c.Kind).Set(1)
	}
}
