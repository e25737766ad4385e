package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"
)

type options struct {
	partitions int
	records    int
	size       int
	batchBytes int
	samples    []int
	parallel   int
	drctl      string
	timeout    time.Duration
}

func main() {
	var o options
	var samples string
	flag.IntVar(&o.partitions, "partitions", 4, "partitions of the mirrored topic")
	flag.IntVar(&o.records, "records", 60000, "records in all, spread evenly over the partitions")
	flag.IntVar(&o.size, "size", 1024, "bytes per record value (random, incompressible)")
	flag.IntVar(&o.batchBytes, "batch-bytes", 16384, "the backlog producer's batch size in bytes (Kafka's producer default batch.size is 16384)")
	flag.StringVar(&samples, "sample", "10,100,1000", "comma-separated --sample values to measure after the full verify (empty: none)")
	flag.IntVar(&o.parallel, "parallel", 4, "drctl verify --parallel")
	flag.StringVar(&o.drctl, "drctl", "", "drctl binary (default: built from this checkout)")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up after this long")
	flag.Parse()
	for s := range strings.SplitSeq(samples, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 2 {
			fmt.Fprintf(os.Stderr, "verifykfake: -sample %q: give whole numbers of 2 or more\n", s)
			os.Exit(2)
		}
		o.samples = append(o.samples, n)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "verifykfake:", err)
		os.Exit(1)
	}
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, a...))
}

func run(o options) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "verifykfake-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if o.drctl == "" {
		o.drctl = filepath.Join(dir, "drctl")
		logf("building drctl")
		if out, err := exec.Command("go", "build", "-o", o.drctl, "./cmd/drctl").CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/drctl (run this from the repository's root): %v\n%s", err, out)
		}
	}
	east, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("kfake-east"))
	if err != nil {
		return err
	}
	defer east.Close()
	west, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("kfake-west"))
	if err != nil {
		return err
	}
	defer west.Close()
	topo := filepath.Join(dir, "drctl.yaml")
	yaml := fmt.Sprintf(`name: verifybench
clusters:
  east: {bootstrap: [%s], timeout: 30s}
  west: {bootstrap: [%s], timeout: 30s}
active: east
standby: west
mirror:
  topics: {include: ["backlog"]}
  groups: {include: ["none"]}
  group_sync_interval: 1h
`, strings.Join(east.ListenAddrs(), ", "), strings.Join(west.ListenAddrs(), ", "))
	if err := os.WriteFile(topo, []byte(yaml), 0o600); err != nil {
		return err
	}

	t0 := time.Now()
	if err := produce(east.ListenAddrs(), o); err != nil {
		return fmt.Errorf("write the backlog: %w", err)
	}
	logf("wrote %d records of %d bytes over %d partitions in %.1f s (batches of up to %d bytes)", o.records, o.size, o.partitions, time.Since(t0).Seconds(), o.batchBytes)

	copyS, err := mirror(ctx, o, topo, dir)
	if err != nil {
		return err
	}
	copyRate := float64(o.records) / copyS
	logf("the mirror copied the backlog in %.2f s (%.0f records/s, from launch)", copyS, copyRate)

	type row struct {
		sample        int
		wall          float64
		rssMiB        float64
		compared      int64
		srcRead, read int64
		status        string
	}
	var rows []row
	for _, n := range append([]int{1}, o.samples...) {
		args := []string{"-c", topo, "-o", "json", "verify", "--timeout", o.timeout.String(), "--parallel", strconv.Itoa(o.parallel)}
		if n > 1 {
			args = append(args, "--sample", strconv.Itoa(n))
		}
		cmd := exec.CommandContext(ctx, o.drctl, args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		start := time.Now()
		if err := cmd.Start(); err != nil {
			return err
		}
		peak := watchPeak(cmd.Process.Pid)
		err := cmd.Wait()
		wall := time.Since(start).Seconds()
		rss := float64(peak()) / 1024
		if err != nil {
			return fmt.Errorf("drctl verify (sample %d): %v\n%s", n, err, tail(errb.String()))
		}
		var rep struct {
			Summary struct {
				Partitions, Identical, NoDifferenceSeen int
				Compared                                int64
				SourceRecords                           int64 `json:"source_records"`
				SourceRead                              int64 `json:"source_read"`
				TargetRead                              int64 `json:"target_read"`
			} `json:"summary"`
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			return fmt.Errorf("drctl verify (sample %d): %w", n, err)
		}
		s := rep.Summary
		status := fmt.Sprintf("%d of %d identical", s.Identical, s.Partitions)
		if n > 1 {
			status = fmt.Sprintf("%d of %d no difference seen", s.NoDifferenceSeen, s.Partitions)
		}
		rows = append(rows, row{sample: n, wall: wall, rssMiB: rss, compared: s.Compared, srcRead: s.SourceRead, read: s.TargetRead, status: status})
		logf("verify (sample %d): %.2f s, peak RSS %.0f MiB, %d compared, %d + %d records read; %s", n, wall, rss, s.Compared, s.SourceRead, s.TargetRead, status)
		fmt.Printf("RESULT verify sample=%d wall_s=%.3f records_per_s=%.0f rss_mib=%.0f compared=%d source_read=%d target_read=%d vs_copy=%.2f\n",
			n, wall, float64(o.records)/wall, rss, s.Compared, s.SourceRead, s.TargetRead, float64(o.records)/wall/copyRate)
	}
	fmt.Printf("RESULT copy records=%d partitions=%d size=%d wall_s=%.3f records_per_s=%.0f\n", o.records, o.partitions, o.size, copyS, copyRate)

	fmt.Printf("\n%d records of %d bytes over %d partitions on kfake (in process), written in batches of up to %d bytes; the mirror copied them in %.2f s (%.0f records/s from its launch).\n\n",
		o.records, o.size, o.partitions, o.batchBytes, copyS, copyRate)
	fmt.Println("| drctl verify | wall (s) | records/s of the backlog | vs the copy rate | vs full | records read (source + standby) | peak RSS (MiB) | verdict |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---|")
	full := rows[0].wall
	for _, r := range rows {
		name := "full"
		if r.sample > 1 {
			name = fmt.Sprintf("--sample %d", r.sample)
		}
		fmt.Printf("| %s | %.2f | %.0f | %.2f | %.2fx | %d + %d | %.0f | %s |\n", name, r.wall, float64(o.records)/r.wall,
			float64(o.records)/r.wall/copyRate, full/r.wall, r.srcRead, r.read, r.rssMiB, r.status)
	}
	return nil
}

// produce writes the backlog into a fresh topic "backlog" on east: record i
// goes to partition i mod partitions, with key "k<i>" and a random value.
func produce(addrs []string, o options) error {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = false
	cfg.Producer.Flush.Bytes = o.batchBytes
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	cfg.Producer.MaxMessageBytes = 1 << 20
	admin, err := sarama.NewClusterAdmin(addrs, cfg)
	if err != nil {
		return err
	}
	defer admin.Close()
	if err := admin.CreateTopic("backlog", &sarama.TopicDetail{NumPartitions: int32(o.partitions), ReplicationFactor: 1}, false); err != nil {
		return err
	}
	p, err := sarama.NewAsyncProducer(addrs, cfg)
	if err != nil {
		return err
	}
	errs := make(chan error, 1)
	go func() {
		var first error
		for e := range p.Errors() {
			if first == nil {
				first = e.Err
			}
		}
		errs <- first
	}()
	pool := make([]byte, 1<<20+o.size)
	if _, err := rand.Read(pool); err != nil {
		return err
	}
	for i := range o.records {
		at := (i * 7919) % (len(pool) - o.size)
		p.Input() <- &sarama.ProducerMessage{Topic: "backlog", Partition: int32(i % o.partitions),
			Key: sarama.StringEncoder("k" + strconv.Itoa(i)), Value: sarama.ByteEncoder(pool[at : at+o.size])}
	}
	p.AsyncClose()
	return <-errs
}

// mirror runs `drctl mirror run` until `drctl mirror lag` reports nothing
// behind, stops it, and returns the seconds from its launch.
func mirror(ctx context.Context, o options, topo, dir string) (float64, error) {
	logf("starting drctl mirror run")
	logFile, err := os.Create(filepath.Join(dir, "mirror.log"))
	if err != nil {
		return 0, err
	}
	defer logFile.Close()
	cmd := exec.Command(o.drctl, "-c", topo, "mirror", "run", "--listen", "127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	poll := 100 * time.Millisecond
	if o.partitions > 1000 {
		poll = time.Second
	}
	for {
		select {
		case <-exited:
			log, _ := os.ReadFile(logFile.Name())
			return 0, fmt.Errorf("drctl mirror run exited: %v\n%s", waitErr, tail(string(log)))
		case <-ctx.Done():
			stop()
			return 0, ctx.Err()
		case <-time.After(poll):
		}
		caught, err := caughtUp(ctx, o, topo)
		if err != nil {
			logf("drctl mirror lag: %v", err)
			continue
		}
		if caught {
			took := time.Since(start).Seconds()
			stop()
			return took, nil
		}
	}
}

func caughtUp(ctx context.Context, o options, topo string) (bool, error) {
	out, err := exec.CommandContext(ctx, o.drctl, "-c", topo, "-o", "json", "mirror", "lag").Output()
	if err != nil {
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			return false, fmt.Errorf("%v: %s", err, tail(string(ee.Stderr)))
		}
		return false, err
	}
	var lag struct {
		Partitions []struct {
			Records int64
			Error   string
		}
		TotalRecords int64 `json:"total_records"`
	}
	if err := json.Unmarshal(out, &lag); err != nil {
		return false, err
	}
	if len(lag.Partitions) != o.partitions || lag.TotalRecords != 0 {
		return false, nil
	}
	for _, p := range lag.Partitions {
		if p.Records != 0 || p.Error != "" {
			return false, nil
		}
	}
	return true, nil
}

// watchPeak reads the process's VmHWM (its peak resident set, KiB) every
// 2 ms until it exits; the returned function stops watching and returns the
// last figure read. getrusage's ru_maxrss of a child would not do: a child
// started from this process (which holds both kfake clusters) counts this
// process's memory until its exec.
func watchPeak(pid int) func() int64 {
	var (
		peak atomic.Int64
		done = make(chan struct{})
		left = make(chan struct{})
	)
	go func() {
		defer close(left)
		for {
			if raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
				for line := range strings.SplitSeq(string(raw), "\n") {
					if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
						if kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64); err == nil && kb > peak.Load() {
							peak.Store(kb)
						}
					}
				}
			}
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return func() int64 {
		close(done)
		<-left
		return peak.Load()
	}
}

func tail(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}
