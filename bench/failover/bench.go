package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

// passwordVar carries drctl's password to the topology file of the
// children, so that it is never written to disk.
const passwordVar = "DRCTL_BENCH_PASSWORD"

// bench is one run: its topology, the clusters, the work dir.
type bench struct {
	o    options
	name string
	dir  string
	path string
	topo *topology.Topology
	east sarama.Client
	west sarama.Client
}

func newBench(o options, name, dir string) (*bench, error) {
	sel := regexp.QuoteMeta(name) + `\..*`
	yaml := fmt.Sprintf(`name: %s
clusters:
  east:
    bootstrap: [%s]
    timeout: 10s
    sasl: {mechanism: PLAIN, username: %s, password: "${%s}"}
  west:
    bootstrap: [%s]
    timeout: 10s
    sasl: {mechanism: PLAIN, username: %s, password: "${%s}"}
active: east
standby: west
mirror:
  topics: {include: [%q]}
  groups: {include: [%q]}
  delivery: exactly-once
  group_sync_interval: %s
failover: {fence: acl, producer_principals: ["User:app"], drain_timeout: 10m, quiet_period: %s}
`, name, o.east, o.user, passwordVar, o.west, o.user, passwordVar, sel, sel, o.groupSync, o.quietPeriod)
	path := filepath.Join(dir, "drctl.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		return nil, err
	}
	topo, err := topology.Parse(path, []byte(yaml), func(k string) (string, bool) {
		if k == passwordVar {
			return o.password, true
		}
		return os.LookupEnv(k)
	})
	if err != nil {
		return nil, err
	}
	b := &bench{o: o, name: name, dir: dir, path: path, topo: topo}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if b.east, err = kafkaconn.Dial(ctx, topo.Clusters["east"], nil); err != nil {
		return nil, fmt.Errorf("%w (start the clusters: e2e/kafka.sh start all)", err)
	}
	if b.west, err = kafkaconn.Dial(ctx, topo.Clusters["west"], nil); err != nil {
		b.east.Close()
		return nil, fmt.Errorf("%w (start the clusters: e2e/kafka.sh start all)", err)
	}
	return b, nil
}

func (b *bench) close() {
	_ = b.east.Close()
	_ = b.west.Close()
}

func (b *bench) topic(i int) string { return fmt.Sprintf("%s.t%03d", b.name, i) }
func (b *bench) group(i int) string { return fmt.Sprintf("%s.g%02d", b.name, i) }

// env is the environment of the drctl children.
func (b *bench) env() []string {
	return append(os.Environ(), passwordVar+"="+b.o.password, "XDG_STATE_HOME="+filepath.Join(b.dir, "state"))
}

func buildDrctl(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "drctl")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/drctl").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/drctl (run from the repository root): %v\n%s", err, out)
	}
	return bin, nil
}

// createTopics creates the topics on east and waits for their leaders.
// createTopics creates the topics names on east, parallel CreateTopics
// requests at a time, and waits until every partition has a leader.
func (b *bench) createTopics(ctx context.Context, names []string, parallel int) error {
	admin, err := sarama.NewClusterAdminFromClient(b.east)
	if err != nil {
		return err
	}
	sem := make(chan struct{}, parallel)
	errs := make(chan error, len(names))
	for _, name := range names {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			if err := admin.CreateTopic(name, &sarama.TopicDetail{NumPartitions: int32(b.o.partitions), ReplicationFactor: 1}, false); err != nil {
				errs <- fmt.Errorf("create %s: %w", name, err)
			}
		}()
	}
	for range parallel {
		sem <- struct{}{}
	}
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for _, name := range names {
		for {
			err := b.east.RefreshMetadata(name)
			var parts []int32
			if err == nil {
				parts, err = b.east.WritablePartitions(name)
			}
			if err == nil && len(parts) == b.o.partitions {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("topic %s has no leaders after 2m: %v", name, err)
			}
			if err := sleep(ctx, 100*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

// topics names the benchmark's topics; limitTopics the fresh ones the copy
// limit writes (see copyLimit).
func (b *bench) topics() []string {
	out := make([]string, b.o.topics)
	for i := range out {
		out[i] = b.topic(i)
	}
	return out
}

func (b *bench) limitTopics() []string {
	out := make([]string, b.o.topics)
	for i := range out {
		out[i] = fmt.Sprintf("%s.limit.t%03d", b.name, i)
	}
	return out
}

// copyLimit is what the reseed's copy is compared with: the same topics
// created afresh on east (16 CreateTopics requests at a time, as the
// mirror's topic sync sends them) and the same records written into them by
// a plain producer, timed from the first request to the last
// acknowledgement. The reseed does that and must read west besides, so
// this is a ceiling for wait-reseeded, measured on the same brokers in the
// same run.
func (b *bench) copyLimit(ctx context.Context) (create, write time.Duration, err error) {
	names := b.limitTopics()
	t0 := time.Now()
	if err := b.createTopics(ctx, names, 16); err != nil {
		return 0, 0, err
	}
	create = time.Since(t0)
	t1 := time.Now()
	if _, err := b.produce(ctx, names); err != nil {
		return 0, 0, err
	}
	return create, time.Since(t1), nil
}

// produce writes the records of every partition of topics and returns their
// number.
func (b *bench) produce(ctx context.Context, topics []string) (int, error) {
	cfg, err := b.topo.Clusters["east"].SaramaConfig()
	if err != nil {
		return 0, err
	}
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Flush.Bytes = 512 << 10
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	p, err := sarama.NewAsyncProducer(b.topo.Clusters["east"].Bootstrap, cfg)
	if err != nil {
		return 0, err
	}
	total := b.o.topics * b.o.partitions * b.o.records
	value := bytes.Repeat([]byte("v"), b.o.valueSize)
	errc := make(chan error, 1)
	go func() {
		var first error
		for range total {
			select {
			case <-p.Successes():
			case perr := <-p.Errors():
				if first == nil {
					first = perr
				}
			}
		}
		errc <- first
	}()
	for r := 0; r < b.o.records; r++ {
		for _, topic := range topics {
			for part := 0; part < b.o.partitions; part++ {
				m := &sarama.ProducerMessage{Topic: topic, Partition: int32(part),
					Key: sarama.StringEncoder(fmt.Sprintf("k%d", r)), Value: sarama.ByteEncoder(value)}
				select {
				case p.Input() <- m:
				case <-ctx.Done():
					p.AsyncClose()
					return 0, ctx.Err()
				}
			}
		}
	}
	err = <-errc
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("produce: %w", err)
	}
	return total, nil
}

// commitGroups commits, as an admin tool does, positions for every group:
// group g on topics 2g and 2g+1 (modulo the topic count), every partition,
// at a point of its own in the data. It returns the positions committed.
func (b *bench) commitGroups(ctx context.Context) (int, error) {
	n := 0
	for g := 0; g < b.o.groups; g++ {
		coord, err := b.east.Coordinator(b.group(g))
		if err != nil {
			return n, fmt.Errorf("coordinator of %s: %w", b.group(g), err)
		}
		req := &sarama.OffsetCommitRequest{Version: 7, ConsumerGroup: b.group(g), ConsumerGroupGeneration: -1}
		at := int64(b.o.records) * int64(g+1) / int64(b.o.groups+1)
		for _, t := range []int{(2 * g) % b.o.topics, (2*g + 1) % b.o.topics} {
			for p := 0; p < b.o.partitions; p++ {
				req.AddBlockWithLeaderEpoch(b.topic(t), int32(p), at, -1, 0, "")
				n++
			}
		}
		resp, err := coord.CommitOffset(req)
		if err != nil {
			return n, fmt.Errorf("commit %s: %w", b.group(g), err)
		}
		for topic, parts := range resp.Errors {
			for p, kerr := range parts {
				if kerr != sarama.ErrNoError {
					return n, fmt.Errorf("commit %s %s/%d: %w", b.group(g), topic, p, kerr)
				}
			}
		}
	}
	return n, ctx.Err()
}

// mirrorProc is the `drctl mirror run` child.
type mirrorProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (b *bench) startMirror(ctx context.Context) (*mirrorProc, error) {
	log, err := os.Create(filepath.Join(b.dir, "mirror.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(b.o.drctl, "-c", b.path, "mirror", "run", "--listen", "127.0.0.1:0",
		"--session-timeout", "6s", "--shards", fmt.Sprint(b.o.shards), "--log-format", "json")
	cmd.Env = b.env()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	m := &mirrorProc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); log.Close(); close(m.done) }()
	return m, ctx.Err()
}

// stop stops the mirror gracefully (SIGTERM), or kills it after 30 s.
func (m *mirrorProc) stop() {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
}

// waitCaughtUp waits until the mirror east -> west has copied every
// partition up to its end.
func (b *bench) waitCaughtUp(ctx context.Context, timeout time.Duration) error {
	link := b.topo.Link("east", "west")
	deadline := time.Now().Add(timeout)
	last := time.Now()
	clusters := kafkaconn.Open(ctx, b.topo, link.Source, link.Target)
	defer clusters.Close()
	for {
		mctx, cancel := context.WithTimeout(ctx, time.Minute)
		clusters.Redial(mctx, link.Source, link.Target)
		rep, err := linkstate.MeasureLag(mctx, clusters, link)
		cancel()
		if err == nil && len(rep.Partitions) == b.o.topics*b.o.partitions && rep.Caught() {
			never := 0
			for _, p := range rep.Partitions {
				if p.Mirrored < 0 {
					never++
				}
			}
			if never == 0 {
				return nil
			}
		}
		if time.Since(last) > 10*time.Second {
			last = time.Now()
			if err != nil {
				logf("waiting for the mirror: %v", err)
			} else {
				logf("waiting for the mirror: %d partitions seen, %d records behind", len(rep.Partitions), rep.TotalRecords)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the mirror did not catch up within %v (log: %s)", timeout, filepath.Join(b.dir, "mirror.log"))
		}
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
}

// waitGroupSync gives the mirror's group sync one interval and a bit, as
// a failover in production would find it (unless the interval is long).
func (b *bench) waitGroupSync(ctx context.Context) error {
	if b.o.groupSync > time.Minute {
		return nil
	}
	return sleep(ctx, b.o.groupSync+2*time.Second)
}

// result is the failover run as its event stream tells it.
type result struct {
	code   int
	wall   time.Duration
	start  time.Time
	events []plans.Event
	raw    []byte
	stderr string
	// limitCreate and limitWrite are the copy limit's two parts (zero:
	// not measured; see copyLimit).
	limitCreate, limitWrite time.Duration
}

func (b *bench) failover(ctx context.Context, timeout time.Duration) (*result, error) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(rctx, b.o.drctl, "-c", b.path, "-o", "json", "failover", "--to", "west", "--yes")
	cmd.Env = b.env()
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	r := &result{start: time.Now()}
	logf("drctl failover --to west --yes")
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var raw bytes.Buffer
	sc := bufio.NewScanner(io.TeeReader(out, &raw))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var lastProgress time.Time
	for sc.Scan() {
		var e plans.Event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Type == "" {
			continue
		}
		switch e.Type {
		case plans.EventStepProgress:
			if time.Since(lastProgress) >= 5*time.Second {
				lastProgress = time.Now()
				logf("  %-20s ... %s", e.Name, e.Message)
			}
		case plans.EventStepDone:
			logf("  %-20s %8.3fs  %s", e.Name, float64(e.ElapsedMS)/1000, e.Summary)
		case plans.EventStepFailed:
			logf("  %-20s FAILED: %s", e.Name, e.Error)
		}
		if e.Type != plans.EventStepProgress {
			r.events = append(r.events, e)
		}
	}
	err = cmd.Wait()
	r.wall, r.raw, r.stderr = time.Since(r.start), raw.Bytes(), stderr.String()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		return nil, fmt.Errorf("drctl failover: %w", err)
	}
	return r, nil
}

// cleanup deletes, on both clusters, what the run created: drctl's fence
// (through drctl unfence), then every topic and group named after the
// topology or its link prefix (topology.InternalPrefix + ".<name>.").
func (b *bench) cleanup() {
	for _, c := range []string{"east", "west"} {
		cmd := exec.Command(b.o.drctl, "-c", b.path, "unfence", c)
		cmd.Env = b.env()
		if out, err := cmd.CombinedOutput(); err != nil {
			logf("cleanup: drctl unfence %s: %v: %s", c, err, out)
		}
	}
	ours := func(s string) bool {
		return strings.HasPrefix(s, b.name+".") || strings.HasPrefix(s, topology.InternalPrefix+"."+b.name+".")
	}
	for name, cl := range map[string]sarama.Client{"east": b.east, "west": b.west} {
		admin, err := sarama.NewClusterAdminFromClient(cl)
		if err != nil {
			logf("cleanup %s: %v", name, err)
			continue
		}
		if groups, err := admin.ListConsumerGroups(); err == nil {
			for g := range groups {
				if ours(g) {
					_ = admin.DeleteConsumerGroup(g)
				}
			}
		}
		topics, err := admin.ListTopics()
		if err != nil {
			logf("cleanup %s: %v", name, err)
			continue
		}
		var del []string
		for t := range topics {
			if ours(t) {
				del = append(del, t)
			}
		}
		sort.Strings(del)
		for _, t := range del {
			if err := admin.DeleteTopic(t); err != nil && !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
				logf("cleanup %s: delete %s: %v", name, t, err)
			}
		}
		logf("cleanup: %d topics deleted on %s", len(del), name)
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
