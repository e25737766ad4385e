//go:build e2e

package e2e

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/mirror/groupsync"
)

// TestOffsetsVersusMirrorMaker2RealKafka measures, on real Kafka and on the
// same data and the same committed positions, how many records a consumer
// group re-reads (or skips) after moving to the standby at the offset that
// MirrorMaker 2's group offset sync committed there, and at the offset
// drctl's committed. Two source topics: plain records, and transactions
// with a third aborted. MirrorMaker 2 runs from the Kafka jars with
// checkpoints and group offset sync on, every second; drctl runs after it,
// on the same topics. The figures go to the log (docs/offsets.md quotes
// them).
//
// It takes a minute or two (a JVM, two mirrors one after the other), so it
// runs only with DRCTL_E2E_MM2=1.
func TestOffsetsVersusMirrorMaker2RealKafka(t *testing.T) {
	if os.Getenv("DRCTL_E2E_MM2") == "" {
		t.Skip("set DRCTL_E2E_MM2=1 to measure MirrorMaker 2's re-reads against drctl's (takes a minute or two)")
	}
	ot := newOffsetsTopo(t, time.Second, "-(plain|txn)")
	topics := []string{ot.name + "-plain", ot.name + "-txn"}
	for _, topic := range topics {
		createTopic(t, "east", topic, 2, nil)
	}
	east := newClient(t, "east", adminConfig(t))
	west := newClient(t, "west", adminConfig(t))
	t.Cleanup(func() {
		deleteWest(t, append(topics, ot.name+"-mm2-offsets", ot.name+"-mm2-status", ot.name+"-mm2-configs")...)
	})

	// MirrorMaker 2 first: it runs while the data is written, as it would
	// in production.
	mm2 := startMM2(t, ot.name, ot.name+"-(plain|txn)", ot.prefix+"-.*")
	kfaketest.WaitFor(t, 120*time.Second, "MirrorMaker 2 created the target topics", func() error {
		for _, topic := range topics {
			if err := west.RefreshMetadata(topic); err != nil {
				return err
			}
		}
		return nil
	})
	r := mrand.New(mrand.NewPCG(uint64(time.Now().UnixNano()), 5))
	produceScenario(t, r, ot.name, topics[0], topics[1])
	src := map[string][][]kafkaread.Record{}
	for _, topic := range topics {
		for p := range int32(2) {
			src[topic] = append(src[topic], kfaketest.Records(t, east, topic, p, 0))
		}
	}
	kfaketest.WaitFor(t, 180*time.Second, "MirrorMaker 2 copied every committed record", func() error {
		for _, topic := range topics {
			for p := range int32(2) {
				dst, err := readPartitionOnce(west, topic, p)
				if err != nil {
					return err
				}
				if len(dst) != len(src[topic][p]) {
					return fmt.Errorf("%s/%d: %d of %d records on west", topic, p, len(dst), len(src[topic][p]))
				}
			}
		}
		return nil
	})
	// Positions spread over the whole log: the lag of a group is uniform
	// between none and everything.
	const groups = 30
	positions := map[string]map[string][]int64{} // group -> topic -> per partition
	for g := range groups {
		name := fmt.Sprintf("%s-%02d", ot.prefix, g)
		positions[name] = map[string][]int64{}
		for _, topic := range topics {
			offs := map[int32]int64{}
			for p := range int32(2) {
				recs := src[topic][p]
				pos := recs[r.IntN(len(recs))].Offset
				if r.IntN(8) == 0 {
					pos = recs[len(recs)-1].Offset + 1 // caught up
				}
				offs[p] = pos
				positions[name][topic] = append(positions[name][topic], pos)
			}
			kfaketest.CommitOn(t, east, name, topic, offs)
		}
	}
	committed := time.Now()
	// MirrorMaker 2 syncs a group's offsets once per interval, and only
	// forward; wait until every group is on west and nothing moved for
	// several intervals.
	var last string
	stableSince := time.Now()
	kfaketest.WaitFor(t, 180*time.Second, "MirrorMaker 2's group offsets settled on west", func() error {
		snap, missing := westPositions(west, positions, topics)
		if snap != last {
			last, stableSince = snap, time.Now()
		}
		if missing > 0 && time.Since(committed) < 60*time.Second {
			return fmt.Errorf("%d partitions not yet synced", missing)
		}
		if time.Since(stableSince) < 8*time.Second {
			return fmt.Errorf("offsets moved %v ago", time.Since(stableSince).Round(time.Second))
		}
		return nil
	})
	mm2Stats := measure(t, west, src, positions, topics)
	mm2.stop(t)
	t.Logf("MirrorMaker 2 log: %s", mm2.log)

	// drctl on the same data and positions: the MirrorMaker 2 copy and its
	// group offsets go first.
	deleteWest(t, topics...)
	deleteGroupsOn(t, "west", ot.prefix)
	kfaketest.WaitFor(t, 60*time.Second, "the copies deleted from west", func() error {
		for _, topic := range topics {
			info, err := kafkaread.Topic(context.Background(), west, topic)
			if err != nil {
				return err
			}
			if info.Exists {
				return fmt.Errorf("%s still exists", topic)
			}
		}
		return nil
	})
	startOffsetsMirror(t, ot)
	kfaketest.WaitFor(t, 120*time.Second, "drctl synced every group", func() error {
		if _, missing := westPositions(west, positions, topics); missing > 0 {
			return fmt.Errorf("%d partitions not yet synced", missing)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		rep, err := linkstate.MeasureLag(ctx, session(t, ot.topo), ot.link())
		if err != nil {
			return err
		}
		if !rep.Caught() {
			return fmt.Errorf("%d records behind", rep.TotalRecords)
		}
		dst, err := kafkaconn.Dial(ctx, ot.topo.Clusters[ot.link().Target], nil)
		if err != nil {
			return err
		}
		defer dst.Close()
		st, err := groupsync.StatusFrom(ctx, dst, ot.topo, ot.link())
		if err != nil {
			return err
		}
		for g := range positions {
			if s, ok := st[g]; !ok || !s.InSync {
				return fmt.Errorf("%s not in sync: %+v", g, s)
			}
		}
		return nil
	})
	drctlStats := measure(t, west, src, positions, topics)
	for _, topic := range topics {
		m, d := mm2Stats[topic], drctlStats[topic]
		t.Logf("%s: %d positions, mean lag %.0f records", kind(topic), m.positions, m.meanLag())
		t.Logf("  MirrorMaker 2: %s", m)
		t.Logf("  drctl:         %s", d)
		if d.reread != 0 || d.skipped != 0 || d.untranslated != 0 || d.exact != d.positions {
			t.Errorf("drctl on %s: %s; want every position exact", topic, d)
		}
	}
}

func kind(topic string) string {
	if strings.HasSuffix(topic, "-txn") {
		return "transactional source (1/3 of the transactions aborted)"
	}
	return "plain records"
}

// produceScenario writes 1,500 plain records to each partition of plain,
// and 400 transactions of 1 to 6 records, a third of them aborted, to txn.
func produceScenario(t *testing.T, r *mrand.Rand, name, plain, txn string) {
	t.Helper()
	cfg := adminConfig(t)
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	p, err := sarama.NewAsyncProducer([]string{env.East}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range p.Successes() {
		}
	}()
	for i := range 3000 {
		p.Input() <- &sarama.ProducerMessage{Topic: plain, Partition: int32(i % 2), Value: sarama.StringEncoder(fmt.Sprintf("plain-%d", i))}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	tcfg := adminConfig(t)
	tcfg.Producer.Partitioner = sarama.NewManualPartitioner
	tcfg.Producer.Idempotent = true
	tcfg.Net.MaxOpenRequests = 1
	tcfg.Producer.Transaction.ID = name + "-scenario"
	tp, err := sarama.NewSyncProducer([]string{env.East}, tcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	for i := range 400 {
		if err := tp.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		var msgs []*sarama.ProducerMessage
		for j := range 1 + r.IntN(6) {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: txn, Partition: int32(r.IntN(2)), Value: sarama.StringEncoder(fmt.Sprintf("txn-%d-%d", i, j))})
		}
		if err := tp.SendMessages(msgs); err != nil {
			t.Fatal(err)
		}
		if r.IntN(3) == 0 {
			err = tp.AbortTxn()
		} else {
			err = tp.CommitTxn()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func readPartitionOnce(c sarama.Client, topic string, p int32) ([]kafkaread.Record, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []kafkaread.Record
	_, err := kafkaread.ReadCommitted(ctx, c, topic, p, 0, func(r kafkaread.Record) error {
		out = append(out, r)
		return nil
	})
	return out, err
}

// westPositions returns the groups' committed offsets on west as a string
// (to see whether they move) and how many partitions have none.
func westPositions(west sarama.Client, positions map[string]map[string][]int64, topics []string) (string, int) {
	var b strings.Builder
	missing := 0
	names := make([]string, 0, len(positions))
	for g := range positions {
		names = append(names, g)
	}
	sort.Strings(names)
	for _, g := range names {
		for _, topic := range topics {
			now, err := groupOffsets(west, g, topic)
			if err != nil {
				return "error " + err.Error(), len(positions) * 4
			}
			for p := range int32(2) {
				off, ok := now[p]
				if !ok {
					missing++
				}
				fmt.Fprintf(&b, "%s/%s/%d=%d ", g, topic, p, off)
			}
		}
	}
	return b.String(), missing
}

// translationStats sums, over positions, how a group fares on west at the
// offset committed there.
type translationStats struct {
	positions, exact, untranslated int
	reread, skipped, lag           int64
	maxReread                      int64
	rereadRatios                   []float64 // re-read / lag, per position with lag > 0
}

func (s translationStats) meanLag() float64 { return float64(s.lag) / float64(max(s.positions, 1)) }

func (s translationStats) String() string {
	ratios := slices.Clone(s.rereadRatios)
	slices.Sort(ratios)
	mean, p50, worst := 0.0, 0.0, 0.0
	if n := len(ratios); n > 0 {
		for _, r := range ratios {
			mean += r
		}
		mean /= float64(n)
		p50, worst = ratios[n/2], ratios[n-1]
	}
	return fmt.Sprintf("%d/%d exact, %d not translated, %d re-read records (mean %.1f, max %d per position; re-read/lag mean %.2f, median %.2f, max %.2f), %d skipped",
		s.exact, s.positions, s.untranslated, s.reread, float64(s.reread)/float64(max(s.positions-s.untranslated, 1)), s.maxReread, mean, p50, worst, s.skipped)
}

// measure compares, per group and partition, where a consumer resumes on
// west (the group's committed offset there) with where it stopped on east.
// Both mirrors copy the committed records one for one and in order, so the
// i-th committed record of a source partition is the i-th of its copy.
func measure(t *testing.T, west sarama.Client, src map[string][][]kafkaread.Record, positions map[string]map[string][]int64, topics []string) map[string]translationStats {
	t.Helper()
	out := map[string]translationStats{}
	for _, topic := range topics {
		var st translationStats
		dst := make([][]kafkaread.Record, 2)
		for p := range int32(2) {
			dst[p] = kfaketest.Records(t, west, topic, p, 0)
			if len(dst[p]) != len(src[topic][p]) {
				t.Fatalf("%s/%d: %d records on west, %d on east", topic, p, len(dst[p]), len(src[topic][p]))
			}
			for i := range dst[p] {
				if string(dst[p][i].Value) != string(src[topic][p][i].Value) {
					t.Fatalf("%s/%d: record %d differs: %q vs %q", topic, p, i, dst[p][i].Value, src[topic][p][i].Value)
				}
			}
		}
		for g, byTopic := range positions {
			now, err := groupOffsets(west, g, topic)
			if err != nil {
				t.Fatal(err)
			}
			for p := range int32(2) {
				st.positions++
				pos := byTopic[topic][p]
				s := src[topic][p]
				next := sort.Search(len(s), func(i int) bool { return s[i].Offset >= pos }) // first record the group has not read
				lag := int64(len(s) - next)
				st.lag += lag
				off, ok := now[p]
				if !ok {
					st.untranslated++
					continue
				}
				d := dst[p]
				resume := sort.Search(len(d), func(i int) bool { return d[i].Offset >= off }) // first record it reads on west
				switch diff := int64(next - resume); {
				case diff == 0:
					st.exact++
				case diff > 0:
					st.reread += diff
					st.maxReread = max(st.maxReread, diff)
				default:
					st.skipped -= diff
				}
				if lag > 0 {
					st.rereadRatios = append(st.rereadRatios, float64(max(next-resume, 0))/float64(lag))
				}
			}
		}
		out[topic] = st
	}
	return out
}

func deleteWest(t *testing.T, topics ...string) {
	c, err := sarama.NewClient([]string{bootstrap(t, "west")}, adminConfig(t))
	if err != nil {
		return
	}
	defer c.Close()
	admin, err := sarama.NewClusterAdminFromClient(c)
	if err != nil {
		return
	}
	for _, topic := range topics {
		_ = admin.DeleteTopic(topic)
	}
}

func deleteGroupsOn(t *testing.T, cluster, prefix string) {
	t.Helper()
	c, err := sarama.NewClient([]string{bootstrap(t, cluster)}, adminConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	admin, err := sarama.NewClusterAdminFromClient(c)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := admin.ListConsumerGroups()
	if err != nil {
		t.Fatal(err)
	}
	for g := range groups {
		if strings.HasPrefix(g, prefix) {
			if err := admin.DeleteConsumerGroup(g); err != nil {
				t.Fatalf("delete group %s on %s: %v", g, cluster, err)
			}
		}
	}
}

// mm2Proc is a dedicated MirrorMaker 2 (east -> west) run from the Kafka
// jars that e2e/kafka.sh fetched.
type mm2Proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// startMM2 runs MirrorMaker 2 for the topics matching topicRE and the
// groups matching groupRE: identity topic names, read_committed source
// reads, checkpoints and group offset sync every second, its Connect state
// in topics named after name.
func startMM2(t *testing.T, name, topicRE, groupRE string) *mm2Proc {
	t.Helper()
	dir := t.TempDir()
	jaas := fmt.Sprintf(`org.apache.kafka.common.security.plain.PlainLoginModule required username="%s" password="%s";`, env.User, env.Password)
	props := fmt.Sprintf(`clusters = east, west
east.bootstrap.servers = %s
west.bootstrap.servers = %s
east.security.protocol = SASL_PLAINTEXT
east.sasl.mechanism = PLAIN
east.sasl.jaas.config = %s
west.security.protocol = SASL_PLAINTEXT
west.sasl.mechanism = PLAIN
west.sasl.jaas.config = %s
east->west.enabled = true
west->east.enabled = false
east->west.topics = %s
east->west.groups = %s
replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy
tasks.max = 2
east.consumer.isolation.level = read_committed
emit.checkpoints.enabled = true
emit.checkpoints.interval.seconds = 1
sync.group.offsets.enabled = true
sync.group.offsets.interval.seconds = 1
refresh.groups.interval.seconds = 1
refresh.topics.interval.seconds = 1
emit.heartbeats.enabled = false
sync.topic.acls.enabled = false
replication.factor = 1
offset-syncs.topic.replication.factor = 1
checkpoints.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
offset.storage.replication.factor = 1
status.storage.replication.factor = 1
config.storage.replication.factor = 1
west.group.id = %s-mm2
offset.storage.topic = %s-mm2-offsets
status.storage.topic = %s-mm2-status
config.storage.topic = %s-mm2-configs
`, env.East, env.West, jaas, jaas, topicRE, groupRE, name, name, name, name)
	propsFile := filepath.Join(dir, "mm2.properties")
	if err := os.WriteFile(propsFile, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	m := &mm2Proc{done: make(chan struct{}), log: filepath.Join(dir, "mm2.log")}
	log4j := filepath.Join(dir, "log4j2.properties")
	if err := os.WriteFile(log4j, []byte(fmt.Sprintf(`status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = %s
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%%d{ISO8601}] %%p %%m (%%c)%%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
`, m.log)), 0o600); err != nil {
		t.Fatal(err)
	}
	out := strings.Split(strings.TrimSpace(kafkaScript(t, 30*time.Second, "classpath")), "\n")
	cp := out[len(out)-1]
	java := "java"
	if j := os.Getenv("DRCTL_E2E_JAVA"); j != "" {
		java = j
	}
	m.cmd = exec.Command(java, "-Xms256m", "-Xmx1g", "-Dlog4j2.configurationFile="+log4j, "-cp", cp,
		"org.apache.kafka.connect.mirror.MirrorMaker", propsFile, "--clusters", "west")
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("start MirrorMaker 2: %v", err)
	}
	go func() { _ = m.cmd.Wait(); close(m.done) }()
	t.Cleanup(func() { m.stop(t) })
	return m
}

func (m *mm2Proc) stop(t *testing.T) {
	select {
	case <-m.done:
		return
	default:
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
}
