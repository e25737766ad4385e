package main

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"strings"
	"sync"

	"github.com/IBM/sarama"
)

// runVerify checks, partition by partition, that the target topic holds the
// committed records of the source topic in the same partition, in source
// order, with the same key, value, headers and timestamp.
//
// Each source partition is read in full first and indexed by key (the keys
// must be unique within a partition, as `loadgen produce` writes them) with a
// 64-bit hash of the record's content. Then the target partition is read
// (read_committed, aborted transactions filtered out) and each record is
// looked up by key:
//
//   - foreign: no source record has this key;
//   - duplicate: the source record was already seen on the target;
//   - out of order: it arrives after a later source record;
//   - mismatch: the content hash differs (checked for every -every'th record);
//   - missing: source records never seen on the target.
//
// Headers that the target has but the source never uses (a mirror's
// provenance headers, for example) are left out of the comparison and listed
// in extra_headers. Duplicates fail the check only with -exactly-once.
func runVerify(args []string) error {
	fs := newFlags("verify")
	var src, dst conn
	connFlags(fs, &src, "src-", "source", "127.0.0.1:39092")
	connFlags(fs, &dst, "", "target", "127.0.0.1:49092")
	srcTopic := fs.String("src-topic", "", "source topic (required)")
	topic := fs.String("topic", "", "target topic (default: the source topic's name)")
	every := fs.Int("every", 1, "compare the full content of every N-th target record (keys and order are always checked)")
	parallel := fs.Int("parallel", 2, "partitions checked at once")
	exactlyOnce := fs.Bool("exactly-once", false, "duplicates are errors")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *srcTopic == "" || *every < 1 || *parallel < 1 {
		logf("verify: -src-topic is required; -every and -parallel must be positive")
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
	tc, err := dst.client()
	if err != nil {
		return err
	}
	defer tc.Close()
	ns, err := partitionCount(sc, *srcTopic)
	if err != nil {
		return err
	}
	nt, err := partitionCount(tc, *topic)
	if err != nil {
		return err
	}
	if ns == 0 || nt != ns {
		return fmt.Errorf("source %s has %d partitions, target %s has %d", *srcTopic, ns, *topic, nt)
	}
	srcOffs, err := listOffsets(sc, *srcTopic, ns, sarama.ReadCommitted)
	if err != nil {
		return err
	}
	tgtOffs, err := listOffsets(tc, *topic, nt, sarama.ReadCommitted)
	if err != nil {
		return err
	}
	logf("verify: %s (source) against %s (target), %d partitions", *srcTopic, *topic, ns)

	seed := maphash.MakeSeed()
	results := make([]partCheck, ns)
	errs := make([]error, ns)
	work := make(chan int)
	var wg sync.WaitGroup
	for range *parallel {
		wg.Go(func() {
			for p := range work {
				results[p], errs[p] = checkPartition(sc, tc, *srcTopic, *topic, int32(p), srcOffs[p], tgtOffs[p], *every, seed)
			}
		})
	}
	for p := range ns {
		work <- p
	}
	close(work)
	wg.Wait()
	for p, err := range errs {
		if err != nil {
			return fmt.Errorf("partition %d: %w", p, err)
		}
	}

	var sum partCheck
	extra := map[string]int64{}
	var firstProblem string
	for p, c := range results {
		sum.source += c.source
		sum.target += c.target
		sum.ok += c.ok
		sum.compared += c.compared
		sum.foreign += c.foreign
		sum.duplicates += c.duplicates
		sum.outOfOrder += c.outOfOrder
		sum.mismatches += c.mismatches
		sum.missing += c.missing
		for k, v := range c.extraHeaders {
			extra[k] += v
		}
		if firstProblem == "" && c.problem != "" {
			firstProblem = fmt.Sprintf("partition %d: %s", p, c.problem)
		}
	}
	bad := sum.foreign + sum.outOfOrder + sum.mismatches + sum.missing
	if *exactlyOnce {
		bad += sum.duplicates
	}
	r := newResult("verify")
	r.set("src_topic", *srcTopic)
	r.set("topic", *topic)
	r.set("source_records", sum.source)
	r.set("target_records", sum.target)
	r.set("in_order", sum.ok)
	r.set("content_compared", sum.compared)
	r.set("missing", sum.missing)
	r.set("duplicates", sum.duplicates)
	r.set("out_of_order", sum.outOfOrder)
	r.set("mismatches", sum.mismatches)
	r.set("foreign", sum.foreign)
	r.set("extra_headers", strings.Join(sortedKeys(extra), ","))
	r.set("ok", bad == 0)
	r.print()
	if bad > 0 {
		return fmt.Errorf("the target differs from the source: %d missing, %d duplicates, %d out of order, %d mismatched, %d foreign; first: %s",
			sum.missing, sum.duplicates, sum.outOfOrder, sum.mismatches, sum.foreign, firstProblem)
	}
	logf("verify: OK: %d source records, %d target records, %d in order, %d compared in full, %d duplicates, extra headers %v",
		sum.source, sum.target, sum.ok, sum.compared, sum.duplicates, sortedKeys(extra))
	return nil
}

type partCheck struct {
	source, target, ok, compared                         int64
	foreign, duplicates, outOfOrder, mismatches, missing int64
	extraHeaders                                         map[string]int64
	problem                                              string
}

type srcEntry struct {
	index int64
	hash  uint64
}

func checkPartition(sc, tc sarama.Client, srcTopic, topic string, p int32, so, to partOffsets, every int, seed maphash.Seed) (partCheck, error) {
	var c partCheck
	c.extraHeaders = map[string]int64{}
	index := make(map[string]srcEntry, so.End-so.Start)
	srcHeaders := map[string]bool{}
	sr := newPartReader(sc, srcTopic, p, so.Start, so.End)
	for {
		rec, ok, err := sr.Next()
		if err != nil {
			return c, fmt.Errorf("source: %w", err)
		}
		if !ok {
			break
		}
		for _, h := range rec.Headers {
			srcHeaders[string(h.Key)] = true
		}
		k := string(rec.Key)
		if _, dup := index[k]; dup {
			return c, fmt.Errorf("source key %q appears twice in partition %d: verify needs unique keys per partition", k, p)
		}
		index[k] = srcEntry{index: c.source, hash: hashRecord(seed, rec, nil)}
		c.source++
	}
	seen := make([]bool, c.source)
	next := int64(0) // the source index expected next
	tr := newPartReader(tc, topic, p, to.Start, to.End)
	for {
		rec, ok, err := tr.Next()
		if err != nil {
			return c, fmt.Errorf("target: %w", err)
		}
		if !ok {
			break
		}
		c.target++
		for _, h := range rec.Headers {
			if !srcHeaders[string(h.Key)] {
				c.extraHeaders[string(h.Key)]++
			}
		}
		e, found := index[string(rec.Key)]
		switch {
		case !found:
			c.foreign++
			c.note("target offset %d: key %q is not in the source", rec.Offset, rec.Key)
			continue
		case seen[e.index]:
			c.duplicates++
			continue
		}
		seen[e.index] = true
		switch {
		case e.index == next:
			c.ok++
			next++
		case e.index < next:
			c.outOfOrder++
			c.note("target offset %d: source record %d arrived after record %d", rec.Offset, e.index, next-1)
		default:
			// Skipped ahead: the records in between are missing (counted at
			// the end) or come later (out of order).
			c.note("target offset %d: source record %d follows record %d", rec.Offset, e.index, next-1)
			next = e.index + 1
			c.ok++
		}
		if c.target%int64(every) == 0 {
			c.compared++
			if hashRecord(seed, rec, srcHeaders) != e.hash {
				c.mismatches++
				c.note("target offset %d (source record %d, key %q): key, value, headers or timestamp differ", rec.Offset, e.index, rec.Key)
			}
		}
	}
	for _, s := range seen {
		if !s {
			c.missing++
		}
	}
	if c.missing > 0 {
		c.note("%d source records never appeared on the target", c.missing)
	}
	return c, nil
}

func (c *partCheck) note(format string, args ...any) {
	if c.problem == "" {
		c.problem = fmt.Sprintf(format, args...)
	}
}

// hashRecord hashes key, value, timestamp (ms) and headers, keeping only the
// headers whose keys are in only (all headers if only is nil). Nil and empty
// keys, values and header values hash differently.
func hashRecord(seed maphash.Seed, rec record, only map[string]bool) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	var n [8]byte
	put := func(b []byte) {
		l := int64(len(b))
		if b == nil {
			l = -1
		}
		binary.BigEndian.PutUint64(n[:], uint64(l))
		_, _ = h.Write(n[:])
		_, _ = h.Write(b)
	}
	put(rec.Key)
	put(rec.Value)
	binary.BigEndian.PutUint64(n[:], uint64(rec.Timestamp.UnixMilli()))
	_, _ = h.Write(n[:])
	for _, hd := range rec.Headers {
		if only != nil && !only[string(hd.Key)] {
			continue
		}
		put(hd.Key)
		put(hd.Value)
	}
	return h.Sum64()
}
