package mirror

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// TestMain lets the test binary run as a mirror process (for crash and
// scale-out tests): DRCTL_MIRROR_CHILD=<topology path> runs the east->west
// engine until killed or SIGTERM.
func TestMain(m *testing.M) {
	if path := os.Getenv("DRCTL_MIRROR_CHILD"); path != "" {
		os.Exit(runChild(path))
	}
	os.Exit(m.Run())
}

func runChild(path string) int {
	topo, err := topology.Load(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	shards, _ := strconv.Atoi(os.Getenv("DRCTL_MIRROR_SHARDS"))
	every, _ := time.ParseDuration(os.Getenv("DRCTL_MIRROR_PROGRESS_EVERY")) // "": the default
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	e, err := NewEngine(topo, "east", "west", Options{Epoch: -1, Shards: int32(shards), SessionTimeout: 2 * time.Second,
		TopicSyncInterval: 500 * time.Millisecond, IdleCheck: 200 * time.Millisecond, ProgressEvery: every, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	go func() {
		// Report owned shards on stdout for the parent to wait on.
		t := time.NewTicker(100 * time.Millisecond)
		last := ""
		for range t.C {
			now := fmt.Sprint(e.OwnedShards())
			if now != last {
				fmt.Println("owned", now)
				last = now
			}
		}
	}()
	if err := e.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func readAll(cl sarama.Client, topic string, p int32) ([]kafkaread.Record, error) {
	var out []kafkaread.Record
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := kafkaread.ReadCommitted(ctx, cl, topic, p, 0, func(r kafkaread.Record) error {
		out = append(out, r)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read %s/%d: %w", topic, p, err)
	}
	return out, nil
}

func header(r kafkaread.Record, key string) []byte {
	for _, h := range r.Headers {
		if string(h.Key) == key {
			return h.Value
		}
	}
	return nil
}

func sourceOffset(r kafkaread.Record) int64 {
	v := header(r, topology.HeaderSourceOffset)
	if len(v) != 8 {
		return -1
	}
	return int64(binary.BigEndian.Uint64(v))
}

// waitFor polls cond until it returns nil or the timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	pause := 20 * time.Millisecond
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s: %v", timeout, what, err)
		}
		time.Sleep(pause)
		pause = min(pause*2, 500*time.Millisecond)
	}
}

// sameRecords compares the committed source records of a partition with
// the target's, record by record: same order, key, value, headers (less
// provenance), timestamp, and provenance pointing at the source offset.
func sameRecords(src, dst []kafkaread.Record, origin string) error {
	if len(src) != len(dst) {
		return fmt.Errorf("source has %d committed records, target %d", len(src), len(dst))
	}
	for i := range src {
		s, d := src[i], dst[i]
		if string(s.Key) != string(d.Key) || (s.Key == nil) != (d.Key == nil) || string(s.Value) != string(d.Value) {
			return fmt.Errorf("record %d (source offset %d): key/value differ", i, s.Offset)
		}
		if !s.Timestamp.Equal(d.Timestamp) {
			return fmt.Errorf("record %d: timestamp %v != %v", i, s.Timestamp, d.Timestamp)
		}
		if got := sourceOffset(d); got != s.Offset {
			return fmt.Errorf("record %d: provenance offset %d, want %d", i, got, s.Offset)
		}
		if got := string(header(d, topology.HeaderOrigin)); got != origin {
			return fmt.Errorf("record %d: origin %q, want %q", i, got, origin)
		}
		var dh [][2]string
		for _, h := range d.Headers {
			if k := string(h.Key); k != topology.HeaderOrigin && k != topology.HeaderSourceOffset {
				dh = append(dh, [2]string{k, string(h.Value)})
			}
		}
		if len(dh) != len(s.Headers) {
			return fmt.Errorf("record %d: %d headers, want %d", i, len(dh), len(s.Headers))
		}
		for j, h := range s.Headers {
			if dh[j] != [2]string{string(h.Key), string(h.Value)} {
				return fmt.Errorf("record %d: header %d is %v, want %s=%s", i, j, dh[j], h.Key, h.Value)
			}
		}
	}
	return nil
}

// holdNextCommit makes c hold the next EndTxn it receives until release is
// called or the test ends; held is closed when that request arrived.
func holdNextCommit(t *testing.T, c *kfake.Cluster) (held <-chan struct{}, release func()) {
	t.Helper()
	released := make(chan struct{})
	release = sync.OnceFunc(func() { close(released) })
	t.Cleanup(release)
	arrived := make(chan struct{})
	c.ControlKey(int16(kmsg.EndTxn), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.DropControl()
		close(arrived)
		c.SleepControl(func() { <-released })
		return nil, nil, false
	})
	return arrived, release
}
