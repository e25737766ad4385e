//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

// The fault tests (faults_*_test.go, next to fault_broker_test.go) break a
// real broker while records flow: SIGKILL and restart (kafka.sh kill /
// start), or a hang (kafka.sh pause / resume: SIGSTOP and SIGCONT of the
// broker's JVM). Their stream of records must survive the source going
// away, so it is not the mirror tests' stream: a batch that fails is
// written off as in doubt (it may or may not have reached the source) and
// the stream carries on with new producers once the source answers again. Every record carries its sequence number, so the
// copy on west can be checked record by record against what the stream
// knows: every acknowledged record there exactly once and in order, no
// record of an aborted transaction, nothing that was never sent.

// hungBroker is a broker hung by kafka.sh pause (SIGSTOP of its JVM).
type hungBroker struct {
	cluster string
	at      time.Time
	resumed time.Time
}

// hangBroker SIGSTOPs cluster's broker JVM (kafka.sh pause): it keeps its
// sockets, so clients see requests that are never answered, not refused
// connections. The JVM is SIGCONTed when the test ends, whatever happens.
func hangBroker(t testing.TB, cluster string) *hungBroker {
	t.Helper()
	h := &hungBroker{cluster: cluster}
	t.Cleanup(func() {
		if h.resumed.IsZero() {
			h.resume(t)
		}
	})
	kafkaScript(t, time.Minute, "pause", cluster)
	h.at = time.Now()
	return h
}

// resume SIGCONTs the JVM (kafka.sh resume).
func (h *hungBroker) resume(t testing.TB) {
	t.Helper()
	kafkaScript(t, time.Minute, "resume", h.cluster)
	h.resumed = time.Now()
}

// faultStream writes sequence-numbered records to every partition of a
// topic, in batches, two of three plain (idempotent producer) and the
// third in a transaction of which one in four is aborted, until stopped.
// Record seq goes to partition seq % Partitions with header seq=<seq>.
// A batch that fails is noted: a plain batch or a failed commit is in
// doubt (it may have been written); a transaction that fails before its
// commit, or whose abort fails, is aborted (the coordinator aborts an
// unfinished transaction once a new producer with the same transactional
// id starts). Its producers are dropped, and the stream starts new ones
// when the source answers again.
type faultStream struct {
	Topic      string
	Partitions int32
	Pace       time.Duration // pause between batches
	BatchSize  int

	stop    atomic.Bool
	Batches atomic.Int64 // batches acknowledged (plain) or committed
	Failed  atomic.Int64 // batches that failed

	mu        sync.Mutex
	next      int          // the next sequence number
	acked     map[int]bool // acknowledged plain records and committed transactional ones
	aborted   map[int]bool // records of aborted transactions (deliberately or not)
	uncertain map[int]bool // records of failed plain batches and failed commits
	errs      []string     // the first errors, for the log
}

func (s *faultStream) note(seqs []int, into map[int]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range seqs {
		into[q] = true
	}
}

func (s *faultStream) fail(seqs []int, into map[int]bool, err error) {
	s.Failed.Add(1)
	s.note(seqs, into)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errs) < 5 {
		s.errs = append(s.errs, err.Error())
	}
}

// start runs the stream in the background against cluster until halt is
// called; halt waits for the batch under way and returns.
func (s *faultStream) start(ctx context.Context, c *topology.Cluster, txnID string) (halt func()) {
	s.acked, s.aborted, s.uncertain = map[int]bool{}, map[int]bool{}, map[int]bool{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.run(ctx, c, txnID)
	}()
	return func() {
		s.stop.Store(true)
		<-done
	}
}

func (s *faultStream) run(ctx context.Context, c *topology.Cluster, txnID string) {
	var plain, txn sarama.SyncProducer
	dirty := false // a batch failed and no new producer has started since
	drop := func() {
		// Closing a producer whose broker is gone can take its whole retry
		// budget; the records are written off already, so do not wait.
		for _, p := range []sarama.SyncProducer{plain, txn} {
			if p != nil {
				go func(p sarama.SyncProducer) { _ = p.Close() }(p)
			}
		}
		plain, txn = nil, nil
	}
	defer func() {
		if !dirty {
			return
		}
		// The last batch failed: a transaction of it may still be open on
		// the source, holding its last stable offset back until its
		// timeout. A producer with the same transactional id aborts it.
		for ctx.Err() == nil {
			if p, err := newSyncProducer(c, txnID); err == nil {
				_ = p.Close()
				return
			}
			time.Sleep(time.Second)
		}
	}()
	defer drop()
	pad := strings.Repeat("x", 64)
	tick := time.NewTicker(s.Pace)
	defer tick.Stop()
	for b := 0; !s.stop.Load(); b++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if plain == nil {
			var err error
			if plain, err = newSyncProducer(c, ""); err != nil {
				plain = nil
				b--
				continue
			}
			if txn, err = newSyncProducer(c, txnID); err != nil {
				drop()
				b--
				continue
			}
			dirty = false
		}
		s.mu.Lock()
		first := s.next
		s.next += s.BatchSize
		s.mu.Unlock()
		msgs := make([]*sarama.ProducerMessage, 0, s.BatchSize)
		seqs := make([]int, 0, s.BatchSize)
		for seq := first; seq < first+s.BatchSize; seq++ {
			msgs = append(msgs, &sarama.ProducerMessage{
				Topic: s.Topic, Partition: int32(seq) % s.Partitions,
				Key:     sarama.StringEncoder("k" + strconv.Itoa(seq%101)),
				Value:   sarama.StringEncoder(fmt.Sprintf("r-%08d-%s", seq, pad)),
				Headers: []sarama.RecordHeader{{Key: []byte("seq"), Value: []byte(strconv.Itoa(seq))}},
			})
			seqs = append(seqs, seq)
		}
		if b%3 != 2 {
			if err := plain.SendMessages(msgs); err != nil {
				s.fail(seqs, s.uncertain, fmt.Errorf("plain batch %d: %w", b, err))
				dirty = true
				drop()
				continue
			}
			s.note(seqs, s.acked)
			s.Batches.Add(1)
			continue
		}
		abort := (b/3)%4 == 3
		err := txn.BeginTxn()
		if err == nil {
			err = txn.SendMessages(msgs)
		}
		switch {
		case err != nil:
			// Nothing was committed: the next producer with this id
			// aborts what is open.
			s.fail(seqs, s.aborted, fmt.Errorf("transaction %d: %w", b, err))
			dirty = true
			drop()
		case abort:
			if err := txn.AbortTxn(); err != nil {
				s.fail(seqs, s.aborted, fmt.Errorf("abort transaction %d: %w", b, err))
				dirty = true
				drop()
				continue
			}
			s.note(seqs, s.aborted)
		default:
			if err := txn.CommitTxn(); err != nil {
				s.fail(seqs, s.uncertain, fmt.Errorf("commit transaction %d: %w", b, err))
				dirty = true
				drop()
				continue
			}
			s.note(seqs, s.acked)
			s.Batches.Add(1)
		}
	}
}

// summary renders what the stream did.
func (s *faultStream) summary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%d records sent: %d acknowledged, %d in aborted transactions, %d in doubt (%d failed batches; first errors: %v)",
		s.next, len(s.acked), len(s.aborted), len(s.uncertain), s.Failed.Load(), s.errs)
}

// ackedCount is the number of records acknowledged so far.
func (s *faultStream) ackedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.acked)
}

// faultCheck is the record-by-record verdict on a copy.
type faultCheck struct {
	Checked    int // committed records on the source, each compared with its copy
	Acked      int // records the stream had acknowledged
	InDoubt    int // records of failed batches that made it to the source
	Lost       int // acknowledged records missing on the target
	Duplicated int // records present more than once on the target
}

func (c faultCheck) String() string {
	return fmt.Sprintf("%d records checked one by one (%d acknowledged, %d of failed batches that reached the source): lost %d, duplicated %d",
		c.Checked, c.Acked, c.InDoubt, c.Lost, c.Duplicated)
}

// checkFaultCopy compares the topic on east (src) and west (dst) record by
// record (compareTopic: same records in the same order, with provenance
// naming east and the source offset) and checks west against the stream:
// every acknowledged record is there once, in sequence order per
// partition, no record of an aborted transaction, nothing the stream never
// sent. Each problem fails the test. It dials both clusters anew: a client
// from before the fault may hold a dead connection.
func checkFaultCopy(t testing.TB, mt *mirrorTopo, s *faultStream, originID string) faultCheck {
	t.Helper()
	src, dst := mt.dial(t, "east"), mt.dial(t, "west")
	total, err := compareTopic(src, dst, s.Topic, s.Partitions, originID, false)
	if err != nil {
		t.Errorf("west is not a faithful copy of east: %v", err)
	}
	c := checkAgainstStream(t, dst, "west", s)
	c.Checked = total
	return c
}

// checkAgainstStream checks the topic on a cluster against the stream:
// every acknowledged record there exactly once, in sequence order per
// partition, no record of an aborted transaction, nothing never sent.
func checkAgainstStream(t testing.TB, client sarama.Client, cluster string, s *faultStream) faultCheck {
	t.Helper()
	var c faultCheck
	if err := client.RefreshMetadata(s.Topic); err != nil {
		t.Fatalf("%s: %s: %v", cluster, s.Topic, err)
	}
	recs, err := readPartitions(client, s.Topic, s.Partitions)
	if err != nil {
		t.Fatalf("read %s: %v", cluster, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[int]int{}
	var problems []string
	report := func(format string, args ...any) {
		if len(problems) < 10 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	for p, part := range recs {
		last := -1
		for _, r := range part {
			seq, err := recordSeq(r)
			if err != nil {
				report("%s %s/%d offset %d: %v", cluster, s.Topic, p, r.Offset, err)
				continue
			}
			seen[seq]++
			c.Checked++
			switch {
			case int32(seq)%s.Partitions != int32(p):
				report("record %d in partition %d, want %d", seq, p, int32(seq)%s.Partitions)
			case seq <= last:
				report("partition %d: record %d after record %d (order)", p, seq, last)
			case s.aborted[seq]:
				report("record %d of an aborted transaction on %s (offset %d)", seq, cluster, r.Offset)
			case !s.acked[seq] && !s.uncertain[seq]:
				report("record %d on %s was never sent", seq, cluster)
			}
			last = max(last, seq)
			if seen[seq] == 2 {
				c.Duplicated++
			}
			if seen[seq] == 1 && s.uncertain[seq] {
				c.InDoubt++
			}
		}
	}
	for seq := range s.acked {
		c.Acked++
		if seen[seq] == 0 {
			c.Lost++
			report("acknowledged record %d is missing on %s", seq, cluster)
		}
	}
	if c.Lost > 0 || c.Duplicated > 0 || len(problems) > 0 {
		t.Errorf("%s against the stream: %s; problems: %s", cluster, c, strings.Join(problems, "; "))
	}
	return c
}

func recordSeq(r kafkaread.Record) (int, error) {
	for _, h := range r.Headers {
		if string(h.Key) == "seq" {
			return strconv.Atoi(string(h.Value))
		}
	}
	return 0, fmt.Errorf("no seq header")
}

// sourceEnds returns the source's last stable offset of every partition
// the link selects, as the mirror's lag report measures them.
func sourceEnds(t testing.TB, mt *mirrorTopo, timeout time.Duration) map[string]int64 {
	t.Helper()
	var out map[string]int64
	kfaketest.WaitFor(t, timeout, "the source's end offsets", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		rep, err := linkstate.MeasureLag(ctx, session(t, mt.Topo), mt.link())
		if err != nil {
			return err
		}
		out = map[string]int64{}
		for _, p := range rep.Partitions {
			if p.Error != "" {
				return fmt.Errorf("%s/%d: %s", p.Topic, p.Partition, p.Error)
			}
			out[fmt.Sprintf("%s/%d", p.Topic, p.Partition)] = p.SourceEnd
		}
		return nil
	})
	return out
}

// waitMirroredPast waits until the link's committed progress on every
// partition has reached the given source offsets: the mirror copied at
// least everything the source held when they were taken. It returns how
// long that took.
func waitMirroredPast(t testing.TB, mt *mirrorTopo, ends map[string]int64, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	kfaketest.WaitFor(t, timeout, "the mirror copied past the source's end offsets", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		rep, err := linkstate.MeasureLag(ctx, session(t, mt.Topo), mt.link())
		if err != nil {
			return err
		}
		behind := 0
		for _, p := range rep.Partitions {
			if want, ok := ends[fmt.Sprintf("%s/%d", p.Topic, p.Partition)]; ok && p.Mirrored < want {
				behind++
			}
		}
		if behind > 0 {
			return fmt.Errorf("%d partition(s) not yet mirrored past the mark", behind)
		}
		return nil
	})
	return time.Since(start)
}

// mirroredRecords is the number of records the mirror process has copied,
// from its /metrics.
func mirroredRecords(p *mirrorProc) float64 {
	v, _, _ := p.metric("drctl_mirror_records_total", `link="east->west"`)
	return v
}
