package main

import (
	"bytes"
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// runCount waits until the target topic holds every record of the source
// topic and reports how long that took, measured from -t0.
//
// The "done" criterion. Summing end offsets minus start offsets is not a
// record count once transactions are involved: every committed transaction
// leaves a commit marker that takes an offset (an exactly-once mirror adds one
// per partition per transaction), aborted records take offsets too, and an
// at-least-once mirror may write duplicates. So a partition counts as done
// when (a) its last stable offset minus its start offset is at least the
// number of source records in that partition (necessary, cheap to poll), and
// (b) the last committed data record below the last stable offset, read with
// read_committed and aborted transactions filtered out, has the key and value
// of the source partition's last record. Mirrors preserve per-partition order,
// so (b) means every earlier record has been written and committed as well;
// `loadgen verify` then checks that claim record by record, untimed.
//
// The source must not be transactional (as `loadgen produce` writes it): its
// per-partition record count is taken as end offset minus start offset, and
// count refuses a source whose last record is not at end-1.
//
// Reported: first_s, the time from t0 until the first record was visible on
// the target (a mirror's start-up: JVM, group join, topic creation), and
// done_s, until the last partition was done. Polling every -interval (100 ms)
// bounds the error of both.
func runCount(args []string) error {
	fs := newFlags("count")
	var src, dst conn
	connFlags(fs, &src, "src-", "source", "127.0.0.1:39092")
	connFlags(fs, &dst, "", "target", "127.0.0.1:49092")
	srcTopic := fs.String("src-topic", "", "source topic (required)")
	topic := fs.String("topic", "", "target topic (default: the source topic's name)")
	t0ms := fs.Int64("t0", 0, "start of the measurement, Unix milliseconds (default: now)")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up after this long")
	interval := fs.Duration("interval", 100*time.Millisecond, "poll interval")
	stall := fs.Duration("stall", 5*time.Minute, "give up when the target's committed offsets have not grown for this long (after the first record)")
	maxFactor := fs.Float64("max-offsets-factor", 3, "give up when the target holds more than this many offsets per source record (runaway duplication)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *srcTopic == "" {
		logf("count: -src-topic is required")
		return errUsage
	}
	if *topic == "" {
		*topic = *srcTopic
	}
	t0 := time.Now()
	if *t0ms > 0 {
		t0 = time.UnixMilli(*t0ms)
	}

	sc, err := src.client()
	if err != nil {
		return err
	}
	defer sc.Close()
	exp, err := sourceExpectation(sc, *srcTopic)
	if err != nil {
		return err
	}
	var total int64
	done := make([]bool, len(exp))
	nDone := 0
	for p, e := range exp {
		total += e.count
		if e.count == 0 { // nothing to wait for
			done[p] = true
			nDone++
		}
	}

	tc, err := dst.client()
	if err != nil {
		return err
	}
	defer tc.Close()
	logf("count: waiting for %d records of %s in %s (%d partitions)", total, *srcTopic, *topic, len(exp))

	var (
		firstAt      time.Duration
		firstVisible int64
		seenFirst    bool
		offsets      []partOffsets
		tailReads    int
		lastLog      = time.Now()
		lastVisible  int64
		lastLogTime  = time.Now()
		lastErr      error
		lastGrowth   = time.Now()
		lastOffsets  int64
	)
	deadline := t0.Add(*timeout)
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	for ; ; <-tick.C {
		now := time.Now()
		if now.After(deadline) {
			return fmt.Errorf("timed out after %s: %d of %d partitions done (last error: %v)", *timeout, nDone, len(exp), lastErr)
		}
		n, err := partitionCount(tc, *topic)
		if err != nil {
			lastErr = err
			continue
		}
		if n == 0 {
			continue // the mirror has not created the topic yet
		}
		if n != len(exp) {
			if n > len(exp) {
				return fmt.Errorf("target topic %s has %d partitions, the source %d", *topic, n, len(exp))
			}
			continue // partitions still being created
		}
		offsets, err = listOffsets(tc, *topic, n, sarama.ReadCommitted)
		if err != nil {
			lastErr = err
			continue
		}
		lastErr = nil
		var visible int64
		for _, o := range offsets {
			visible += o.End - o.Start
		}
		if !seenFirst && visible > 0 {
			seenFirst, firstAt, firstVisible = true, time.Since(t0), visible
			logf("count: first records visible after %.2fs", firstAt.Seconds())
		}
		if visible != lastOffsets {
			lastOffsets, lastGrowth = visible, time.Now()
		} else if seenFirst && time.Since(lastGrowth) > *stall {
			return fmt.Errorf("stalled: the target's committed offsets stayed at %d for %s (%d of %d partitions done)", visible, *stall, nDone, len(exp))
		}
		if float64(visible) > *maxFactor*float64(total) && total > 0 {
			return fmt.Errorf("runaway: the target holds %d offsets for %d source records (more than %.1f per record; %d of %d partitions done)", visible, total, *maxFactor, nDone, len(exp))
		}
		for p, o := range offsets {
			if done[p] || o.End-o.Start < exp[p].count {
				continue
			}
			tailReads++
			last, ok, err := lastRecord(tc, *topic, int32(p), o.Start, o.End)
			if err != nil {
				lastErr = err
				continue
			}
			if ok && bytes.Equal(last.Key, exp[p].last.Key) && bytes.Equal(last.Value, exp[p].last.Value) {
				done[p] = true
				nDone++
			}
		}
		if nDone == len(exp) {
			break
		}
		if time.Since(lastLog) >= 5*time.Second {
			rate := float64(visible-lastVisible) / time.Since(lastLogTime).Seconds()
			logf("count: %d/%d offsets committed on the target, %d/%d partitions done, %.0f offsets/s", visible, total, nDone, len(exp), rate)
			lastLog, lastLogTime, lastVisible = time.Now(), time.Now(), visible
		}
	}
	doneAt := time.Since(t0)
	var targetOffsets int64
	for _, o := range offsets {
		targetOffsets += o.End - o.Start
	}
	steady := doneAt - firstAt
	r := newResult("count")
	r.set("src_topic", *srcTopic)
	r.set("topic", *topic)
	r.set("records", total)
	r.set("partitions", len(exp))
	r.set("first_s", firstAt)
	r.set("first_visible", firstVisible)
	r.set("done_s", doneAt)
	r.set("records_per_s", float64(total)/doneAt.Seconds())
	if steady > 0 {
		r.set("steady_records_per_s", float64(total-firstVisible)/steady.Seconds())
	}
	r.set("target_offsets", targetOffsets)
	r.set("extra_offsets", targetOffsets-total)
	r.set("tail_reads", tailReads)
	logf("count: all %d records on the target after %.2fs (first visible after %.2fs; %d offsets, %d beyond the record count)",
		total, doneAt.Seconds(), firstAt.Seconds(), targetOffsets, targetOffsets-total)
	r.print()
	return nil
}

// partExpectation is what the target must hold for one partition.
type partExpectation struct {
	count int64
	last  record
}

// sourceExpectation reads the record count and the last record of every
// partition of a non-transactional source topic.
func sourceExpectation(cl sarama.Client, topic string) ([]partExpectation, error) {
	n, err := partitionCount(cl, topic)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("source topic %s does not exist", topic)
	}
	offs, err := listOffsets(cl, topic, n, sarama.ReadCommitted)
	if err != nil {
		return nil, err
	}
	out := make([]partExpectation, n)
	for p, o := range offs {
		out[p].count = o.End - o.Start
		if o.End == o.Start {
			continue
		}
		last, ok, err := lastRecord(cl, topic, int32(p), o.Start, o.End)
		if err != nil {
			return nil, err
		}
		if !ok || last.Offset != o.End-1 {
			return nil, fmt.Errorf("source %s/%d: the last record is not at end offset - 1 (transactional or compacted source?); count needs a plain source as `loadgen produce` writes", topic, p)
		}
		out[p].last = last
	}
	return out, nil
}
