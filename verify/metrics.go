package verify

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drctl/drctl/topology"
)

// Metrics are the mirror verifier's Prometheus series (prefix
// drctl_verify_), labelled as the mirror's own: link, topic, partition.
type Metrics struct {
	// Proven is the partition's watermark: the source offset up to which
	// the link's copies were found identical (Proof.Proven).
	Proven *prometheus.GaugeVec
	// Records counts the copies compared with their source records.
	Records *prometheus.CounterVec
	// Differences counts the differences the link's record holds: those
	// found, and at a (re)start those the record on the target holds, so
	// a difference keeps it above zero (and its alert firing) until the
	// standby is re-seeded.
	Differences *prometheus.CounterVec
	// Behind is the backlog the verifier's last round found: records the
	// mirror had copied that were not verified yet.
	Behind *prometheus.GaugeVec
}

// NewMetrics creates the series and registers them with reg (nil: not
// registered, as in tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	part := []string{"link", "topic", "partition"}
	m := &Metrics{
		Proven: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drctl_verify_proven_offset",
			Help: "Source offset up to which the mirror's verifier found the standby's copies identical (sample mode: every Nth record compared)."}, part),
		Records: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drctl_verify_records_total",
			Help: "Copies the mirror's verifier compared with their source records, reading both clusters."}, []string{"link", "topic"}),
		Differences: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drctl_verify_differences_total",
			Help: "Differences between the source and the standby the mirror's verifier found (missing, unexpected, content or order); a restarted verifier starts from the count the link's record on the standby holds."}, part),
		Behind: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drctl_verify_behind_records",
			Help: "Records the mirror had copied and the verifier had not verified yet, when its last round started."}, part),
	}
	if reg != nil {
		reg.MustRegister(m.Proven, m.Records, m.Differences, m.Behind)
	}
	return m
}

func (m *Metrics) observe(link string, tp topology.TopicPartition, proven, behind, compared, differences int64) {
	if m == nil {
		return
	}
	p := strconv.Itoa(int(tp.Partition))
	m.Proven.WithLabelValues(link, tp.Topic, p).Set(float64(proven))
	m.Behind.WithLabelValues(link, tp.Topic, p).Set(float64(max(behind, 0)))
	m.Records.WithLabelValues(link, tp.Topic).Add(float64(compared))
	// The counter exists from the first round on, at 0: an alert on its
	// increase sees the first difference.
	m.Differences.WithLabelValues(link, tp.Topic, p).Add(float64(differences))
}

// ForgetLink deletes the series of link once its verifier stopped (the
// roles moved): a frozen watermark describes nothing any longer, and the
// differences, which stand for the link's record rather than grow, would
// keep an alert firing. The records counter stays, as the mirror's do.
func (m *Metrics) ForgetLink(link string) {
	if m == nil {
		return
	}
	l := prometheus.Labels{"link": link}
	m.Proven.DeletePartialMatch(l)
	m.Behind.DeletePartialMatch(l)
	m.Differences.DeletePartialMatch(l)
}
