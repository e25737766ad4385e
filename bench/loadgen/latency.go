package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// runLatency measures a running mirror's replication latency: it writes
// records into the source topic at a steady rate and reads the target topic
// (read_committed, long-polling fetches) at the same time. A record's latency
// is the time it became readable on the target minus its timestamp, which
// loadgen sets when it hands the record to its producer; mirrors keep
// timestamps. So the figure includes the source producer's own send (about a
// millisecond on loopback) and the fetch's delivery to us.
//
// Phases: warm-up (until the first record appears on the target, then
// -warmup more), measurement (-duration at -rate; only these records count),
// drain (until every measured record arrived, at most -drain).
func runLatency(args []string) error {
	fs := newFlags("latency")
	var src, dst conn
	connFlags(fs, &src, "src-", "source", "127.0.0.1:39092")
	connFlags(fs, &dst, "", "target", "127.0.0.1:49092")
	srcTopic := fs.String("src-topic", "", "source topic, must exist (required)")
	topic := fs.String("topic", "", "target topic (default: the source topic's name)")
	rate := fs.Int("rate", 5000, "records per second")
	duration := fs.Duration("duration", 60*time.Second, "measurement phase")
	warmup := fs.Duration("warmup", 10*time.Second, "steady traffic after the first record reached the target, not measured")
	startTimeout := fs.Duration("start-timeout", 5*time.Minute, "how long to wait for the first record on the target")
	drain := fs.Duration("drain", 60*time.Second, "how long to wait for the last measured records")
	timeline := fs.String("timeline", "", "write each 100 ms of the measurement (by source timestamp) to this file: start ms, records, p50, max ms")
	size := fs.Int("size", 1024, "value size in bytes")
	seed := fs.Uint64("seed", 2, "data seed")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *srcTopic == "" || *rate < 1 {
		logf("latency: -src-topic is required; -rate must be positive")
		return errUsage
	}
	if *topic == "" {
		*topic = *srcTopic
	}
	sc, err := src.client()
	if err != nil {
		return err
	}
	defer sc.Close()
	parts, err := partitionCount(sc, *srcTopic)
	if err != nil {
		return err
	}
	if parts == 0 {
		return fmt.Errorf("source topic %s does not exist", *srcTopic)
	}
	gen, err := newDataGen(*seed, *size, parts)
	if err != nil {
		logf("latency: %v", err)
		return errUsage
	}
	tc, err := dst.client()
	if err != nil {
		return err
	}
	defer tc.Close()

	cfg, err := src.saramaConfig()
	if err != nil {
		return err
	}
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Retry.Max = 50
	cfg.Producer.Return.Successes = false
	cfg.Producer.Return.Errors = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	// No flush thresholds: sarama sends as soon as it can, and records
	// gather into a batch only while a request is in flight.
	cfg.Producer.Flush.Frequency = 0
	cfg.Producer.Flush.Bytes = 0
	cfg.Producer.Flush.Messages = 0
	prod, err := sarama.NewAsyncProducer(splitList(src.brokers), cfg)
	if err != nil {
		return err
	}
	defer prod.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu       sync.Mutex
		arrived  = map[int64]int64{} // seq -> latency in ms (first arrival)
		sentAt   = map[int64]int64{} // seq -> source timestamp (unix ms), for -timeline
		firstAt  time.Time
		dups     int64
		tailErr  error
		prodErr  error
		prodOnce sync.Once
	)
	go func() {
		for perr := range prod.Errors() {
			prodOnce.Do(func() { prodErr = perr.Err; cancel() })
		}
	}()
	t := &tailer{cl: tc, topic: *topic, parts: parts}
	go func() {
		err := t.run(ctx, func(rec record, at time.Time) {
			seq := seqOf(rec)
			if seq < 0 {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if firstAt.IsZero() {
				firstAt = at
			}
			if _, ok := arrived[seq]; ok {
				dups++
				return
			}
			arrived[seq] = at.UnixMilli() - rec.Timestamp.UnixMilli()
			if *timeline != "" {
				sentAt[seq] = rec.Timestamp.UnixMilli()
			}
		})
		if err != nil && !errors.Is(err, context.Canceled) {
			mu.Lock()
			tailErr = err
			mu.Unlock()
			cancel()
		}
	}()

	var seq int64
	// produceUntil writes at -rate until stop() says so; it paces on a 1 ms
	// ticker, catching up on the records the schedule says are due.
	produceUntil := func(stop func(now time.Time) bool) error {
		start, sent := time.Now(), int64(0)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				if prodErr != nil {
					return fmt.Errorf("source producer: %w", prodErr)
				}
				mu.Lock()
				defer mu.Unlock()
				if tailErr != nil {
					return fmt.Errorf("target reader: %w", tailErr)
				}
				return ctx.Err()
			case now := <-tick.C:
				if stop(now) {
					return nil
				}
				due := int64(now.Sub(start).Seconds() * float64(*rate))
				for ; sent < due; sent++ {
					v := make([]byte, gen.size)
					gen.value(seq, v)
					prod.Input() <- &sarama.ProducerMessage{
						Topic:     *srcTopic,
						Partition: gen.partition(seq),
						Key:       sarama.ByteEncoder(gen.key(seq)),
						Value:     sarama.ByteEncoder(v),
						Headers: []sarama.RecordHeader{
							{Key: []byte("bench-seq"), Value: gen.seqHeader(seq)},
							{Key: []byte("bench-origin"), Value: originHeader},
						},
						Timestamp: time.Now(),
					}
					seq++
				}
			}
		}
	}

	logf("latency: warming up at %d records/s into %s until records appear on the target", *rate, *srcTopic)
	t0 := time.Now()
	var warmEnd time.Time
	err = produceUntil(func(now time.Time) bool {
		mu.Lock()
		f := firstAt
		mu.Unlock()
		if f.IsZero() {
			return now.Sub(t0) > *startTimeout
		}
		if warmEnd.IsZero() {
			warmEnd = f.Add(*warmup)
			logf("latency: first record on the target after %.1fs; warming up %s more", f.Sub(t0).Seconds(), *warmup)
		}
		return now.After(warmEnd)
	})
	if err != nil {
		return err
	}
	if warmEnd.IsZero() {
		return fmt.Errorf("no record reached the target within %s", *startTimeout)
	}
	from := seq
	mStart := time.Now()
	logf("latency: measuring for %s", *duration)
	if err := produceUntil(func(now time.Time) bool { return now.Sub(mStart) >= *duration }); err != nil {
		return err
	}
	to := seq
	achieved := float64(to-from) / time.Since(mStart).Seconds()
	deadline := time.Now().Add(*drain)
	for {
		mu.Lock()
		missing := int64(0)
		for s := from; s < to; s++ {
			if _, ok := arrived[s]; !ok {
				missing++
			}
		}
		te := tailErr
		mu.Unlock()
		if te != nil {
			return fmt.Errorf("target reader: %w", te)
		}
		if missing == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()

	mu.Lock()
	lat := make([]int64, 0, to-from)
	for s := from; s < to; s++ {
		if l, ok := arrived[s]; ok {
			lat = append(lat, l)
		}
	}
	d := dups
	if *timeline != "" {
		if err := writeTimeline(*timeline, mStart.UnixMilli(), from, to, arrived, sentAt); err != nil {
			mu.Unlock()
			return err
		}
	}
	mu.Unlock()
	slices.Sort(lat)
	r := newResult("latency")
	r.set("topic", *topic)
	r.set("rate", *rate)
	r.set("achieved_rate", achieved)
	r.set("measured", to-from)
	r.set("received", len(lat))
	r.set("missing", (to-from)-int64(len(lat)))
	r.set("duplicates", d)
	r.set("first_s", firstAt.Sub(t0))
	for _, q := range []struct {
		name string
		q    float64
	}{{"p50_ms", 0.50}, {"p90_ms", 0.90}, {"p99_ms", 0.99}, {"p999_ms", 0.999}, {"max_ms", 1}} {
		r.set(q.name, percentile(lat, q.q))
	}
	hwm, cpu := selfUsage()
	r.set("loadgen_peak_rss_kb", hwm)
	r.set("loadgen_cpu_s", cpu)
	logf("latency: %d records at %.0f/s: p50 %d ms, p99 %d ms, max %d ms, %d missing",
		to-from, achieved, percentile(lat, 0.5), percentile(lat, 0.99), percentile(lat, 1), (to-from)-int64(len(lat)))
	r.print()
	return nil
}

// writeTimeline writes, for each 100 ms of source timestamps from start,
// the records measured, their median and their largest latency: where a
// tail comes from (a few stalls or a spread) shows in it.
func writeTimeline(path string, start, from, to int64, arrived, sentAt map[int64]int64) error {
	buckets := map[int64][]int64{}
	for s := from; s < to; s++ {
		if l, ok := arrived[s]; ok {
			b := (sentAt[s] - start) / 100
			buckets[b] = append(buckets[b], l)
		}
	}
	keys := slices.Sorted(maps.Keys(buckets))
	var out strings.Builder
	fmt.Fprintf(&out, "# measurement started at %s (unix ms %d)\n", time.UnixMilli(start).UTC().Format(time.RFC3339Nano), start)
	out.WriteString("start_ms\trecords\tp50_ms\tmax_ms\n")
	for _, k := range keys {
		l := buckets[k]
		slices.Sort(l)
		fmt.Fprintf(&out, "%d\t%d\t%d\t%d\n", k*100, len(l), percentile(l, 0.5), l[len(l)-1])
	}
	return os.WriteFile(path, []byte(out.String()), 0o644)
}

// percentile of sorted values (nearest rank); -1 when empty.
func percentile(sorted []int64, q float64) int64 {
	if len(sorted) == 0 {
		return -1
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// seqOf is a loadgen record's number from its bench-seq header, or -1.
func seqOf(rec record) int64 {
	for _, h := range rec.Headers {
		if string(h.Key) == "bench-seq" && len(h.Value) == 8 {
			return int64(binary.BigEndian.Uint64(h.Value))
		}
	}
	return -1
}

// tailer follows every partition of a topic from its start with long-polling
// read_committed fetches (all partitions of a leader in one request), calling
// onRecord with the time each response arrived.
type tailer struct {
	cl    sarama.Client
	topic string
	parts int
}

func (t *tailer) run(ctx context.Context, onRecord func(rec record, at time.Time)) error {
	for { // wait for the mirror to create the topic
		n, err := partitionCount(t.cl, t.topic)
		if err == nil && n == t.parts && allLeaders(t.cl, t.topic, n) {
			break
		}
		if err == nil && n > t.parts {
			return fmt.Errorf("target topic %s has %d partitions, the source %d", t.topic, n, t.parts)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	var offs []partOffsets
	for { // a new topic's leaders may not be known everywhere yet
		o, err := listOffsets(t.cl, t.topic, t.parts, sarama.ReadCommitted)
		if err == nil {
			offs = o
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	next := make([]int64, t.parts)
	for p, o := range offs {
		next[p] = o.Start
	}
	const partBytes = 1 << 20
	var recs []record
	for ctx.Err() == nil {
		byLeader := map[*sarama.Broker][]int32{}
		for p := range int32(t.parts) {
			b, err := t.cl.Leader(t.topic, p)
			if err != nil {
				_ = t.cl.RefreshMetadata(t.topic)
				time.Sleep(100 * time.Millisecond)
				continue
			}
			byLeader[b] = append(byLeader[b], p)
		}
		for b, ps := range byLeader {
			req := &sarama.FetchRequest{Version: 12, MaxWaitTime: 100, MinBytes: 1, MaxBytes: 64 << 20,
				Isolation: sarama.ReadCommitted, SessionID: 0, SessionEpoch: -1}
			for _, p := range ps {
				req.AddBlock(t.topic, p, next[p], partBytes, -1)
			}
			resp, err := b.Fetch(req)
			at := time.Now()
			if err != nil {
				_ = t.cl.RefreshMetadata(t.topic)
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for _, p := range ps {
				blk := resp.GetBlock(t.topic, p)
				if blk == nil || !errors.Is(blk.Err, sarama.ErrNoError) {
					continue
				}
				recs, next[p], err = decodeBlock(blk, next[p], math.MaxInt64, recs[:0])
				if err != nil {
					return err
				}
				for _, r := range recs {
					onRecord(r, at)
				}
			}
		}
	}
	return ctx.Err()
}
