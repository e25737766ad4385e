//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// workerSessionTimeout is the mirror's worker group session timeout (the
// default of mirror.Options; `drctl mirror run` has no flag for it).
const workerSessionTimeout = 10 * time.Second

// TestMirrorTwoProcessesRealKafka proves scale-out against real Apache
// Kafka: two `drctl mirror run` processes for one topology split the
// link's shards; when one is SIGKILLed the other takes all of them over
// within the group session timeout; the survivor stops gracefully on
// SIGTERM mid-stream and a third process takes over at once; west ends with
// every committed source record exactly once, in order.
func TestMirrorTwoProcessesRealKafka(t *testing.T) {
	const partitions = 12
	topic := uniqueName(t, "m2")
	mt := writeMirrorTopology(t, topicPattern(topic))
	createTopic(t, "east", topic, partitions, nil)
	t.Cleanup(func() { deleteTopics(t, "west", topic) })
	src, dst := mt.dial(t, "east"), mt.dial(t, "west")
	eastID, err := kafkaconn.ClusterID(src)
	if err != nil {
		t.Fatal(err)
	}
	linkLabel := `link="` + mt.link().String() + `"`

	var flowing atomic.Bool
	flowing.Store(true)
	s := &stream{Topic: topic, Partitions: partitions, Min: 30_000, Max: 200_000,
		Pace: 100 * time.Millisecond, BatchSize: 100, More: flowing.Load}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	streamDone := s.start(ctx, mt.Topo.Clusters["east"], mt.Name+"-stream")

	// More shards than a new link of 12 partitions gets (2), so that each
	// process owns several.
	const shards = 8
	a := startMirror(t, mt, "mirror-a", "--shards", strconv.Itoa(shards))
	b := startMirror(t, mt, "mirror-b", "--shards", strconv.Itoa(shards))
	var split [2][]int32
	kfaketest.WaitFor(t, 60*time.Second, "both processes own shards, together all of them once", func() error {
		for i, p := range []*mirrorProc{a, b} {
			set, err := readyShards(p)
			if err != nil {
				return err
			}
			split[i] = set
		}
		return coverOnce(split[:], shards)
	})
	kfaketest.WaitFor(t, 60*time.Second, "both processes copy records", func() error {
		for _, p := range []*mirrorProc{a, b} {
			n, _, err := p.metric("drctl_mirror_records_total", linkLabel)
			if err == nil && n == 0 {
				err = fmt.Errorf("%s copied nothing yet", p.name)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	copiedB, _, _ := b.metric("drctl_mirror_records_total", linkLabel)
	t.Logf("split: %s owns shards %v, %s owns %v; %s had copied %.0f records", a.name, split[0], b.name, split[1], b.name, copiedB)

	b.kill()
	killed := time.Now()
	kfaketest.WaitFor(t, 3*workerSessionTimeout, a.name+" owns every shard", func() error {
		set, err := readyShards(a)
		if err == nil && len(set) != shards {
			err = fmt.Errorf("owns %v", set)
		}
		return err
	})
	takeover := time.Since(killed)
	t.Logf("%s owned all %d shards %v after %s was SIGKILLed (session timeout %v)", a.name, shards,
		takeover.Round(time.Millisecond), b.name, workerSessionTimeout)
	// The group notices the death when the session expires; the survivor
	// then rejoins at its next heartbeat (a tenth of the session timeout).
	if limit := workerSessionTimeout + 3*time.Second; takeover > limit {
		t.Errorf("takeover took %v, more than the session timeout plus a rebalance (%v)", takeover, limit)
	}

	// The stream keeps flowing for a while after the takeover.
	after := s.Produced.Load()
	kfaketest.WaitFor(t, time.Minute, "records flow after the takeover", func() error {
		if n := s.Produced.Load() - after; n < 5000 {
			return fmt.Errorf("%d records since the takeover", n)
		}
		return nil
	})

	// A graceful stop while records flow: exit 0, every transaction
	// committed or aborted (west's last stable offsets reach the high-water
	// marks), and the group left, so a new process gets the shards at once.
	copiedA, _, _ := a.metric("drctl_mirror_records_total", linkLabel)
	a.signal(syscall.SIGTERM)
	termAt := time.Now()
	code, err := a.waitExit(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	stopTook := time.Since(termAt)
	if code != 0 {
		t.Fatalf("%s exited with %d after SIGTERM:\n%s", a.name, code, a.tail(20))
	}
	ends, err := partitionEnds(dst, topic, partitions)
	if err != nil {
		t.Fatal(err)
	}
	for p, e := range ends {
		if e.Stable != e.High {
			t.Errorf("west %s/%d: last stable offset %d below high-water mark %d after a graceful stop", topic, p, e.Stable, e.High)
		}
	}
	cStart := time.Now()
	c := startMirror(t, mt, "mirror-c")
	kfaketest.WaitFor(t, 3*workerSessionTimeout, c.name+" (without --shards) owns every shard", func() error {
		set, err := readyShards(c)
		if err == nil && len(set) != shards {
			err = fmt.Errorf("owns %v", set)
		}
		return err
	})
	t.Logf("SIGTERM during the stream: %s exited 0 in %v, no transaction left open; %s owned every shard %v after its start",
		a.name, stopTook.Round(time.Millisecond), c.name, time.Since(cStart).Round(time.Millisecond))

	flowing.Store(false)
	if err := streamDone(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	waitCaughtUp(t, mt, 2*time.Minute)
	total, err := compareTopic(src, dst, topic, partitions, eastID, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := s.Produced.Load() - s.Aborted.Load(); int64(total) != want {
		t.Errorf("east holds %d committed records, the stream committed %d", total, want)
	}
	copiedC, _, _ := c.metric("drctl_mirror_records_total", linkLabel)
	t.Logf("stream: %d records (%d aborted); west: %d committed records exactly once, in order; copied by %s %.0f (before its death), %s %.0f (before SIGTERM), %s %.0f",
		s.Produced.Load(), s.Aborted.Load(), total, b.name, copiedB, a.name, copiedA, c.name, copiedC)
}

var readyRE = regexp.MustCompile(`shards \[([0-9 ]*)\]`)

// readyShards returns the shards a process owns, from its /readyz; a
// process that owns none is an error.
func readyShards(p *mirrorProc) ([]int32, error) {
	if p.exited() {
		return nil, fmt.Errorf("%s exited with %d", p.name, p.code)
	}
	code, body, err := p.get("/readyz")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("%s /readyz: %d %s", p.name, code, strings.TrimSpace(body))
	}
	m := readyRE.FindStringSubmatch(body)
	if m == nil {
		return nil, fmt.Errorf("%s /readyz: no shard list in %q", p.name, body)
	}
	var out []int32
	for f := range strings.FieldsSeq(m[1]) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		out = append(out, int32(n))
	}
	slices.Sort(out)
	return out, nil
}

// coverOnce checks that the sets, all non-empty, hold each of 0..n-1
// exactly once between them.
func coverOnce(sets [][]int32, n int) error {
	seen := map[int32]int{}
	for i, set := range sets {
		if len(set) == 0 {
			return fmt.Errorf("process %d owns no shard", i)
		}
		for _, s := range set {
			seen[s]++
		}
	}
	for s := int32(0); s < int32(n); s++ {
		if seen[s] != 1 {
			return fmt.Errorf("shard %d is owned %d times (%v)", s, seen[s], sets)
		}
	}
	return nil
}

// TestMirrorReshardRealKafka: a link copied with 4 shards by a process
// SIGKILLed mid-stream (its transactions left open) is resharded to 2 by
// `drctl mirror reshard` once the process's session ended (refused before,
// naming the fix), copied on by a process started without --shards, then
// resharded to 6 after a graceful stop (the shards topic recreated to
// shrink, partitions added to grow, on real Kafka); west ends with every
// committed source record exactly once, in order.
func TestMirrorReshardRealKafka(t *testing.T) {
	const partitions = 12
	topic := uniqueName(t, "rs")
	mt := writeMirrorTopology(t, topicPattern(topic))
	createTopic(t, "east", topic, partitions, nil)
	t.Cleanup(func() { deleteTopics(t, "west", topic) })
	src, dst := mt.dial(t, "east"), mt.dial(t, "west")
	eastID, err := kafkaconn.ClusterID(src)
	if err != nil {
		t.Fatal(err)
	}
	linkLabel := `link="` + mt.link().String() + `"`
	var flowing atomic.Bool
	flowing.Store(true)
	s := &stream{Topic: topic, Partitions: partitions, Min: 20_000, Max: 200_000,
		Pace: 100 * time.Millisecond, BatchSize: 100, More: flowing.Load}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	streamDone := s.start(ctx, mt.Topo.Clusters["east"], mt.Name+"-stream")

	owns := func(p *mirrorProc, n int) {
		t.Helper()
		kfaketest.WaitFor(t, 60*time.Second, fmt.Sprintf("%s owns all %d shards and copies", p.name, n), func() error {
			set, err := readyShards(p)
			if err != nil {
				return err
			}
			if err := coverOnce([][]int32{set}, n); err != nil {
				return err
			}
			if c, _, err := p.metric("drctl_mirror_records_total", linkLabel); err != nil || c == 0 {
				return fmt.Errorf("copied %v records (%v)", c, err)
			}
			return nil
		})
	}
	reshard := func(n int) cliResult {
		t.Helper()
		var r cliResult
		kfaketest.WaitFor(t, 3*workerSessionTimeout, fmt.Sprintf("the reshard to %d", n), func() error {
			r = runDrctl(t, mirrorEnv(), "-c", mt.Path, "mirror", "reshard", "--shards", strconv.Itoa(n), "--yes")
			if r.code == 2 && strings.Contains(r.stderr, "stop every drctl mirror run") {
				return fmt.Errorf("refused: %s", r.stderr)
			}
			if r.code != 0 {
				t.Fatalf("reshard to %d: exit %d: %s", n, r.code, r.stderr)
			}
			return nil
		})
		return r
	}

	a := startMirror(t, mt, "mirror-a", "--shards", "4")
	owns(a, 4)
	if r := runDrctl(t, mirrorEnv(), "-c", mt.Path, "mirror", "reshard", "--shards", "2", "--yes"); r.code != 2 || !strings.Contains(r.stderr, "stop every drctl mirror run") {
		t.Fatalf("reshard while a mirror runs: exit %d, %q; want 2 and the fix", r.code, r.stderr)
	}
	a.kill()
	killed := time.Now()
	if r := reshard(2); !strings.Contains(r.stdout, "4 shards -> 2") {
		t.Fatalf("reshard to 2: %q", r.stdout)
	}
	t.Logf("resharded 4 -> 2 %v after the SIGKILL (session timeout %v)", time.Since(killed).Round(time.Millisecond), workerSessionTimeout)
	b := startMirror(t, mt, "mirror-b")
	owns(b, 2)
	b.signal(syscall.SIGTERM)
	if code, err := b.waitExit(30 * time.Second); err != nil || code != 0 {
		t.Fatalf("%s after SIGTERM: exit %d, %v", b.name, code, err)
	}
	if r := reshard(6); !strings.Contains(r.stdout, "2 shards -> 6") {
		t.Fatalf("reshard to 6: %q", r.stdout)
	}
	c := startMirror(t, mt, "mirror-c")
	owns(c, 6)
	flowing.Store(false)
	if err := streamDone(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	waitCaughtUp(t, mt, 2*time.Minute)
	total, err := compareTopic(src, dst, topic, partitions, eastID, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := s.Produced.Load() - s.Aborted.Load(); int64(total) != want {
		t.Errorf("east holds %d committed records, the stream committed %d", total, want)
	}
	t.Logf("stream: %d records (%d aborted); west: %d committed records exactly once, in order, across 4 -> 2 -> 6 shards",
		s.Produced.Load(), s.Aborted.Load(), total)
}
