package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// The fanout modes measure a mirror at scale: many topics of many
// partitions with a few records each (bench/run.sh, scenario scale).
//
//	loadgen fanout      -brokers B -prefix P -topics N -partitions M -records R
//	loadgen fanout-wait -src-brokers B1 -brokers B2 -prefix P [-t0 MS] [-group G]
//
// fanout creates the topics P-0000 ... (in batches, waiting for their
// leaders) and writes R small records into every partition. fanout-wait
// polls the target until every source partition has committed records on
// it (started_all_s: the mirror copies every partition) and then until
// every target partition holds at least as many committed offsets as the
// source has records (done_s). With -group, it first commits G's offsets on
// the source at the middle of every partition, and at the end waits until
// the target holds G's offsets for every partition, and checks a sample:
// the record at the target offset must be the copy of the record at the
// source offset (the translation is exact). -save-baseline and -baseline
// measure a restart: a partition has started when its target end passed the
// one saved before the restart.

// fanoutTopics names the topics of a fanout.
func fanoutTopics(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%04d", prefix, i)
	}
	return out
}

func runFanout(args []string) error {
	fs := newFlags("fanout")
	var c conn
	connFlags(fs, &c, "", "source", "127.0.0.1:39092")
	prefix := fs.String("prefix", "", "topic name prefix (required)")
	topics := fs.Int("topics", 500, "topics")
	partitions := fs.Int("partitions", 20, "partitions per topic")
	records := fs.Int("records", 10, "records per partition")
	size := fs.Int("size", 100, "value size in bytes")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *prefix == "" {
		logf("fanout: -prefix is required")
		return errUsage
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	names := fanoutTopics(*prefix, *topics)
	start := time.Now()
	if err := createTopics(cl, names, *partitions); err != nil {
		return err
	}
	created := time.Since(start)
	logf("fanout: %d topics x %d partitions created in %.1fs", *topics, *partitions, created.Seconds())

	cfg, err := c.saramaConfig()
	if err != nil {
		return err
	}
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Return.Successes = true
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	cfg.Producer.Flush.Bytes = 1 << 20
	// Leaders of partitions just created may not answer as leaders yet.
	cfg.Producer.Retry.Max = 30
	cfg.Producer.Retry.Backoff = 250 * time.Millisecond
	prod, err := sarama.NewAsyncProducer(splitList(c.brokers), cfg)
	if err != nil {
		return err
	}
	value := make([]byte, *size)
	total := len(names) * *partitions * *records
	wrote := time.Now()
	go func() {
		for _, t := range names {
			for p := range *partitions {
				for i := range *records {
					binary.BigEndian.PutUint32(value, uint32(i))
					prod.Input() <- &sarama.ProducerMessage{Topic: t, Partition: int32(p),
						Key: sarama.StringEncoder(fmt.Sprintf("%s/%d/%d", t, p, i)), Value: sarama.ByteEncoder(append([]byte(nil), value...))}
				}
			}
		}
	}()
	for range total {
		select {
		case <-prod.Successes():
		case perr := <-prod.Errors():
			_ = prod.Close()
			return fmt.Errorf("produce to %s/%d: %w", perr.Msg.Topic, perr.Msg.Partition, perr.Err)
		}
	}
	if err := prod.Close(); err != nil {
		return err
	}
	r := newResult("fanout")
	r.set("topics", *topics)
	r.set("partitions", *topics**partitions)
	r.set("records", total)
	r.set("create_s", created)
	r.set("produce_s", time.Since(wrote))
	r.print()
	return nil
}

// createTopics creates topics in batches and waits until every partition
// has a leader.
func createTopics(cl sarama.Client, names []string, partitions int) error {
	ctrl, err := cl.Controller()
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	const batch = 50
	for i := 0; i < len(names); i += batch {
		req := &sarama.CreateTopicsRequest{Version: 4, Timeout: 60 * time.Second, TopicDetails: map[string]*sarama.TopicDetail{}}
		for _, t := range names[i:min(i+batch, len(names))] {
			req.TopicDetails[t] = &sarama.TopicDetail{NumPartitions: int32(partitions), ReplicationFactor: 1}
		}
		resp, err := ctrl.CreateTopics(req)
		if err != nil {
			return fmt.Errorf("create topics: %w", err)
		}
		for t, e := range resp.TopicErrors {
			if e != nil && !errors.Is(e.Err, sarama.ErrNoError) && !errors.Is(e.Err, sarama.ErrTopicAlreadyExists) {
				return fmt.Errorf("create %s: %w", t, e.Err)
			}
		}
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		err := cl.RefreshMetadata(names...)
		missing := 0
		if err == nil {
			for _, t := range names {
				ps, perr := cl.Partitions(t)
				if perr != nil || len(ps) != partitions || !allLeaders(cl, t, partitions) {
					missing++
				}
			}
		}
		if err == nil && missing == 0 {
			// The metadata names a leader before that broker serves the
			// partition: wait until every partition answers ListOffsets.
			var parts []fanoutPart
			for _, t := range names {
				for p := range partitions {
					parts = append(parts, fanoutPart{t, int32(p)})
				}
			}
			offs, oerr := allOffsets(cl, parts)
			if oerr == nil && len(offs) == len(parts) {
				return nil
			}
			missing = len(parts) - len(offs)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d topics or partitions without leaders after 5 minutes (%v)", missing, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// topicsOfParts returns the topics of parts, each once.
func topicsOfParts(parts []fanoutPart) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range parts {
		if !seen[p.topic] {
			seen[p.topic] = true
			out = append(out, p.topic)
		}
	}
	return out
}

type fanoutPart struct {
	topic string
	part  int32
}

// allOffsets lists, in one request per broker, the start and end offsets
// (read_committed) of parts; partitions the cluster does not know are left
// out.
func allOffsets(cl sarama.Client, parts []fanoutPart) (map[fanoutPart]partOffsets, error) {
	byLeader := map[*sarama.Broker][]fanoutPart{}
	for _, p := range parts {
		b, err := cl.Leader(p.topic, p.part)
		if err != nil {
			continue
		}
		byLeader[b] = append(byLeader[b], p)
	}
	out := map[fanoutPart]partOffsets{}
	for b, ps := range byLeader {
		for _, which := range []int64{sarama.OffsetOldest, sarama.OffsetNewest} {
			req := sarama.NewOffsetRequest(sarama.V3_6_0_0)
			req.IsolationLevel = sarama.ReadCommitted
			for _, p := range ps {
				req.AddBlock(p.topic, p.part, which, 1)
			}
			resp, err := b.GetAvailableOffsets(req)
			if err != nil {
				return nil, err
			}
			for _, p := range ps {
				blk := resp.GetBlock(p.topic, p.part)
				if blk == nil || !errors.Is(blk.Err, sarama.ErrNoError) {
					continue
				}
				o := out[p]
				if which == sarama.OffsetOldest {
					o.Start = blk.Offset
				} else {
					o.End = blk.Offset
				}
				out[p] = o
			}
		}
	}
	return out, nil
}

func runFanoutWait(args []string) error {
	fs := newFlags("fanout-wait")
	var src, dst conn
	connFlags(fs, &src, "src-", "source", "127.0.0.1:39092")
	connFlags(fs, &dst, "", "target", "127.0.0.1:49092")
	prefix := fs.String("prefix", "", "topic name prefix (required)")
	t0ms := fs.Int64("t0", 0, "start of the measurement, Unix milliseconds (default: now)")
	group := fs.String("group", "", "also commit this group's offsets on the source and wait for them on the target")
	sample := fs.Int("sample", 10, "with -group: check every Nth partition's translated offset record by record")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long")
	saveBase := fs.String("save-baseline", "", "write the target's committed end offsets into this file and exit")
	baseFile := fs.String("baseline", "", "a file of -save-baseline: a partition has started when its end passed the one saved")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *prefix == "" {
		logf("fanout-wait: -prefix is required")
		return errUsage
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
	tc, err := dst.client()
	if err != nil {
		return err
	}
	defer tc.Close()
	if err := sc.RefreshMetadata(); err != nil {
		return err
	}
	all, err := sc.Topics()
	if err != nil {
		return err
	}
	var parts []fanoutPart
	var topics []string
	for _, t := range all {
		if !strings.HasPrefix(t, *prefix+"-") {
			continue
		}
		topics = append(topics, t)
		ps, err := sc.Partitions(t)
		if err != nil {
			return err
		}
		for _, p := range ps {
			parts = append(parts, fanoutPart{t, p})
		}
	}
	sort.Strings(topics)
	if len(parts) == 0 {
		return fmt.Errorf("no source topic named %s-*", *prefix)
	}
	if *saveBase != "" {
		_ = tc.RefreshMetadata(topics...)
		offs, err := allOffsets(tc, parts)
		if err != nil {
			return err
		}
		var b strings.Builder
		for p, o := range offs {
			fmt.Fprintf(&b, "%s %d %d\n", p.topic, p.part, o.End)
		}
		return os.WriteFile(*saveBase, []byte(b.String()), 0o644)
	}
	base := map[fanoutPart]int64{}
	if *baseFile != "" {
		raw, err := os.ReadFile(*baseFile)
		if err != nil {
			return err
		}
		for line := range strings.SplitSeq(strings.TrimSpace(string(raw)), "\n") {
			var p fanoutPart
			var end int64
			if _, err := fmt.Sscanf(line, "%s %d %d", &p.topic, &p.part, &end); err == nil {
				base[p] = end
			}
		}
	}
	srcOffs, err := allOffsets(sc, parts)
	if err != nil {
		return err
	}
	if *group != "" {
		if err := commitMiddle(sc, *group, parts, srcOffs); err != nil {
			return err
		}
	}
	logf("fanout-wait: %d partitions of %d topics", len(parts), len(topics))
	deadline := t0.Add(*timeout)
	var startedAll, doneAll time.Duration
	lastLog := time.Now()
	// Each poll asks only for the partitions not done yet (and their
	// topics' metadata): a partition done stays done, and asking the target
	// for all 10,000 every 200 ms was a load of its own on the broker being
	// measured.
	remaining := slices.Clone(parts)
	isStarted := make(map[fanoutPart]bool, len(parts))
	for {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v (started all after %v)", *timeout, startedAll)
		}
		_ = tc.RefreshMetadata(topicsOfParts(remaining)...)
		offs, err := allOffsets(tc, remaining)
		if err == nil {
			var left []fanoutPart
			for _, p := range remaining {
				o, ok := offs[p]
				if !ok {
					left = append(left, p)
					continue
				}
				if o.End > max(o.Start, base[p]) {
					isStarted[p] = true
				}
				s := srcOffs[p]
				if !(isStarted[p] && o.End-o.Start >= s.End-s.Start && o.End > base[p]) {
					left = append(left, p)
				}
			}
			remaining = left
			started, done := len(isStarted), len(parts)-len(remaining)
			if startedAll == 0 && started == len(parts) {
				startedAll = time.Since(t0)
				logf("fanout-wait: every partition has records on the target after %.1fs", startedAll.Seconds())
			}
			if startedAll > 0 && done == len(parts) {
				doneAll = time.Since(t0)
				break
			}
			if time.Since(lastLog) > 5*time.Second {
				logf("fanout-wait: %d/%d partitions started, %d done", started, len(parts), done)
				lastLog = time.Now()
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	r := newResult("fanout-wait")
	r.set("partitions", len(parts))
	r.set("started_all_s", startedAll)
	r.set("done_s", doneAll)
	if *group != "" {
		synced, checked, err := waitGroupSynced(sc, tc, *group, parts, srcOffs, *sample, deadline)
		if err != nil {
			return err
		}
		r.set("group_synced_s", synced)
		r.set("group_checked", checked)
	}
	r.print()
	return nil
}

// commitMiddle commits group's offset at the middle of every partition on
// the source, as a consumer that read half of it would.
func commitMiddle(cl sarama.Client, group string, parts []fanoutPart, offs map[fanoutPart]partOffsets) error {
	// In chunks: the coordinator writes one commit as one batch, and 10,000
	// offsets exceed the brokers' message.max.bytes.
	const chunk = 1000
	for i := 0; i < len(parts); i += chunk {
		req := &sarama.OffsetCommitRequest{Version: 2, ConsumerGroup: group, ConsumerGroupGeneration: -1, RetentionTime: -1}
		for _, p := range parts[i:min(i+chunk, len(parts))] {
			o := offs[p]
			req.AddBlock(p.topic, p.part, o.Start+(o.End-o.Start)/2, 0, "")
		}
		// A coordinator that just became one (a new group's offsets
		// partition) answers COORDINATOR_LOAD_IN_PROGRESS for a while.
		if _, err := kafkaread.Retry(context.Background(), kafkaread.Patient, func(attempt int) (struct{}, error) {
			if attempt > 0 {
				_ = cl.RefreshCoordinator(group)
			}
			coord, err := cl.Coordinator(group)
			if err != nil {
				return struct{}{}, err
			}
			resp, err := coord.CommitOffset(req)
			if err != nil {
				return struct{}{}, err
			}
			for t, ps := range resp.Errors {
				for p, e := range ps {
					if !errors.Is(e, sarama.ErrNoError) {
						return struct{}{}, fmt.Errorf("commit %s %s/%d: %w", group, t, p, e)
					}
				}
			}
			return struct{}{}, nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// waitGroupSynced waits until the target holds group's offsets for every
// partition, then checks every sample-th partition: the record at the
// target offset must carry, as its source offset, the group's source offset.
func waitGroupSynced(sc, tc sarama.Client, group string, parts []fanoutPart, srcOffs map[fanoutPart]partOffsets, sample int, deadline time.Time) (time.Duration, int, error) {
	start := time.Now()
	var got map[fanoutPart]int64
	for {
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("group %s: %d of %d partitions have offsets on the target", group, len(got), len(parts))
		}
		got = map[fanoutPart]int64{}
		if coord, err := tc.Coordinator(group); err == nil {
			req := &sarama.OffsetFetchRequest{Version: 5, ConsumerGroup: group}
			for _, p := range parts {
				req.AddPartition(p.topic, p.part)
			}
			if resp, err := coord.FetchOffset(req); err == nil {
				for _, p := range parts {
					if b := resp.GetBlock(p.topic, p.part); b != nil && b.Offset >= 0 {
						got[p] = b.Offset
					}
				}
			}
		}
		if len(got) == len(parts) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	synced := time.Since(start)
	checked := 0
	for i, p := range parts {
		if sample <= 0 || i%sample != 0 {
			continue
		}
		o := srcOffs[p]
		want := o.Start + (o.End-o.Start)/2
		if want == o.End {
			continue
		}
		rd := newPartReader(tc, p.topic, p.part, got[p], got[p]+64)
		rec, ok, err := rd.Next()
		if err != nil {
			return 0, 0, fmt.Errorf("group %s: read %s/%d at %d: %w", group, p.topic, p.part, got[p], err)
		}
		if !ok {
			return 0, 0, fmt.Errorf("group %s: no record at target %s/%d offset %d (source offset %d)", group, p.topic, p.part, got[p], want)
		}
		var srcOff int64 = -1
		for _, h := range rec.Headers {
			if string(h.Key) == topology.HeaderSourceOffset && len(h.Value) == 8 {
				srcOff = int64(binary.BigEndian.Uint64(h.Value))
			}
		}
		if srcOff != want {
			return 0, 0, fmt.Errorf("group %s: %s/%d: target offset %d holds source offset %d, the group is at %d: translation not exact", group, p.topic, p.part, got[p], srcOff, want)
		}
		checked++
	}
	return synced, checked, nil
}
