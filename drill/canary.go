package drill

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// maxSamples bounds the latency samples a record keeps for its chart.
const maxSamples = 500

// ensureCanaryTopic creates the canary topic on the cluster behind client:
// one partition (order is then total), the drills' short retention, and
// deletion (never compaction). The mirror creates it on the standby.
func ensureCanaryTopic(ctx context.Context, client sarama.Client, topo *topology.Topology) (created bool, err error) {
	topic := topo.CanaryTopic()
	info, err := kafkaread.Topic(ctx, client, topic)
	if err != nil {
		return false, err
	}
	if info.Exists {
		return false, nil
	}
	if err := kafkaread.EnsureTopics(ctx, client, topology.ExpiringTopic(topic, 1, topo.Drills.CanaryRetention)); err != nil {
		return true, fmt.Errorf("create %s: %w", topic, err)
	}
	return true, nil
}

// canaryOutput is the canary step's output: the result, and what the group
// step needs to find the exact position.
type canaryOutput struct {
	Result CanaryResult `json:"result"`
	// ActiveOffsets and StandbyOffsets are each record's offset by
	// sequence number (-1: not written / not read).
	ActiveOffsets  []int64 `json:"active_offsets"`
	StandbyOffsets []int64 `json:"standby_offsets"`
}

// runCanary writes p.Records canary records at p.Rate to the canary topic on
// active and reads them on standby at the same time, until every one was
// read or wait has passed since the last was written.
func runCanary(ctx context.Context, clusters *kafkaconn.Clusters, id, active, standby string, p topology.DrillParams, wait time.Duration) (*canaryOutput, error) {
	topo := clusters.Topology()
	if _, err := need(ctx, clusters, active); err != nil { // the canary writes there
		return nil, err
	}
	dst, err := need(ctx, clusters, standby)
	if err != nil {
		return nil, err
	}
	topic := topo.CanaryTopic()
	out := &canaryOutput{Result: CanaryResult{Topic: topic, Source: active, Target: standby, Sent: p.Records},
		ActiveOffsets: filled(p.Records), StandbyOffsets: filled(p.Records)}

	// Read from the standby's end as it is now: older canaries are not ours.
	from := int64(0)
	if info, err := kafkaread.Topic(ctx, dst, topic); err == nil && info.Exists {
		if e, err := kafkaread.PartitionEnds(ctx, dst, topic, 0); err == nil {
			from = e.High
		}
	}
	sent := make([]time.Time, p.Records)
	var mu sync.Mutex // guards sent
	writeDone := make(chan error, 1)
	go func() {
		writeDone <- writeCanary(ctx, topo.Clusters[active], topic, id, p, func(seq int, at time.Time, offset int64) {
			mu.Lock()
			sent[seq], out.ActiveOffsets[seq] = at, offset
			mu.Unlock()
		})
	}()

	readAt := make([]time.Time, p.Records)
	counts := make([]int, p.Records)
	lastSeq, received := -1, 0
	var writeErr error
	writing := true
	var deadline time.Time
	start := time.Now()
	for {
		select {
		case writeErr = <-writeDone:
			writing, deadline = false, time.Now().Add(wait)
			if writeErr != nil {
				return nil, fmt.Errorf("write canary records to %s: %w", active, writeErr)
			}
		default:
		}
		next, err := kafkaread.ReadCommitted(ctx, dst, topic, 0, from, func(r kafkaread.Record) error {
			seq, ok := canarySeq(r, id, p.Records)
			if !ok {
				return nil
			}
			now := time.Now()
			counts[seq]++
			if counts[seq] == 1 {
				received++
				readAt[seq] = now
				out.StandbyOffsets[seq] = r.Offset
			}
			if seq < lastSeq {
				out.Result.OutOfOrder++
			}
			lastSeq = max(lastSeq, seq)
			return nil
		})
		if err == nil {
			from = next
		}
		if !writing && (received == p.Records || time.Now().After(deadline)) {
			break
		}
		if err := kafkaread.Sleep(ctx, 20*time.Millisecond); err != nil {
			return nil, err
		}
	}
	r := &out.Result
	r.Received = received
	r.WaitedMS = time.Since(start).Milliseconds()
	var lat []float64
	mu.Lock()
	defer mu.Unlock()
	for seq := range p.Records {
		switch {
		case counts[seq] == 0:
			r.Missing++
			continue
		case counts[seq] > 1:
			r.Duplicates += counts[seq] - 1
		}
		ms := float64(readAt[seq].Sub(sent[seq])) / float64(time.Millisecond)
		lat = append(lat, ms)
		if every := max(1, p.Records/maxSamples); seq%every == 0 {
			r.Samples = append(r.Samples, Sample{Seq: seq, SentAt: sent[seq].UTC(), LatencyMS: round1(ms)})
		}
	}
	r.LatencyP50MS, r.LatencyP99MS, r.LatencyMaxMS = percentile(lat, 50), percentile(lat, 99), percentile(lat, 100)
	return out, nil
}

// writeCanary sends the records one by one at p.Rate, calling sent with each
// record's send time and offset on the active.
func writeCanary(ctx context.Context, c *topology.Cluster, topic, id string, p topology.DrillParams, sent func(seq int, at time.Time, offset int64)) error {
	prod, err := kafkaconn.NewSyncProducer(c, kafkaconn.ManualPartitions)
	if err != nil {
		return kafkaconn.Explain(c, err)
	}
	defer prod.Close()
	tick := time.NewTicker(time.Second / time.Duration(p.Rate))
	defer tick.Stop()
	for seq := range p.Records {
		at := time.Now()
		_, off, err := prod.SendMessage(canaryMessage(topic, id, seq, at))
		if err != nil {
			return fmt.Errorf("record %d: %w", seq, err)
		}
		sent(seq, at, off)
		if seq+1 < p.Records {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
		}
	}
	return nil
}

func canaryMessage(topic, id string, seq int, at time.Time) *sarama.ProducerMessage {
	s := strconv.Itoa(seq)
	return &sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.StringEncoder(id + "/" + s),
		Value: sarama.StringEncoder(fmt.Sprintf(`{"drill":%q,"seq":%d}`, id, seq)),
		Headers: []sarama.RecordHeader{
			{Key: []byte(topology.HeaderDrill), Value: []byte(id)},
			{Key: []byte(topology.HeaderSeq), Value: []byte(s)},
			{Key: []byte(topology.HeaderSent), Value: []byte(at.UTC().Format(time.RFC3339Nano))},
		}}
}

// canarySeq returns the sequence number of a canary record of drill id.
func canarySeq(r kafkaread.Record, id string, n int) (int, bool) {
	var drill, seq []byte
	for _, h := range r.Headers {
		switch string(h.Key) {
		case topology.HeaderDrill:
			drill = h.Value
		case topology.HeaderSeq:
			seq = h.Value
		}
	}
	if string(drill) != id {
		return 0, false
	}
	s, err := strconv.Atoi(string(seq))
	if err != nil || s < 0 || s >= n {
		return 0, false
	}
	return s, true
}

func filled(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = -1
	}
	return out
}

// percentile is the nearest-rank percentile of xs (0 when empty); p=100 is
// the maximum.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return round1(s[min(max(rank, 1), len(s))-1])
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }
