package mirror

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// child is a mirror process (this test binary in child mode).
type child struct {
	cmd   *exec.Cmd
	owned chan string
	done  chan struct{}
}

func startChild(t *testing.T, path string, shards int) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DRCTL_MIRROR_CHILD="+path, fmt.Sprintf("DRCTL_MIRROR_SHARDS=%d", shards))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if testing.Verbose() == false {
		cmd.Stderr = nil
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, owned: make(chan string, 100), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "owned ") {
				select {
				case c.owned <- strings.TrimPrefix(line, "owned "):
				default:
				}
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(c.done) }()
	t.Cleanup(func() { c.kill() })
	return c
}

func (c *child) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// waitOwning waits until the child reports that it owns some shards.
func (c *child) waitOwning(t *testing.T, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case s := <-c.owned:
			if s != "[]" {
				return s
			}
		case <-c.done:
			t.Fatal("mirror child exited")
		case <-deadline:
			t.Fatalf("mirror child owned no shard within %v", timeout)
		}
	}
}

// TestExactlyOnceAcrossKills proves exactly-once across crashes: a mirror process killed
// with SIGKILL again and again while a stream of plain and transactional
// records (some transactions aborted) flows leaves every committed source
// record on the target exactly once, in order, and no aborted one.
func TestExactlyOnceAcrossKills(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	const (
		partitions = 6
		records    = 100_000
		kills      = 10
	)
	p := kfaketest.NewPair(t, kfaketest.Options{
		Mirror:      "  topics: {include: [\"stream\"]}\n  delivery: exactly-once",
		ClusterOpts: []kfake.Opt{kfake.GroupMinSessionTimeout(500 * time.Millisecond)},
	})
	east := p.Topology.Clusters["east"]
	src, dst := kfaketest.DialCluster(t, east), kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	kfaketest.CreateTopicOn(t, src, "stream", partitions, nil)

	var wg sync.WaitGroup
	produced := make(chan error, 1)
	var streamDone atomic.Bool
	wg.Go(func() {
		produced <- produceStream(east, "stream", partitions, records, 15*time.Millisecond)
		streamDone.Store(true)
	})

	streaming := 0
	for i := range kills {
		// Every other child checkpoints only a partition's first
		// transaction: its successor resumes from the offset map alone.
		every := ""
		if i%2 == 1 {
			every = "1h"
		}
		t.Setenv("DRCTL_MIRROR_PROGRESS_EVERY", every)
		c := startChild(t, p.Path, 4)
		c.waitOwning(t, 30*time.Second)
		time.Sleep(time.Duration(50+rand.IntN(400)) * time.Millisecond) // a random moment to crash at
		if !streamDone.Load() {
			streaming++
		}
		c.kill()
	}
	wg.Wait()
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	final := startChild(t, p.Path, 4)
	final.waitOwning(t, 30*time.Second)
	waitFor(t, 90*time.Second, "every record mirrored exactly once", func() error {
		for part := range int32(partitions) {
			s, err := readAll(src, "stream", part)
			if err != nil {
				return err
			}
			d, err := readAll(dst, "stream", part)
			if err != nil {
				return err
			}
			if err := sameRecords(s, d, "kfake-east"); err != nil {
				ends, _ := kafkaread.PartitionEnds(context.Background(), dst, "stream", part)
				return fmt.Errorf("partition %d (target ends %+v): %w", part, ends, err)
			}
		}
		return nil
	})
	total := 0
	for part := range int32(partitions) {
		total += len(kfaketest.Records(t, src, "stream", part, 0))
	}
	if streaming < kills/2 {
		t.Errorf("only %d of %d kills happened while the stream was flowing", streaming, kills)
	}
	if total < records*3/4 {
		t.Fatalf("only %d committed source records: the stream did not run", total)
	}
	t.Logf("%d committed source records (of %d produced, the rest aborted) mirrored exactly once across %d SIGKILLs (%d while the stream flowed)", total, records, kills, streaming)
}

// produceStream writes n records: plain batches, and transactional ones of
// which every fourth is aborted.
func produceStream(c *topology.Cluster, topic string, partitions, n int, pace time.Duration) error {
	mk := func(txn string) (sarama.SyncProducer, error) {
		cfg, err := c.SaramaConfig()
		if err != nil {
			return nil, err
		}
		cfg.Producer.Return.Successes = true
		cfg.Producer.Partitioner = sarama.NewManualPartitioner
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1
		cfg.Producer.Transaction.ID = txn
		return sarama.NewSyncProducer(c.Bootstrap, cfg)
	}
	plain, err := mk("")
	if err != nil {
		return err
	}
	defer plain.Close()
	txp, err := mk("stream-txn")
	if err != nil {
		return err
	}
	defer txp.Close()
	seq := 0
	batch := func() []*sarama.ProducerMessage {
		msgs := make([]*sarama.ProducerMessage, 0, 100)
		for i := 0; i < 100 && seq < n; i++ {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: int32(seq % partitions),
				Key: sarama.StringEncoder(fmt.Sprintf("k%d", seq%97)), Value: sarama.StringEncoder(fmt.Sprintf("record-%07d", seq)),
				Headers: []sarama.RecordHeader{{Key: []byte("seq"), Value: []byte(fmt.Sprint(seq))}}})
			seq++
		}
		return msgs
	}
	for b := 0; seq < n; b++ {
		if b > 0 {
			time.Sleep(pace) // spread the stream over the kills
		}
		msgs := batch()
		if b%3 != 2 {
			if err := plain.SendMessages(msgs); err != nil {
				return err
			}
			continue
		}
		if err := txp.BeginTxn(); err != nil {
			return err
		}
		if err := txp.SendMessages(msgs); err != nil {
			return err
		}
		if b%4 == 0 {
			err = txp.AbortTxn()
		} else {
			err = txp.CommitTxn()
		}
		if err != nil {
			return err
		}
	}
	return nil
}
