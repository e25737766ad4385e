//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

// The mirror tests run `drctl mirror run` as a child process against the two
// real clusters, east (the active, the source) and west (the standby, the
// target). Each test has its own topology name, so the link's internal
// topics, groups and transactional ids on west are its own.

// passwordVar is the variable the topology file reads drctl's password from,
// so that the password never sits in a file.
const passwordVar = "DRCTL_E2E_TEST_PASSWORD"

// mirrorEnv is the environment of every drctl child.
func mirrorEnv() []string { return append(os.Environ(), passwordVar+"="+env.Password) }

// mirrorTopo is one test's topology: the file the drctl children read and
// the same topology loaded in the test, for calls into the mirror package.
type mirrorTopo struct {
	Name string
	Path string
	Topo *topology.Topology
}

// writeMirrorTopology writes a topology named after the test whose mirror
// copies the topics matching include from east to west, exactly once. The
// group selection uses the same pattern, so that the mirror's group sync
// never touches another test's consumer groups.
func writeMirrorTopology(t testing.TB, include string) *mirrorTopo {
	t.Helper()
	name := uniqueName(t, "m")
	if len(name) > 63 {
		name = name[len(name)-63:]
	}
	path := filepath.Join(t.TempDir(), "drctl.yaml")
	yaml := topologyHead(name, passwordVar) + fmt.Sprintf(`mirror:
  topics: {include: [%q]}
  groups: {include: [%q]}
  delivery: exactly-once
`, include, include)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	topo, err := topology.Parse(path, []byte(yaml), func(key string) (string, bool) {
		if key == passwordVar {
			return env.Password, true
		}
		return os.LookupEnv(key)
	})
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	mt := &mirrorTopo{Name: name, Path: path, Topo: topo}
	// Registered first, so it runs after every child is gone: the link's
	// internal topics on west are the test's own.
	t.Cleanup(func() {
		l := mt.link()
		deleteTopics(t, "west", l.ShardsTopic(), l.OffsetsTopic(), l.ProofTopic())
	})
	return mt
}

// link is the east -> west link of the topology.
func (m *mirrorTopo) link() topology.Link { return m.Topo.Link("east", "west") }

// dial connects to a cluster of the topology as drctl and closes the client
// when the test ends.
func (m *mirrorTopo) dial(t testing.TB, cluster string) sarama.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := kafkaconn.Dial(ctx, m.Topo.Clusters[cluster], nil)
	if err != nil {
		t.Fatalf("dial %s: %v", cluster, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// producer returns a sync producer on cluster that writes to the partition
// each message names; txnID "" makes a plain idempotent producer.
func (m *mirrorTopo) producer(t testing.TB, cluster, txnID string) sarama.SyncProducer {
	t.Helper()
	p, err := newSyncProducer(m.Topo.Clusters[cluster], txnID)
	if err != nil {
		t.Fatalf("producer on %s: %v", cluster, err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func newSyncProducer(c *topology.Cluster, txnID string) (sarama.SyncProducer, error) {
	cfg, err := c.SaramaConfig()
	if err != nil {
		return nil, err
	}
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Transaction.ID = txnID
	return sarama.NewSyncProducer(c.Bootstrap, cfg)
}

// mirrorProc is one `drctl mirror run` child. Its log (JSON lines on
// stderr) is kept in memory and in a file in the test's temp dir.
type mirrorProc struct {
	t    testing.TB
	name string
	cmd  *exec.Cmd
	done chan struct{}
	code int // exit code, once done is closed (-1: killed by a signal)

	mu      sync.Mutex
	addr    string
	entries []logEntry
}

// logEntry is one log line of a drctl child, decoded.
type logEntry map[string]any

func (e logEntry) str(key string) string {
	v, _ := e[key].(string)
	return v
}

// startMirror starts `drctl -c topo mirror run` with its HTTP endpoints on a
// free port and returns once they answer. The child is SIGKILLed when the
// test ends, if it still runs.
func startMirror(t testing.TB, mt *mirrorTopo, name string, extra ...string) *mirrorProc {
	t.Helper()
	args := append([]string{"-c", mt.Path, "mirror", "run", "--listen", "127.0.0.1:0", "--log-format", "json"}, extra...)
	cmd := exec.Command(drctlBinary(t), args...)
	cmd.Env = mirrorEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &mirrorProc{t: t, name: name, cmd: cmd, done: make(chan struct{})}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		defer logFile.Close()
		sc := bufio.NewScanner(io.TeeReader(stderr, logFile))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var e logEntry
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				e = logEntry{"msg": sc.Text(), "raw": true}
			}
			p.mu.Lock()
			if e.str("msg") == "serving /metrics, /healthz, /readyz" {
				p.addr = e.str("addr")
			}
			p.entries = append(p.entries, e)
			p.mu.Unlock()
		}
	}()
	go func() {
		<-scanned
		err := cmd.Wait()
		p.code = cmd.ProcessState.ExitCode()
		if err != nil && p.code == 0 {
			p.code = -1
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s log (last lines):\n%s", name, p.tail(40))
		}
	})
	kfaketest.WaitFor(t, 30*time.Second, name+" serves HTTP", func() error {
		select {
		case <-p.done:
			return fmt.Errorf("exited with %d:\n%s", p.code, p.tail(20))
		default:
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.addr == "" {
			return fmt.Errorf("no listen address logged yet")
		}
		return nil
	})
	return p
}

// signal sends sig to the child.
func (p *mirrorProc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("%s: signal %v: %v", p.name, sig, err)
	}
}

// kill SIGKILLs the child (a crash) and waits until it is gone.
func (p *mirrorProc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// waitExit waits for the child to exit and returns its exit code.
func (p *mirrorProc) waitExit(timeout time.Duration) (int, error) {
	select {
	case <-p.done:
		return p.code, nil
	case <-time.After(timeout):
		return 0, fmt.Errorf("%s still runs after %v", p.name, timeout)
	}
}

// exited reports whether the child is gone.
func (p *mirrorProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// get fetches a path of the child's HTTP endpoint.
func (p *mirrorProc) get(path string) (int, string, error) {
	p.mu.Lock()
	addr := p.addr
	p.mu.Unlock()
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// metric returns the sum of the child's samples of a metric whose labels
// contain every given label (`link="east->west"`), and whether any sample
// matched.
func (p *mirrorProc) metric(name string, labels ...string) (float64, bool, error) {
	code, body, err := p.get("/metrics")
	if err != nil {
		return 0, false, err
	}
	if code != http.StatusOK {
		return 0, false, fmt.Errorf("/metrics: HTTP %d", code)
	}
	return sumSamples(body, name, labels...)
}

// sumSamples adds up the samples of metric name in a Prometheus text
// exposition whose label sets contain all of labels.
func sumSamples(exposition, name string, labels ...string) (float64, bool, error) {
	var sum float64
	found := false
	for line := range strings.SplitSeq(exposition, "\n") {
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		var labelSet string
		switch {
		case strings.HasPrefix(rest, "{"):
			end := strings.Index(rest, "}")
			if end < 0 {
				continue
			}
			labelSet, rest = rest[1:end], rest[end+1:]
		case strings.HasPrefix(rest, " "):
		default:
			continue // another metric with this prefix
		}
		match := true
		for _, l := range labels {
			if !strings.Contains(labelSet, l) {
				match = false
			}
		}
		if !match {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		if err != nil {
			return 0, false, fmt.Errorf("%s: %w", line, err)
		}
		sum += v
		found = true
	}
	return sum, found, nil
}

// shardsOwned is the number of shards of the east -> west link the child
// owns, from its /metrics.
func (p *mirrorProc) shardsOwned(link topology.Link) (int, error) {
	v, _, err := p.metric("drctl_mirror_shards_owned", `link="`+link.String()+`"`)
	return int(v), err
}

// findLog returns the first log entry from index from on that matches, and
// the index after it.
func (p *mirrorProc) findLog(from int, match func(logEntry) bool) (logEntry, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := from; i < len(p.entries); i++ {
		if match(p.entries[i]) {
			return p.entries[i], i + 1
		}
	}
	return nil, len(p.entries)
}

// logs returns a copy of every log entry so far.
func (p *mirrorProc) logs() []logEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]logEntry(nil), p.entries...)
}

// tail renders the last n log entries.
func (p *mirrorProc) tail(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, e := range p.entries[max(len(p.entries)-n, 0):] {
		line, _ := json.Marshal(e)
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// readPartition returns the committed records of a partition, in order.
func readPartition(ctx context.Context, client sarama.Client, topic string, partition int32) ([]kafkaread.Record, error) {
	var out []kafkaread.Record
	_, err := kafkaread.ReadCommitted(ctx, client, topic, partition, 0, func(r kafkaread.Record) error {
		out = append(out, r)
		return nil
	})
	return out, err
}

// readPartitions reads partitions 0..n-1 of topic from source and target.
func readPartitions(client sarama.Client, topic string, n int32) ([][]kafkaread.Record, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := make([][]kafkaread.Record, n)
	for p := range n {
		recs, err := readPartition(ctx, client, topic, p)
		if err != nil {
			return nil, err
		}
		out[p] = recs
	}
	return out, nil
}

// provenance returns the values of the mirror's provenance headers of a
// copy, and how many of each it carries.
func provenance(r kafkaread.Record) (origin []byte, offset int64, origins, offsets int) {
	offset = -1
	for _, h := range r.Headers {
		switch string(h.Key) {
		case topology.HeaderOrigin:
			origin = h.Value
			origins++
		case topology.HeaderSourceOffset:
			offsets++
			if len(h.Value) == 8 {
				offset = int64(binary.BigEndian.Uint64(h.Value))
			}
		}
	}
	return origin, offset, origins, offsets
}

// sameBytes compares byte slices and their null-ness: Kafka tells a null
// key, value or header value apart from an empty one.
func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// faithfulCopy checks that dst holds exactly the committed records of src,
// one for one, in order: same key, value, timestamp and headers (in order,
// with their null-ness), plus exactly one origin header naming originID and
// one 8-byte big-endian source-offset header naming the source record.
// prefix allows dst to be a prefix of src (a copy still under way).
func faithfulCopy(src, dst []kafkaread.Record, originID string, prefix bool) error {
	if len(dst) > len(src) || (!prefix && len(dst) != len(src)) {
		return fmt.Errorf("source holds %d committed records, target %d%s", len(src), len(dst), duplicateHint(dst))
	}
	for i := range dst {
		s, d := src[i], dst[i]
		origin, off, origins, offsets := provenance(d)
		switch {
		case origins != 1 || offsets != 1:
			return fmt.Errorf("target record %d (offset %d): %d origin and %d source-offset headers, want 1 and 1", i, d.Offset, origins, offsets)
		case string(origin) != originID:
			return fmt.Errorf("target record %d (offset %d): origin %q, want %q", i, d.Offset, origin, originID)
		case off != s.Offset:
			return fmt.Errorf("target record %d (offset %d): source offset header %d, want %d (the %d-th committed source record)%s",
				i, d.Offset, off, s.Offset, i, duplicateHint(dst))
		case !sameBytes(s.Key, d.Key):
			return fmt.Errorf("source offset %d: key %q (nil %v) copied as %q (nil %v)", s.Offset, s.Key, s.Key == nil, d.Key, d.Key == nil)
		case !sameBytes(s.Value, d.Value):
			return fmt.Errorf("source offset %d: value %q (nil %v) copied as %q (nil %v)", s.Offset, s.Value, s.Value == nil, d.Value, d.Value == nil)
		case !s.Timestamp.Equal(d.Timestamp):
			return fmt.Errorf("source offset %d: timestamp %v copied as %v", s.Offset, s.Timestamp, d.Timestamp)
		}
		var own []*sarama.RecordHeader
		for _, h := range d.Headers {
			if k := string(h.Key); k != topology.HeaderOrigin && k != topology.HeaderSourceOffset {
				own = append(own, h)
			}
		}
		if len(own) != len(s.Headers) {
			return fmt.Errorf("source offset %d: %d headers copied as %d (besides provenance)", s.Offset, len(s.Headers), len(own))
		}
		for j, h := range s.Headers {
			if !bytes.Equal(h.Key, own[j].Key) || !sameBytes(h.Value, own[j].Value) {
				return fmt.Errorf("source offset %d: header %d %q=%q (nil %v) copied as %q=%q (nil %v)",
					s.Offset, j, h.Key, h.Value, h.Value == nil, own[j].Key, own[j].Value, own[j].Value == nil)
			}
		}
	}
	return nil
}

// duplicateHint counts target records that carry a source offset seen
// before in the same partition: copies of one source record.
func duplicateHint(dst []kafkaread.Record) string {
	seen := map[int64]bool{}
	dups := 0
	for _, r := range dst {
		_, off, _, _ := provenance(r)
		if seen[off] {
			dups++
		}
		seen[off] = true
	}
	if dups == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d duplicated source offsets on the target)", dups)
}

// compareTopic reads partitions 0..n-1 of topic on both clusters and checks
// each with faithfulCopy. It returns the number of committed records.
func compareTopic(src, dst sarama.Client, topic string, n int32, originID string, prefix bool) (int, error) {
	if err := dst.RefreshMetadata(topic); err != nil {
		return 0, fmt.Errorf("target %s: %w", topic, err)
	}
	s, err := readPartitions(src, topic, n)
	if err != nil {
		return 0, fmt.Errorf("source: %w", err)
	}
	d, err := readPartitions(dst, topic, n)
	if err != nil {
		return 0, fmt.Errorf("target: %w", err)
	}
	total := 0
	for p := range s {
		if err := faithfulCopy(s[p], d[p], originID, prefix); err != nil {
			return 0, fmt.Errorf("%s/%d: %w", topic, p, err)
		}
		total += len(s[p])
	}
	return total, nil
}

// partitionEnds returns the log ends of partitions 0..n-1 of topic.
func partitionEnds(client sarama.Client, topic string, n int32) ([]kafkaread.Ends, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := make([]kafkaread.Ends, n)
	for p := range n {
		e, err := kafkaread.PartitionEnds(ctx, client, topic, p)
		if err != nil {
			return nil, err
		}
		out[p] = e
	}
	return out, nil
}

// waitCaughtUp waits until the link's committed progress reaches the
// source's last stable offset on every selected partition.
func waitCaughtUp(t testing.TB, mt *mirrorTopo, timeout time.Duration) *linkstate.LagReport {
	t.Helper()
	var rep *linkstate.LagReport
	kfaketest.WaitFor(t, timeout, "the mirror caught up (zero lag)", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		r, err := linkstate.MeasureLag(ctx, session(t, mt.Topo), mt.link())
		if err != nil {
			return err
		}
		if !r.Caught() {
			return fmt.Errorf("%d records behind", r.TotalRecords)
		}
		rep = r
		return nil
	})
	return rep
}

// stream writes records to every partition of a topic at a steady pace:
// batches of batchSize records, two of three batches plain, the third in
// a transaction of which one in four is aborted. It runs until ctx ends,
// and past min records until more() says stop.
type stream struct {
	Topic      string
	Partitions int32
	Min        int           // at least this many records
	Max        int           // never more than this many
	Pace       time.Duration // pause between batches
	BatchSize  int
	More       func() bool // keep going past Min while it returns true (nil: stop at Min)

	Produced  atomic.Int64 // records written, committed or aborted
	Aborted   atomic.Int64 // records written in aborted transactions
	Committed atomic.Int64 // transactions committed
	AbortedTx atomic.Int64 // transactions aborted
}

func (s *stream) run(ctx context.Context, c *topology.Cluster, txnID string) error {
	plain, err := newSyncProducer(c, "")
	if err != nil {
		return err
	}
	defer plain.Close()
	txn, err := newSyncProducer(c, txnID)
	if err != nil {
		return err
	}
	defer txn.Close()
	pad := strings.Repeat("x", 64)
	seq := 0
	tick := time.NewTicker(s.Pace)
	defer tick.Stop()
	for b := 0; ; b++ {
		if seq >= s.Max || (seq >= s.Min && (s.More == nil || !s.More())) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		msgs := make([]*sarama.ProducerMessage, 0, s.BatchSize)
		for i := 0; i < s.BatchSize; i++ {
			msgs = append(msgs, &sarama.ProducerMessage{
				Topic: s.Topic, Partition: int32(seq) % s.Partitions,
				Key:     sarama.StringEncoder("k" + strconv.Itoa(seq%101)),
				Value:   sarama.StringEncoder(fmt.Sprintf("r-%08d-%s", seq, pad)),
				Headers: []sarama.RecordHeader{{Key: []byte("seq"), Value: []byte(strconv.Itoa(seq))}},
			})
			seq++
		}
		if b%3 != 2 {
			if err := plain.SendMessages(msgs); err != nil {
				return fmt.Errorf("plain batch %d: %w", b, err)
			}
			s.Produced.Add(int64(len(msgs)))
			continue
		}
		if err := txn.BeginTxn(); err != nil {
			return fmt.Errorf("begin transaction %d: %w", b, err)
		}
		if err := txn.SendMessages(msgs); err != nil {
			return fmt.Errorf("transactional batch %d: %w", b, err)
		}
		s.Produced.Add(int64(len(msgs)))
		if (b/3)%4 == 3 {
			if err := txn.AbortTxn(); err != nil {
				return fmt.Errorf("abort transaction %d: %w", b, err)
			}
			s.Aborted.Add(int64(len(msgs)))
			s.AbortedTx.Add(1)
			continue
		}
		if err := txn.CommitTxn(); err != nil {
			return fmt.Errorf("commit transaction %d: %w", b, err)
		}
		s.Committed.Add(1)
	}
}

// start runs the stream in the background; the returned func waits for it
// and returns its error.
func (s *stream) start(ctx context.Context, c *topology.Cluster, txnID string) func() error {
	done := make(chan error, 1)
	go func() { done <- s.run(ctx, c, txnID) }()
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() { err = <-done })
		return err
	}
}

// topicPattern is a selection that matches exactly the topics that start
// with prefix.
func topicPattern(prefix string) string { return regexp.QuoteMeta(prefix) + ".*" }
