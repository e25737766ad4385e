package verify_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/offsettranslate"
	"github.com/drctl/drctl/topology"
	"github.com/drctl/drctl/verify"
)

// raceDetector is set when the tests run with the race detector (race_test.go).
var raceDetector bool

// childTopology names the topology file TestVerifyMemoryChild verifies;
// without it that test is skipped.
const childTopology = "DRCTL_VERIFY_MEMORY_CHILD_TOPOLOGY"

// TestVerifyMemory: a full verify of 10,000 partitions (60 MB of records on
// each side) stays within a bounded memory. The standby and its offset map are written by the test
// (a copy of every source record at the same offset, one map entry per
// partition), not by a mirror, which would take longer than the verify.
// The verify runs in a child process (this test binary again, running
// TestVerifyMemoryChild), so that its peak resident set (VmHWM) is its
// own and not the kfake clusters'.
func TestVerifyMemory(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector's memory is not the verify's")
	}
	const (
		partitions = 10_000
		perPart    = 3
		valueSize  = 2048
		// The promise is 1 GB; the figure measured is about 60 MiB. The
		// limit is low enough that keeping every partition's records (120
		// MiB over both sides) would break it.
		limitMiB = 160
	)
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"wide\"]}\n  group_sync_interval: 1h\n"})
	east, west := kfaketest.Dial(t, p.Topology, "east"), kfaketest.Dial(t, p.Topology, "west")
	kfaketest.CreateTopicOn(t, east, "wide", partitions, nil)
	kfaketest.CreateTopicOn(t, west, "wide", partitions, nil)
	at := time.UnixMilli(1_700_000_000_000)
	var msgs []*sarama.ProducerMessage
	for part := range int32(partitions) {
		for i := range perPart {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: "wide", Partition: part, Timestamp: at,
				Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: sarama.ByteEncoder(value(part, i, valueSize))})
		}
	}
	for _, c := range []string{"east", "west"} {
		if err := kfaketest.IdempotentProducer(t, p.Topology.Clusters[c], "").SendMessages(msgs); err != nil {
			t.Fatalf("write %s: %v", c, err)
		}
	}
	link := p.Topology.Link("east", "west")
	b := offsettranslate.Batch{Shard: 0, CommittedAtMs: at.UnixMilli()}
	for part := range int32(partitions) {
		b.Entries = append(b.Entries, offsettranslate.Entry{Topic: "wide", Partition: part,
			Runs: []offsettranslate.Run{{Source: 0, Target: 0, Count: perPart}}, SourceNext: perPart})
	}
	kfaketest.CreateTopicOn(t, west, link.OffsetsTopic(), 1, nil)
	if _, _, err := kfaketest.IdempotentProducer(t, p.Topology.Clusters["west"], "").SendMessage(&sarama.ProducerMessage{
		Topic: link.OffsetsTopic(), Key: sarama.ByteEncoder(offsettranslate.ShardKey(0)), Value: sarama.ByteEncoder(offsettranslate.EncodeBatch(b))}); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestVerifyMemoryChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childTopology+"="+p.Path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	peak := watchPeak(cmd.Process.Pid)
	var sum *verify.Summary
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "SUMMARY "); ok {
			sum = &verify.Summary{}
			if err := json.Unmarshal([]byte(line), sum); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	peakMiB := float64(peak()) / 1024
	if err != nil || sum == nil {
		t.Fatalf("the verify child: %v (summary %v)", err, sum)
	}
	t.Logf("verify of %d partitions: %.1f s, peak RSS %.0f MiB; %+v", partitions, time.Since(start).Seconds(), peakMiB, *sum)
	if sum.Partitions != partitions || sum.Identical != partitions || sum.Compared != partitions*perPart {
		t.Errorf("summary %+v, want %d partitions identical, %d records compared", *sum, partitions, partitions*perPart)
	}
	if peakMiB == 0 || peakMiB > limitMiB {
		t.Errorf("peak RSS of the verify: %.0f MiB, want at most %d MiB", peakMiB, limitMiB)
	}
}

// value is the content of record i of partition part: size bytes.
func value(part int32, i, size int) []byte {
	v := []byte(fmt.Sprintf("%d/%d ", part, i))
	for len(v) < size {
		v = append(v, byte('a'+len(v)%26))
	}
	return v[:size]
}

// TestVerifyMemoryChild is TestVerifyMemory's child: it verifies the link
// of the topology it is given and prints the summary.
func TestVerifyMemoryChild(t *testing.T) {
	path := os.Getenv(childTopology)
	if path == "" {
		t.Skip("run by TestVerifyMemory")
	}
	topo, err := topology.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clusters := kafkaconn.Open(ctx, topo, "east", "west")
	defer clusters.Close()
	rep, err := verify.Run(ctx, clusters, topo.Link("east", "west"), verify.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(rep.Summary)
	fmt.Println("SUMMARY " + string(raw))
}

// watchPeak reads the process's VmHWM (KiB) every 2 ms until the returned
// function is called, which returns the last figure read.
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
						if kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64); err == nil {
							peak.Store(max(peak.Load(), kb))
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
