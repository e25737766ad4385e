package mirror

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/mirror/groupsync"
	"github.com/drctl/drctl/offsettranslate"
	"github.com/drctl/drctl/topology"
)

// sourcePartition is what a test knows of one source partition after the
// mirror caught up: its committed records (what a read_committed consumer
// reads), its log start and last stable offset.
type sourcePartition struct {
	tp      topology.TopicPartition
	records []kafkaread.Record
	start   int64
	end     int64 // last stable offset
}

// after returns the records a consumer of the source reads from committed
// position pos on: every committed record at or after pos, or, for a
// position before the log start (deleted records), every record from the
// log start on, as auto.offset.reset=earliest gives.
func (s *sourcePartition) after(pos int64) []kafkaread.Record {
	i, _ := slices.BinarySearchFunc(s.records, max(pos, s.start), func(r kafkaread.Record, off int64) int {
		switch {
		case r.Offset < off:
			return -1
		case r.Offset > off:
			return 1
		}
		return 0
	})
	return s.records[i:]
}

// randomPosition picks a committed position on s: often a record, often a
// hole (a transaction marker, an aborted or compacted record), sometimes the
// log start, the end, past the end, or before the log start. It returns -2
// for "commit nothing" and -1 for "commit -1".
func (s *sourcePartition) randomPosition(r *rand.Rand) int64 {
	switch n := r.IntN(20); {
	case n == 0:
		return -2
	case n == 1:
		return -1
	case n == 2:
		return s.start
	case n == 3:
		return s.end
	case n == 4:
		return s.end + 1 + r.Int64N(3)
	case n == 5 && s.start > 0:
		return r.Int64N(s.start)
	case n < 11 && len(s.records) > 0:
		return s.records[r.IntN(len(s.records))].Offset
	default:
		return s.start + r.Int64N(s.end-s.start+1)
	}
}

// sameAsSource compares what a consumer read on the target with the source
// records it should have read, by content and by provenance (drctl.s).
func sameAsSource(got, want []kafkaread.Record) error {
	seen := map[int64]int{}
	for _, g := range got {
		seen[sourceOffset(g)]++
	}
	var dups, missing int
	for _, n := range seen {
		dups += n - 1
	}
	wantSet := map[int64]bool{}
	for _, w := range want {
		wantSet[w.Offset] = true
		if seen[w.Offset] == 0 {
			missing++
		}
	}
	extra := 0
	for off := range seen {
		if !wantSet[off] {
			extra++
		}
	}
	if dups+missing+extra > 0 {
		return fmt.Errorf("%d duplicates, %d missing, %d records the group had already consumed (read %d, want %d)", dups, missing, extra, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if sourceOffset(g) != w.Offset || string(g.Key) != string(w.Key) || (g.Key == nil) != (w.Key == nil) || string(g.Value) != string(w.Value) {
			return fmt.Errorf("record %d: read source offset %d key %q value %q, want offset %d key %q value %q",
				i, sourceOffset(g), g.Key, g.Value, w.Offset, w.Key, w.Value)
		}
	}
	return nil
}

// commitSource commits offsets for group on the cluster behind client the
// way an admin tool does (generation -1), with a raw request: the test
// does not lean on the code under test to set up the source.
func commitSource(t *testing.T, client sarama.Client, group string, offsets map[topology.TopicPartition]int64) {
	t.Helper()
	req := &sarama.OffsetCommitRequest{Version: 7, ConsumerGroup: group, ConsumerGroupGeneration: -1}
	for tp, off := range offsets {
		req.AddBlockWithLeaderEpoch(tp.Topic, tp.Partition, off, -1, 0, "m-"+group)
	}
	coord, err := client.Coordinator(group)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := coord.CommitOffset(req)
	if err != nil {
		t.Fatalf("commit %s: %v", group, err)
	}
	for topic, parts := range resp.Errors {
		for p, kerr := range parts {
			if kerr != sarama.ErrNoError {
				t.Fatalf("commit %s %s/%d: %v", group, topic, p, kerr)
			}
		}
	}
}

// groupSyncPair starts two kfake clusters with the given group sync
// interval and group selection.
func groupSyncPair(t *testing.T, topics string, interval time.Duration) *kfaketest.Pair {
	return kfaketest.NewPair(t, kfaketest.Options{Mirror: fmt.Sprintf(
		"  topics: {include: [%s]}\n  groups: {include: [\"g-.*\", \"_drctl.*\"], exclude: [\"g-excluded\"]}\n  group_sync_interval: %s\n", topics, interval)})
}

func startEngine(t *testing.T, topo *topology.Topology, opts Options) (*Engine, *Metrics) {
	t.Helper()
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	e, err := NewEngine(topo, "east", "west", opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("engine: %v", err)
		}
	})
	return e, opts.Metrics
}

// TestGroupTranslationIsExact proves exact group translation end to end on kfake. The
// source holds four topics, each with its own kind of holes: plain records;
// transactions with commits and aborts interleaved; a compacted topic with
// duplicate keys and tombstones, compacted twice; a head removed by
// DeleteRecords. The mirror copies them, then random committed positions
// (records, holes, the ends, past the end, before the log start, -1,
// none) are committed for many groups on the source. For every one,
// groupsync.Translate's target offset is where a read_committed consumer on
// the target reads exactly the records the source group had not consumed
// yet (by content and provenance): zero duplicates, zero missing. The
// mirror's continuous group sync then commits the same positions on the
// standby within a few intervals, and the snapshot and the status agree.
func TestGroupTranslationIsExact(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { testGroupTranslationIsExact(t, seed) })
	}
}

func testGroupTranslationIsExact(t *testing.T, seed uint64) {
	start := time.Now()
	p := groupSyncPair(t, `"plain", "txn", "compacted", "trimmed"`, 200*time.Millisecond)
	east, west := p.Topology.Clusters["east"], p.Topology.Clusters["west"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, west)
	r := rand.New(rand.NewPCG(seed, 11))

	kfaketest.CreateTopicOn(t, src, "plain", 2, nil)
	kfaketest.CreateTopicOn(t, src, "txn", 2, nil)
	kfaketest.CreateTopicOn(t, src, "compacted", 2, map[string]string{"cleanup.policy": "compact", "delete.retention.ms": "0"})
	kfaketest.CreateTopicOn(t, src, "trimmed", 2, nil)
	plain := kfaketest.IdempotentProducer(t, east, "")
	send := func(prod sarama.SyncProducer, topic string, part int32, key, value string) {
		t.Helper()
		m := &sarama.ProducerMessage{Topic: topic, Partition: part, Value: sarama.StringEncoder(value)}
		if value == "" {
			m.Value = nil // a tombstone
		}
		if key != "" {
			m.Key = sarama.StringEncoder(key)
		}
		if _, _, err := prod.SendMessage(m); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 240 {
		send(plain, "plain", int32(i%2), fmt.Sprintf("k%d", r.IntN(50)), fmt.Sprintf("plain-%d", i))
		send(plain, "trimmed", int32(i%2), "", fmt.Sprintf("trimmed-%d", i))
	}
	// Transactions of 1 to 6 records over both partitions, a third aborted,
	// with plain records in between.
	txn := kfaketest.IdempotentProducer(t, east, "test-source-txn")
	aborted := 0
	for i := range 60 {
		if err := txn.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		for j := range 1 + r.IntN(6) {
			send(txn, "txn", int32(r.IntN(2)), fmt.Sprintf("t%d", j), fmt.Sprintf("txn-%d-%d", i, j))
		}
		var err error
		if r.IntN(3) == 0 {
			err = txn.AbortTxn()
			aborted++
		} else {
			err = txn.CommitTxn()
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.IntN(4) == 0 {
			send(plain, "txn", int32(r.IntN(2)), "", fmt.Sprintf("between-%d", i))
		}
	}
	// A compacted topic: 8 keys, so most records are superseded; some
	// tombstones; compacted twice (kfake keeps the last batch).
	for round := range 2 {
		for i := range 120 {
			value := fmt.Sprintf("compacted-%d-%d", round, i)
			if r.IntN(10) == 0 {
				value = ""
			}
			send(plain, "compacted", int32(i%2), fmt.Sprintf("c%d", r.IntN(8)), value)
		}
		p.East.Compact()
	}
	// A head removed by DeleteRecords before the mirror ever saw it.
	admin, err := sarama.NewClusterAdminFromClient(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.DeleteRecords("trimmed", map[int32]int64{0: 37, 1: 52}); err != nil {
		t.Fatal(err)
	}

	e, metrics := startEngine(t, p.Topology, Options{Epoch: -1, Shards: 3, TopicSyncInterval: 300 * time.Millisecond,
		IdleCheck: 200 * time.Millisecond, SessionTimeout: 6 * time.Second})
	link := e.Link()
	waitFor(t, 30*time.Second, "the mirror caught up", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rep, err := linkstate.MeasureLag(ctx, kfaketest.Session(t, p.Topology), link)
		if err != nil {
			return err
		}
		if !rep.Caught() {
			return fmt.Errorf("lag %d records", rep.TotalRecords)
		}
		return nil
	})
	copied := time.Since(start)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var parts []*sourcePartition
	holes := 0
	for _, topic := range []string{"plain", "txn", "compacted", "trimmed"} {
		for part := range int32(2) {
			ends, err := kafkaread.PartitionEnds(ctx, src, topic, part)
			if err != nil {
				t.Fatal(err)
			}
			sp := &sourcePartition{tp: topology.TopicPartition{Topic: topic, Partition: part}, records: kfaketest.Records(t, src, topic, part, 0), start: ends.Start, end: ends.Stable}
			holes += int(sp.end-sp.start) - len(sp.records)
			parts = append(parts, sp)
		}
	}
	if holes < 100 {
		t.Fatalf("only %d holes in the source offsets: the scenario lost its point", holes)
	}

	// Random positions for many groups, committed on the source.
	const groups = 24
	want := map[string]map[topology.TopicPartition]int64{}
	var names []string
	for g := range groups {
		name := fmt.Sprintf("g-%02d", g)
		names = append(names, name)
		offs := map[topology.TopicPartition]int64{}
		for _, sp := range parts {
			if pos := sp.randomPosition(r); pos != -2 {
				offs[sp.tp] = pos
			}
		}
		commitSource(t, src, name, offs)
		want[name] = offs
	}
	commitSource(t, src, "g-excluded", map[topology.TopicPartition]int64{{Topic: "plain", Partition: 0}: 3})
	commitSource(t, src, "_drctl.fake", map[topology.TopicPartition]int64{{Topic: "plain", Partition: 0}: 3})
	committedAt := time.Now()

	rep, err := groupsync.Translate(ctx, kfaketest.Session(t, p.Topology), link, groupsync.TranslateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, gt := range rep.Groups {
		got = append(got, gt.Group)
	}
	if !slices.Equal(got, names) {
		t.Fatalf("translated groups %v, want the selected ones %v", got, names)
	}
	byTP := map[topology.TopicPartition]*sourcePartition{}
	for _, sp := range parts {
		byTP[sp.tp] = sp
	}
	statuses := map[string]int{}
	checked := 0
	for _, gt := range rep.Groups {
		if gt.Error != "" {
			t.Fatalf("group %s: %s", gt.Group, gt.Error)
		}
		translated := map[topology.TopicPartition]groupsync.GroupPartition{}
		for _, gp := range gt.Partitions {
			translated[topology.TopicPartition{Topic: gp.Topic, Partition: gp.Partition}] = gp
		}
		for _, sp := range parts {
			pos, committedHere := want[gt.Group][sp.tp]
			gp, ok := translated[sp.tp]
			if !committedHere || pos < 0 {
				if ok {
					t.Errorf("%s %s: no offset committed (%d) but translated %+v", gt.Group, sp.tp, pos, gp)
				}
				continue
			}
			if !ok {
				t.Errorf("%s %s: position %d not translated", gt.Group, sp.tp, pos)
				continue
			}
			statuses[gp.Status.String()]++
			if gp.Target < 0 {
				t.Errorf("%s %s: position %d has no target (%v)", gt.Group, sp.tp, pos, gp.Status)
				continue
			}
			// A retained position translates exactly; before-start only
			// before the partition's first committed record (leading
			// holes: the map cannot tell them from records the mirror
			// never saw, so it does not claim exactness there).
			leading := len(sp.records) == 0 || pos <= sp.records[0].Offset
			if pos >= sp.start && pos <= sp.end && !gp.Exact && !(gp.Status == offsettranslate.BeforeStart && leading) {
				t.Errorf("%s %s: retained position %d translated as %v, not exact", gt.Group, sp.tp, pos, gp.Status)
			}
			var read []kafkaread.Record
			if _, err := kafkaread.ReadCommitted(ctx, dst, sp.tp.Topic, sp.tp.Partition, gp.Target, func(rec kafkaread.Record) error {
				read = append(read, rec)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if err := sameAsSource(read, sp.after(pos)); err != nil {
				t.Errorf("%s %s: source position %d (log %d..%d) -> target %d (%v): %v", gt.Group, sp.tp, pos, sp.start, sp.end, gp.Target, gp.Status, err)
			}
			checked++
		}
	}
	t.Logf("source: %d holes in %d partitions, %d aborted transactions; mirrored in %v", holes, len(parts), aborted, copied.Round(time.Millisecond))
	t.Logf("checked %d positions with a consumer on the target: %v", checked, statuses)
	if checked < 150 || statuses["exact"] < 100 || statuses["clamped-to-end"] == 0 || statuses["before-start"] == 0 {
		t.Errorf("the positions cover too little: %d checked, %v", checked, statuses)
	}

	// The continuous sync commits the same positions on the standby.
	waitFor(t, 10*time.Second, "the group sync committed every translated position", func() error {
		for _, gt := range rep.Groups {
			now, err := groupsync.FetchCommitted(ctx, dst, gt.Group, false)
			if err != nil {
				return err
			}
			for _, gp := range gt.Partitions {
				if c := now[topology.TopicPartition{Topic: gp.Topic, Partition: gp.Partition}]; c.Offset != gp.Target || c.Metadata != "m-"+gt.Group {
					return fmt.Errorf("%s %s/%d: standby at %d (%q), want %d", gt.Group, gp.Topic, gp.Partition, c.Offset, c.Metadata, gp.Target)
				}
			}
			if len(now) != len(gt.Partitions) {
				return fmt.Errorf("%s: %d offsets on the standby, want %d", gt.Group, len(now), len(gt.Partitions))
			}
		}
		return nil
	})
	t.Logf("the group sync committed %d groups on the standby %v after the source commits (interval %v)",
		groups, time.Since(committedAt).Round(time.Millisecond), p.Topology.Mirror.GroupSyncInterval)
	for _, g := range []string{"g-excluded", "_drctl.fake"} {
		if now, err := groupsync.FetchCommitted(ctx, dst, g, false); err != nil || len(now) != 0 {
			t.Errorf("group %s is not selected but has offsets %v on the standby (%v)", g, now, err)
		}
	}
	if n := testutil.ToFloat64(metrics.GroupSync.CommittedPartitions.WithLabelValues(link.String(), "g-00")); n != float64(len(rep.Groups[0].Partitions)) {
		t.Errorf("committed partitions of g-00: metric %v, want %d", n, len(rep.Groups[0].Partitions))
	}

	// A second, one-shot sync finds nothing to do.
	plan := groupsync.Decide(mustTranslate(t, ctx, p.Topology, link, groupsync.TranslateOptions{}))
	if n := plan.Changes(); n != 0 {
		t.Errorf("a synced standby still has %d changes: %+v", n, plan.Groups)
	}

	// The snapshot holds the source positions; translating from it gives
	// the same targets, with the source out of the picture.
	waitFor(t, 5*time.Second, "the snapshot holds every group", func() error {
		snaps, err := groupsync.LoadSnapshot(ctx, dst, link)
		if err != nil {
			return err
		}
		for _, name := range names {
			s, ok := snaps[name]
			if !ok {
				return fmt.Errorf("no snapshot of %s", name)
			}
			if s.SyncedAt == nil || s.Source != "east" {
				return fmt.Errorf("snapshot of %s: %+v", name, s)
			}
			n := 0
			for _, o := range s.Offsets {
				if want[name][topology.TopicPartition{Topic: o.Topic, Partition: o.Partition}] != o.Offset {
					return fmt.Errorf("snapshot of %s: %s/%d at %d", name, o.Topic, o.Partition, o.Offset)
				}
				n++
			}
			if wantN := positiveOffsets(want[name]); n != wantN {
				return fmt.Errorf("snapshot of %s holds %d offsets, want %d", name, n, wantN)
			}
		}
		if _, ok := snaps["g-excluded"]; ok {
			return errors.New("the snapshot holds an excluded group")
		}
		return nil
	})
	fromSnap := mustTranslate(t, ctx, p.Topology, link, groupsync.TranslateOptions{FromSnapshot: true, Groups: names[:5]})
	for i, gt := range fromSnap.Groups {
		live := rep.Groups[i]
		if !gt.FromSnapshot || len(gt.Partitions) != len(live.Partitions) {
			t.Fatalf("%s from the snapshot: %+v", gt.Group, gt)
		}
		for j, gp := range gt.Partitions {
			if gp.Target != live.Partitions[j].Target || gp.SourceCommitted != live.Partitions[j].SourceCommitted {
				t.Errorf("%s from the snapshot: %+v, live %+v", gt.Group, gp, live.Partitions[j])
			}
		}
	}
	st, err := groupsync.StatusFrom(ctx, kfaketest.Dial(t, p.Topology, link.Target), p.Topology, link)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if s := st[name]; !s.InSync || s.BehindSeconds < 0 || s.BehindSeconds > 5 {
			t.Errorf("status of %s: %+v", name, s)
		}
	}

	// While records keep arriving, a group that follows the source's end
	// is kept at the target's end once the mirror has copied them.
	for i := range 60 {
		send(plain, "plain", int32(i%2), "", fmt.Sprintf("late-%d", i))
	}
	follow := map[topology.TopicPartition]int64{}
	for part := range int32(2) {
		lso, err := kafkaread.LastStableOffset(ctx, src, "plain", part)
		if err != nil {
			t.Fatal(err)
		}
		follow[topology.TopicPartition{Topic: "plain", Partition: part}] = lso
	}
	commitSource(t, src, "g-00", follow)
	moved := time.Now()
	waitFor(t, 10*time.Second, "g-00 at the target's end of plain", func() error {
		now, err := groupsync.FetchCommitted(ctx, dst, "g-00", false)
		if err != nil {
			return err
		}
		for part := range int32(2) {
			// Just past the copy of the source's last record: a consumer
			// there reads what comes next, nothing already consumed.
			recs, err := readAll(dst, "plain", part)
			if err != nil {
				return err
			}
			last := recs[len(recs)-1]
			if got := sourceOffset(last); got != follow[topology.TopicPartition{Topic: "plain", Partition: part}]-1 {
				return fmt.Errorf("plain/%d: the target's last record is a copy of source offset %d; not caught up", part, got)
			}
			if got := now[topology.TopicPartition{Topic: "plain", Partition: part}].Offset; got != last.Offset+1 {
				return fmt.Errorf("plain/%d: standby at %d, want %d (after the last copied record)", part, got, last.Offset+1)
			}
		}
		return nil
	})
	t.Logf("a group at the source's end reached the target's end %v after new records arrived", time.Since(moved).Round(time.Millisecond))
	t.Logf("whole test %v", time.Since(start).Round(time.Millisecond))
}

func positiveOffsets(m map[topology.TopicPartition]int64) int {
	n := 0
	for _, off := range m {
		if off >= 0 {
			n++
		}
	}
	return n
}

func mustTranslate(t *testing.T, ctx context.Context, topo *topology.Topology, link topology.Link, opts groupsync.TranslateOptions) *groupsync.TranslationReport {
	t.Helper()
	rep, err := groupsync.Translate(ctx, kfaketest.Session(t, topo), link, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestGroupSyncNeverTouchesActiveGroups proves that a group with members
// on the standby keeps its offsets there: the continuous sync skips it
// round after round (and counts it), a one-shot sync refuses it with a
// reason, the coordinator refuses an admin commit anyway, the snapshot and
// the status say so; once its consumers leave, the next rounds sync it.
func TestGroupSyncNeverTouchesActiveGroups(t *testing.T) {
	p := groupSyncPair(t, `"orders"`, 150*time.Millisecond)
	east, west := p.Topology.Clusters["east"], p.Topology.Clusters["west"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, west)
	kfaketest.CreateTopicOn(t, src, "orders", 1, nil)
	prod := kfaketest.IdempotentProducer(t, east, "")
	for i := range 50 {
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "orders", Partition: 0, Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	e, metrics := startEngine(t, p.Topology, Options{Epoch: -1, Shards: 2, TopicSyncInterval: 200 * time.Millisecond,
		IdleCheck: 200 * time.Millisecond, SessionTimeout: 6 * time.Second})
	link := e.Link()
	waitFor(t, 30*time.Second, "orders mirrored", func() error {
		if n := len(committedOrNil(dst, "orders", 0)); n != 50 {
			return fmt.Errorf("%d of 50 records on the target", n)
		}
		return nil
	})

	t.Logf("mirrored after %v", time.Since(start).Round(time.Millisecond))
	// Source offset 40 is the copy of record 40 on west: offset 40 when
	// the records were copied in one transaction, later when the shard
	// committed before it (a commit marker takes an offset).
	copies := committedOrNil(dst, "orders", 0)
	at40 := copies[40].Offset
	if string(copies[40].Value) != "40" {
		t.Fatalf("west's 41st record is %q, want the copy of source record 40", copies[40].Value)
	}
	// The standby's group has its own offset and a member.
	const group = "g-busy"
	orders0 := topology.TopicPartition{Topic: "orders", Partition: 0}
	commitSource(t, dst, group, map[topology.TopicPartition]int64{orders0: 5})
	member := joinGroup(t, west, group, "orders")
	t.Logf("member joined after %v", time.Since(start).Round(time.Millisecond))
	commitSource(t, src, group, map[topology.TopicPartition]int64{orders0: 40})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	skipped := metrics.GroupSync.SkippedActive.WithLabelValues(link.String(), group)
	waitFor(t, 10*time.Second, "three rounds that skipped the group", func() error {
		if n := testutil.ToFloat64(skipped); n < 3 {
			return fmt.Errorf("%v rounds skipped it", n)
		}
		return nil
	})
	if now, err := groupsync.FetchCommitted(ctx, dst, group, false); err != nil || now[orders0].Offset != 5 || len(now) != 1 {
		t.Fatalf("the active group's offsets on the standby changed: %v (%v)", now, err)
	}
	rep := mustTranslate(t, ctx, p.Topology, link, groupsync.TranslateOptions{Groups: []string{group}})
	plan := groupsync.Decide(rep)
	if g := plan.Groups[0]; g.Action != groupsync.SyncSkippedActive || !strings.Contains(g.Reason, "has 1 members on the standby west") || len(g.Changes) != 0 {
		t.Fatalf("plan for the active group: %+v", g)
	}
	// Even a plan made while the group was empty is not applied once it
	// has members.
	forced := *plan
	forced.Groups = []groupsync.Group{{Group: group, Action: groupsync.SyncCommit, Changes: []groupsync.OffsetChange{{Topic: "orders", Partition: 0, Before: 5, After: 40}}}}
	res, err := groupsync.Apply(ctx, kfaketest.Session(t, p.Topology), link, &forced)
	if err != nil {
		t.Fatal(err)
	}
	if g := res.Groups[0]; g.Action != groupsync.SyncSkippedActive || g.Committed || !strings.Contains(g.Reason, "joined after the plan") {
		t.Fatalf("apply to an active group: %+v", g)
	}
	// And Kafka itself refuses an admin commit for it.
	if err := groupsync.CommitOffsets(ctx, dst, group, forced.Groups[0].Changes); !errors.Is(err, groupsync.ErrGroupActive) {
		t.Fatalf("admin commit for an active group: %v, want groupsync.ErrGroupActive", err)
	}
	if now, _ := groupsync.FetchCommitted(ctx, dst, group, false); now[orders0].Offset != 5 {
		t.Fatalf("the active group moved to %d", now[orders0].Offset)
	}
	st, err := groupsync.StatusFrom(ctx, kfaketest.Dial(t, p.Topology, link.Target), p.Topology, link)
	if err != nil {
		t.Fatal(err)
	}
	if s := st[group]; s.InSync || s.LastAction != groupsync.SyncSkippedActive || !strings.Contains(s.Reason, "members") {
		t.Errorf("status of the active group: %+v", s)
	}

	// Once the member leaves, the sync resumes.
	t.Logf("checks done after %v", time.Since(start).Round(time.Millisecond))
	left := time.Now()
	member.Close()
	waitFor(t, 10*time.Second, "the group synced once its member left", func() error {
		now, err := groupsync.FetchCommitted(ctx, dst, group, false)
		if err != nil {
			return err
		}
		if now[orders0].Offset != at40 {
			return fmt.Errorf("standby at %d, want %d", now[orders0].Offset, at40)
		}
		return nil
	})
	t.Logf("synced %v after the member left (interval %v)", time.Since(left).Round(time.Millisecond), p.Topology.Mirror.GroupSyncInterval)
	// A stale plan: the standby moved between plan and apply.
	stale := groupsync.Sync{Link: link.String(), Groups: []groupsync.Group{{Group: group, Action: groupsync.SyncCommit,
		Changes: []groupsync.OffsetChange{{Topic: "orders", Partition: 0, Before: 5, After: 7}}}}}
	res, err = groupsync.Apply(ctx, kfaketest.Session(t, p.Topology), link, &stale)
	if err != nil {
		t.Fatal(err)
	}
	if g := res.Groups[0]; g.Action != groupsync.SyncStale || g.Committed {
		t.Errorf("stale plan: %+v", g)
	}
	if now, _ := groupsync.FetchCommitted(ctx, dst, group, false); now[orders0].Offset != at40 {
		t.Errorf("a stale plan moved the group to %d", now[orders0].Offset)
	}
}

func committedOrNil(cl sarama.Client, topic string, p int32) []kafkaread.Record {
	recs, _ := readAll(cl, topic, p)
	return recs
}

// member is a consumer-group member that holds its group on a cluster.
type member struct {
	group sarama.ConsumerGroup
	done  chan struct{}
}

func (m *member) Close() {
	_ = m.group.Close()
	<-m.done
}

type idleHandler struct{ ready chan struct{} }

func (h idleHandler) Setup(sarama.ConsumerGroupSession) error {
	select {
	case h.ready <- struct{}{}:
	default:
	}
	return nil
}
func (idleHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (idleHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, _ sarama.ConsumerGroupClaim) error {
	<-sess.Context().Done() // consume nothing, commit nothing
	return nil
}

// joinGroup makes a member join group on c, subscribed to topic, and
// returns once it has an assignment. It commits nothing.
func joinGroup(t *testing.T, c *topology.Cluster, group, topic string) *member {
	t.Helper()
	cfg, err := c.SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Group.Session.Timeout = 6 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	cg, err := sarama.NewConsumerGroup(c.Bootstrap, group, cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := &member{group: cg, done: make(chan struct{})}
	h := idleHandler{ready: make(chan struct{}, 1)}
	go func() {
		defer close(m.done)
		for {
			if err := cg.Consume(context.Background(), []string{topic}, h); errors.Is(err, sarama.ErrClosedConsumerGroup) {
				return
			}
		}
	}()
	t.Cleanup(m.Close)
	select {
	case <-h.ready:
	case <-time.After(15 * time.Second):
		t.Fatalf("member of %s never got an assignment", group)
	}
	return m
}
