//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/mirror/groupsync"
	"github.com/drctl/drctl/topology"
)

// offsetsPasswordVar is where the topology files of these tests read
// drctl's password from.
const offsetsPasswordVar = "DRCTL_E2E_OFFSETS_PASSWORD"

// offsetsTopo is one test's topology: its own name (so the link's internal
// topics and transactional ids are its own), one source topic, and the
// groups named prefix-*.
type offsetsTopo struct {
	name, path, topic, prefix string
	topo                      *topology.Topology
}

// newOffsetsTopo writes the topology; its mirror copies the topics whose
// names are the topology's name followed by a match of suffix ("": just
// the topic name-txn).
func newOffsetsTopo(t *testing.T, syncInterval time.Duration, suffix string) *offsetsTopo {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	ot := &offsetsTopo{name: "offsets-" + hex.EncodeToString(b)}
	ot.topic, ot.prefix = ot.name+"-txn", ot.name+"-g"
	include := ot.topic
	if suffix != "" {
		include = ot.name + suffix
	}
	ot.path = filepath.Join(t.TempDir(), "drctl.yaml")
	yaml := topologyHead(ot.name, offsetsPasswordVar) + fmt.Sprintf(`mirror:
  topics: {include: [%q]}
  groups: {include: [%q]}
  group_sync_interval: %s
`, include, ot.prefix+"-.*", syncInterval)
	if err := os.WriteFile(ot.path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	topo, err := topology.Parse(ot.path, []byte(yaml), func(key string) (string, bool) {
		if key == offsetsPasswordVar {
			return env.Password, true
		}
		return os.LookupEnv(key)
	})
	if err != nil {
		t.Fatal(err)
	}
	ot.topo = topo
	t.Cleanup(func() { ot.cleanup(t) })
	return ot
}

func (ot *offsetsTopo) link() topology.Link { return ot.topo.Link("east", "west") }

func (ot *offsetsTopo) env() []string { return []string{offsetsPasswordVar + "=" + env.Password} }

// cleanup deletes what the test left: the mirrored topic and the link's
// internal topics on west, and the test's groups on both clusters.
func (ot *offsetsTopo) cleanup(t *testing.T) {
	for _, cluster := range []string{"east", "west"} {
		c, err := sarama.NewClient([]string{bootstrap(t, cluster)}, adminConfig(t))
		if err != nil {
			continue
		}
		admin, err := sarama.NewClusterAdminFromClient(c)
		if err != nil {
			c.Close()
			continue
		}
		if cluster == "west" {
			l := ot.link()
			deleteTopics(t, "west", ot.topic, l.ShardsTopic(), l.OffsetsTopic(), l.GroupsTopic())
		}
		if groups, err := admin.ListConsumerGroups(); err == nil {
			for g := range groups {
				if strings.HasPrefix(g, ot.name+"-") || strings.HasPrefix(g, "_drctl."+ot.name+".") {
					_ = admin.DeleteConsumerGroup(g)
				}
			}
		}
		_ = admin.Close()
	}
}

// offsetsMirror is a `drctl mirror run` child with its endpoints on addr.
type offsetsMirror struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
	log  string
}

func startOffsetsMirror(t *testing.T, ot *offsetsTopo) *offsetsMirror {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	m := &offsetsMirror{addr: addr, done: make(chan struct{}), log: filepath.Join(t.TempDir(), "mirror.log")}
	logFile, err := os.Create(m.log)
	if err != nil {
		t.Fatal(err)
	}
	m.cmd = exec.Command(drctlBinary(t), "-c", ot.path, "mirror", "run", "--listen", addr, "--shards", "2")
	m.cmd.Env = append(os.Environ(), ot.env()...)
	m.cmd.Stdout, m.cmd.Stderr = logFile, logFile
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = m.cmd.Wait(); logFile.Close(); close(m.done) }()
	t.Cleanup(func() {
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.done:
		case <-time.After(30 * time.Second):
			_ = m.cmd.Process.Kill()
			<-m.done
		}
		if t.Failed() {
			if b, err := os.ReadFile(m.log); err == nil {
				lines := strings.Split(strings.TrimSpace(string(b)), "\n")
				t.Logf("mirror log tail:\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
			}
		}
	})
	return m
}

// metric sums the samples of a metric whose labels contain every given
// label="value" pair, from the child's /metrics.
func (m *offsetsMirror) metric(name string, labels ...string) (float64, error) {
	resp, err := http.Get("http://" + m.addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	sum := 0.0
	for line := range strings.SplitSeq(string(body), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		if !ok {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
			sum += v
		}
	}
	return sum, nil
}

// sourceLog is one source partition after the mirror caught up.
type sourceLog struct {
	partition  int32
	records    []kafkaread.Record
	start, end int64 // log start, last stable offset
}

// after is what a group at pos reads next on the source: every committed
// record at or after pos.
func (s *sourceLog) after(pos int64) []kafkaread.Record {
	i := 0
	for i < len(s.records) && s.records[i].Offset < max(pos, s.start) {
		i++
	}
	return s.records[i:]
}

func (s *sourceLog) randomPosition(r *mrand.Rand) int64 {
	switch n := r.IntN(16); {
	case n == 0:
		return -2 // commit nothing
	case n == 1:
		return s.end
	case n == 2:
		return s.end + 1
	case n < 9:
		return s.records[r.IntN(len(s.records))].Offset
	default:
		return s.start + r.Int64N(s.end-s.start+1) // often a marker or an aborted record
	}
}

func headerOffset(r kafkaread.Record) int64 {
	for _, h := range r.Headers {
		if string(h.Key) == topology.HeaderSourceOffset && len(h.Value) == 8 {
			return int64(binary.BigEndian.Uint64(h.Value))
		}
	}
	return -1
}

// exactlyTheRest compares what a consumer read on the target with what the
// group had not yet consumed on the source, by content and provenance.
func exactlyTheRest(got, want []kafkaread.Record) error {
	n := map[int64]int{}
	for _, g := range got {
		n[headerOffset(g)]++
	}
	dups, missing, extra := 0, 0, 0
	for _, c := range n {
		dups += c - 1
	}
	wanted := map[int64]bool{}
	for _, w := range want {
		wanted[w.Offset] = true
		if n[w.Offset] == 0 {
			missing++
		}
	}
	for off := range n {
		if !wanted[off] {
			extra++
		}
	}
	if dups+missing+extra > 0 {
		return fmt.Errorf("%d duplicates, %d missing, %d already consumed (read %d, want %d)", dups, missing, extra, len(got), len(want))
	}
	for i := range want {
		if headerOffset(got[i]) != want[i].Offset || string(got[i].Value) != string(want[i].Value) || string(got[i].Key) != string(want[i].Key) {
			return fmt.Errorf("record %d: source offset %d value %q, want %d %q", i, headerOffset(got[i]), got[i].Value, want[i].Offset, want[i].Value)
		}
	}
	return nil
}

// groupOffsets returns group's committed offsets of topic on the cluster
// behind client.
func groupOffsets(client sarama.Client, group, topic string) (map[int32]int64, error) {
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return nil, err
	}
	resp, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1}})
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for p, b := range resp.Blocks[topic] {
		if b.Offset >= 0 {
			out[p] = b.Offset
		}
	}
	return out, nil
}

// TestOffsetsTranslateRealKafka proves exact offset translation on real Apache Kafka
// with a transactional source: commits and aborts interleaved with plain
// records, so the source offsets are full of holes (markers, aborted
// records). `drctl mirror run` copies it; random positions are committed
// for many groups; for each, a read_committed consumer on west starting at
// the offset `drctl offsets translate` gives reads exactly the records the
// group had not consumed on east (zero duplicates, zero missing). The group
// sync inside `drctl mirror run` commits the same offsets on west within a
// few intervals, and never touches a group that has members on west.
func TestOffsetsTranslateRealKafka(t *testing.T) {
	start := time.Now()
	ot := newOffsetsTopo(t, 500*time.Millisecond, "")
	createTopic(t, "east", ot.topic, 2, nil)
	east := newClient(t, "east", adminConfig(t))
	west := newClient(t, "west", adminConfig(t))
	r := mrand.New(mrand.NewPCG(uint64(time.Now().UnixNano()), 3))

	cfg := adminConfig(t)
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	plain, err := sarama.NewSyncProducer([]string{env.East}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	tcfg := adminConfig(t)
	tcfg.Producer.Partitioner = sarama.NewManualPartitioner
	tcfg.Producer.Idempotent = true
	tcfg.Net.MaxOpenRequests = 1
	tcfg.Producer.Transaction.ID = ot.name + "-producer"
	txn, err := sarama.NewSyncProducer([]string{env.East}, tcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	send := func(p sarama.SyncProducer, part int32, v string) {
		t.Helper()
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: ot.topic, Partition: part, Key: sarama.StringEncoder(fmt.Sprintf("k%d", r.IntN(20))), Value: sarama.StringEncoder(v)}); err != nil {
			t.Fatal(err)
		}
	}
	aborted := 0
	for i := range 80 {
		if err := txn.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		for j := range 1 + r.IntN(6) {
			send(txn, int32(r.IntN(2)), fmt.Sprintf("txn-%d-%d", i, j))
		}
		if r.IntN(3) == 0 {
			err, aborted = txn.AbortTxn(), aborted+1
		} else {
			err = txn.CommitTxn()
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.IntN(3) == 0 {
			send(plain, int32(r.IntN(2)), fmt.Sprintf("plain-%d", i))
		}
	}

	m := startOffsetsMirror(t, ot)
	kfaketest.WaitFor(t, 90*time.Second, "the mirror caught up", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		rep, err := linkstate.MeasureLag(ctx, session(t, ot.topo), ot.link())
		if err != nil {
			return err
		}
		if !rep.Caught() {
			return fmt.Errorf("%d records behind", rep.TotalRecords)
		}
		return nil
	})
	t.Logf("mirrored after %v", time.Since(start).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var logs []*sourceLog
	holes := 0
	for p := range int32(2) {
		ends, err := kafkaread.PartitionEnds(ctx, east, ot.topic, p)
		if err != nil {
			t.Fatal(err)
		}
		sl := &sourceLog{partition: p, start: ends.Start, end: ends.Stable}
		if _, err := kafkaread.ReadCommitted(ctx, east, ot.topic, p, 0, func(rec kafkaread.Record) error {
			sl.records = append(sl.records, rec)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		holes += int(sl.end-sl.start) - len(sl.records)
		logs = append(logs, sl)
	}

	const groups = 40
	want := map[string]map[int32]int64{}
	var names []string
	for g := range groups {
		name := fmt.Sprintf("%s-%02d", ot.prefix, g)
		offs := map[int32]int64{}
		for _, sl := range logs {
			if pos := sl.randomPosition(r); pos >= 0 {
				offs[sl.partition] = pos
			}
		}
		if len(offs) == 0 {
			offs[0] = logs[0].end
		}
		kfaketest.CommitOn(t, east, name, ot.topic, offs)
		want[name], names = offs, append(names, name)
	}
	committedAt := time.Now()

	res := runDrctl(t, ot.env(), "-c", ot.path, "offsets", "translate", "-o", "json")
	if res.code != 0 {
		t.Fatalf("offsets translate: exit %d: %s", res.code, res.stderr)
	}
	var rep groupsync.TranslationReport
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
		t.Fatalf("offsets translate -o json: %v\n%s", err, res.stdout)
	}
	var got []string
	for _, g := range rep.Groups {
		got = append(got, g.Group)
	}
	if !slices.Equal(got, names) {
		t.Fatalf("translated groups %v, want %v", got, names)
	}
	checked, statuses := 0, map[string]int{}
	for _, g := range rep.Groups {
		if g.Error != "" {
			t.Fatalf("%s: %s", g.Group, g.Error)
		}
		if len(g.Partitions) != len(want[g.Group]) {
			t.Errorf("%s: %d partitions translated, %d committed", g.Group, len(g.Partitions), len(want[g.Group]))
		}
		for _, gp := range g.Partitions {
			sl := logs[gp.Partition]
			pos := want[g.Group][gp.Partition]
			statuses[gp.Status.String()]++
			if gp.SourceCommitted != pos || gp.Target < 0 {
				t.Errorf("%s %d: %+v for position %d", g.Group, gp.Partition, gp, pos)
				continue
			}
			if pos <= sl.end && !gp.Exact && !(gp.Status.String() == "before-start" && pos <= sl.records[0].Offset) {
				t.Errorf("%s %d: position %d translated as %v, not exact", g.Group, gp.Partition, pos, gp.Status)
			}
			var read []kafkaread.Record
			if _, err := kafkaread.ReadCommitted(ctx, west, ot.topic, gp.Partition, gp.Target, func(rec kafkaread.Record) error {
				read = append(read, rec)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if err := exactlyTheRest(read, sl.after(pos)); err != nil {
				t.Errorf("%s %d: source position %d -> target %d (%v): %v", g.Group, gp.Partition, pos, gp.Target, gp.Status, err)
			}
			checked++
		}
	}
	t.Logf("%d holes in the source offsets, %d aborted transactions; %d positions checked with a consumer on west: %v", holes, aborted, checked, statuses)
	if checked < 60 || statuses["exact"] < 40 {
		t.Errorf("too few positions checked: %d %v", checked, statuses)
	}

	kfaketest.WaitFor(t, 30*time.Second, "drctl mirror run synced every group to west", func() error {
		for _, g := range rep.Groups {
			now, err := groupOffsets(west, g.Group, ot.topic)
			if err != nil {
				return err
			}
			for _, gp := range g.Partitions {
				if now[gp.Partition] != gp.Target {
					return fmt.Errorf("%s/%d: west at %d, want %d", g.Group, gp.Partition, now[gp.Partition], gp.Target)
				}
			}
		}
		return nil
	})
	t.Logf("group sync: %d groups on west %v after the commits on east (interval %v)", groups, time.Since(committedAt).Round(time.Millisecond), ot.topo.Mirror.GroupSyncInterval)

	// A group with a member on west keeps its offsets there.
	busy := ot.prefix + "-busy"
	kfaketest.CommitOn(t, west, busy, ot.topic, map[int32]int64{0: 3})
	member := holdGroup(t, "west", busy, ot.topic)
	kfaketest.CommitOn(t, east, busy, ot.topic, map[int32]int64{0: logs[0].end})
	kfaketest.WaitFor(t, 30*time.Second, "three sync rounds that skipped the busy group", func() error {
		n, err := m.metric("drctl_group_sync_skipped_active_total", `group="`+busy+`"`)
		if err != nil {
			return err
		}
		if n < 3 {
			return fmt.Errorf("skipped %v times", n)
		}
		return nil
	})
	if now, err := groupOffsets(west, busy, ot.topic); err != nil || now[0] != 3 || len(now) != 1 {
		t.Fatalf("the busy group changed on west: %v (%v)", now, err)
	}
	res = runDrctl(t, ot.env(), "-c", ot.path, "offsets", "sync", "--group", busy, "--yes")
	if res.code != 1 || !strings.Contains(res.stderr, "has 1 members on the standby west") {
		t.Errorf("offsets sync of the busy group: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if now, err := groupOffsets(west, busy, ot.topic); err != nil || now[0] != 3 {
		t.Fatalf("the busy group changed on west: %v (%v)", now, err)
	}
	member.Close()
	kfaketest.WaitFor(t, 60*time.Second, "the busy group synced once its member left", func() error {
		now, err := groupOffsets(west, busy, ot.topic)
		if err != nil {
			return err
		}
		if now[0] == 3 {
			return fmt.Errorf("west still at 3")
		}
		return nil
	})
	t.Logf("whole test %v", time.Since(start).Round(time.Millisecond))
}

// heldGroup is a consumer-group member that holds a group without
// consuming or committing.
type heldGroup struct {
	cg   sarama.ConsumerGroup
	done chan struct{}
}

func (h *heldGroup) Close() { _ = h.cg.Close(); <-h.done }

type holdingHandler struct{ ready chan struct{} }

func (h holdingHandler) Setup(sarama.ConsumerGroupSession) error {
	select {
	case h.ready <- struct{}{}:
	default:
	}
	return nil
}
func (holdingHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (holdingHandler) ConsumeClaim(s sarama.ConsumerGroupSession, _ sarama.ConsumerGroupClaim) error {
	<-s.Context().Done()
	return nil
}

func holdGroup(t *testing.T, cluster, group, topic string) *heldGroup {
	t.Helper()
	cfg := adminConfig(t)
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cg, err := sarama.NewConsumerGroup([]string{bootstrap(t, cluster)}, group, cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &heldGroup{cg: cg, done: make(chan struct{})}
	ready := holdingHandler{ready: make(chan struct{}, 1)}
	go func() {
		defer close(h.done)
		for {
			if err := cg.Consume(context.Background(), []string{topic}, ready); errors.Is(err, sarama.ErrClosedConsumerGroup) {
				return
			}
		}
	}()
	t.Cleanup(h.Close)
	select {
	case <-ready.ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("the member of %s never joined", group)
	}
	return h
}
