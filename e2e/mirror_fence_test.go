//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/mirror"
)

// TestMirrorFencedZombieRealKafka proves that a standby has one writer,
// against real Apache Kafka: a mirror process that hangs (SIGSTOP) while a failover records a
// newer role state on west and fences the east -> west link, and that wakes
// up afterwards (SIGCONT), writes no further record to west, although east
// keeps receiving records it has not copied.
//
// Two new role states are tried: the flip a failover writes (west active,
// phase wiping: no link may run), and a steady state with west active, in
// which the zombie's daemon starts mirroring west -> east.
func TestMirrorFencedZombieRealKafka(t *testing.T) {
	t.Run("flip_wiping", func(t *testing.T) {
		testFencedZombie(t, rolestate.PhaseWiping)
	})
	t.Run("steady_reversed", func(t *testing.T) {
		testFencedZombie(t, rolestate.PhaseSteady)
	})
}

func testFencedZombie(t *testing.T, phase rolestate.Phase) {
	const partitions = 3
	topic := uniqueName(t, "mz")
	mt := writeMirrorTopology(t, topicPattern(topic))
	createTopic(t, "east", topic, partitions, nil)
	t.Cleanup(func() { deleteTopics(t, "west", topic) })
	src, dst := mt.dial(t, "east"), mt.dial(t, "west")
	eastID, err := kafkaconn.ClusterID(src)
	if err != nil {
		t.Fatal(err)
	}
	link := mt.link()
	back := mt.Topo.Link("west", "east") // the zombie's daemon follows the new roles
	t.Cleanup(func() { deleteTopics(t, "east", back.ShardsTopic(), back.OffsetsTopic()) })

	// A stream flows into east from before the hang until after the wake-up,
	// so that the zombie hangs with records in hand or a transaction open.
	s := &stream{Topic: topic, Partitions: partitions, Min: 1 << 30, Max: 1 << 30, Pace: 20 * time.Millisecond, BatchSize: 30}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	streamDone := s.start(ctx, mt.Topo.Clusters["east"], mt.Name+"-stream")
	stopStream := func() {
		cancel()
		if err := streamDone(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("stream: %v", err)
		}
	}
	defer stopStream()

	zombie := startMirror(t, mt, "zombie")
	kfaketest.WaitFor(t, 60*time.Second, "the mirror copies", func() error {
		copied, _, err := zombie.metric("drctl_mirror_records_total", `link="east->west"`)
		if err == nil && copied < 2000 {
			err = fmt.Errorf("%.0f records copied", copied)
		}
		return err
	})
	if code, body, err := zombie.get("/readyz"); err != nil || code != http.StatusOK {
		t.Fatalf("/readyz of the running mirror: %d %q %v", code, body, err)
	}

	// Hang the zombie while one of its transactions is open on west: its
	// copies are in west's log but not committed, so the last stable offset
	// trails the high-water mark (twice in a row, so that a commit already
	// on its way to the broker does not count). Stop and continue it at
	// random moments until that happens.
	t.Cleanup(func() { _ = zombie.cmd.Process.Signal(syscall.SIGCONT) })
	var (
		hungAt   time.Time
		openTxn  bool
		attempts int
	)
	for attempts = 1; attempts <= 200 && !openTxn; attempts++ {
		zombie.signal(syscall.SIGSTOP)
		hungAt = time.Now()
		openTxn = true
		for check := 0; check < 2 && openTxn; check++ {
			if check > 0 {
				time.Sleep(200 * time.Millisecond) // let in-flight requests land
			}
			ends, err := partitionEnds(dst, topic, partitions)
			if err != nil {
				t.Fatal(err)
			}
			openTxn = false
			for _, e := range ends {
				if e.Stable < e.High {
					openTxn = true
				}
			}
		}
		if !openTxn {
			zombie.signal(syscall.SIGCONT)
			time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
		}
	}
	if !openTxn {
		t.Logf("the zombie never hung with a transaction open on west in %d tries; it hangs between transactions", attempts)
	} else {
		t.Logf("the zombie hangs with a transaction open on west (try %d)", attempts)
	}

	// The failover's contract (see linkstate.Fence): first the newer role
	// state on the target, then the fence.
	west := mt.dial(t, "west")
	wcfg, err := mt.Topo.Clusters["west"].SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	next := rolestate.State{Topology: mt.Name, Epoch: 1, Active: "west", Standby: "east", Phase: phase}
	if phase != rolestate.PhaseSteady {
		next.Run = &rolestate.Run{ID: mt.Name + "-run", Kind: rolestate.RunFailover, StartedAt: time.Now().UTC(), By: "e2e"}
	}
	sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
	defer scancel()
	if err := rolestate.CompareAndSet(sctx, west, wcfg, 0, next); err != nil {
		t.Fatalf("write role state epoch 1 on west: %v", err)
	}
	fenceStart := time.Now()
	fenced, err := linkstate.Fence(sctx, session(t, mt.Topo), link)
	if err != nil {
		t.Fatalf("fence %s: %v", link, err)
	}
	t.Logf("role state epoch 1 written and %d shards fenced %v after the hang (fence took %v)",
		fenced, time.Since(hungAt).Round(time.Millisecond), time.Since(fenceStart).Round(time.Millisecond))
	if want := int(mirror.NewLinkShards(partitions)); fenced != want {
		t.Errorf("fenced %d shards, want %d (a new link of %d partitions)", fenced, want, partitions)
	}

	// What west holds now is final for this link: the data topic and the
	// link's offset map.
	offsetsTopic := link.OffsetsTopic()
	snapshot := func() ([]kafkaread.Ends, []kafkaread.Ends) {
		t.Helper()
		data, err := partitionEnds(dst, topic, partitions)
		if err != nil {
			t.Fatal(err)
		}
		if err := dst.RefreshMetadata(offsetsTopic); err != nil {
			t.Fatal(err)
		}
		parts, err := dst.Partitions(offsetsTopic)
		if err != nil {
			t.Fatal(err)
		}
		offs, err := partitionEnds(dst, offsetsTopic, int32(len(parts)))
		if err != nil {
			t.Fatal(err)
		}
		return data, offs
	}
	fencedData, fencedOffs := snapshot()
	for p, e := range fencedData {
		if e.Stable != e.High {
			t.Errorf("west %s/%d: a transaction is still open after the fence (stable %d, high %d)", topic, p, e.Stable, e.High)
		}
	}
	// East gets more records while the zombie hangs.
	before := s.Produced.Load()
	kfaketest.WaitFor(t, 30*time.Second, "more records on east", func() error {
		if n := s.Produced.Load() - before; n < 1000 {
			return fmt.Errorf("%d new records", n)
		}
		return nil
	})

	zombie.signal(syscall.SIGCONT)
	woke := time.Now()
	// The zombie notices the new roles: its east -> west engine returns
	// (every shard released), because a shard found the link retired or the
	// daemon followed the roles (to west -> east, or to no link at all).
	var retiredBy string
	kfaketest.WaitFor(t, 60*time.Second, "the zombie retires its east -> west link", func() error {
		if zombie.exited() {
			return fmt.Errorf("the zombie exited with %d", zombie.code)
		}
		e, _ := zombie.findLog(0, func(e logEntry) bool {
			switch e.str("msg") {
			case "mirroring":
				return e.str("link") == "west->east"
			case "the role state allows no link now; mirroring stopped",
				"link retired by a newer role state; waiting for the roles to settle":
				return true
			}
			return false
		})
		if e == nil {
			return fmt.Errorf("no sign yet")
		}
		retiredBy = e.str("msg")
		if l := e.str("link"); l != "" {
			retiredBy += " " + l
		}
		return nil
	})
	retiredIn := time.Since(woke)
	owned, err := zombie.shardsOwned(link)
	if err != nil || owned != 0 {
		t.Errorf("the zombie still owns %d shards of %s (%v)", owned, link, err)
	}
	checkUnmoved := func(when string) {
		t.Helper()
		data, offs := snapshot()
		for p := range data {
			if data[p].High != fencedData[p].High {
				t.Errorf("%s: west %s/%d moved from %d to %d after the fence", when, topic, p, fencedData[p].High, data[p].High)
			}
		}
		for p := range offs {
			if offs[p].High != fencedOffs[p].High {
				t.Errorf("%s: west %s/%d (offset map) moved from %d to %d after the fence", when, offsetsTopic, p, fencedOffs[p].High, offs[p].High)
			}
		}
	}
	checkUnmoved("right after the zombie woke")

	// The zombie keeps running, and still nothing reaches west: with west
	// active and steady its daemon mirrors west -> east (ready again);
	// while wiping it mirrors nothing (not ready). Then it stops on SIGTERM.
	kfaketest.WaitFor(t, 60*time.Second, "the zombie follows the new roles", func() error {
		code, body, err := zombie.get("/readyz")
		switch {
		case err != nil:
			return err
		case phase == rolestate.PhaseSteady && (code != http.StatusOK || !strings.Contains(body, "west->east")):
			return fmt.Errorf("/readyz: %d %q, want 200 for west->east", code, body)
		case phase != rolestate.PhaseSteady && code != http.StatusServiceUnavailable:
			return fmt.Errorf("/readyz: %d %q, want 503", code, body)
		}
		return nil
	})
	checkUnmoved(fmt.Sprintf("%v after the wake-up", time.Since(woke).Round(time.Millisecond)))
	stopStream()
	fencedErrs, _, _ := zombie.metric("drctl_mirror_errors_total", `link="east->west"`, `kind="fenced"`)
	aborted, _, _ := zombie.metric("drctl_mirror_transactions_total", `link="east->west"`, `outcome="aborted"`)
	zombie.signal(syscall.SIGTERM)
	if code, err := zombie.waitExit(30 * time.Second); err != nil || code != 0 {
		t.Errorf("the zombie's SIGTERM: exit %d, %v", code, err)
	}
	checkUnmoved(fmt.Sprintf("%v after the wake-up, the zombie gone", time.Since(woke).Round(time.Millisecond)))

	// West holds a gap-free, duplicate-free prefix of each source partition.
	committed, err := compareTopic(src, dst, topic, partitions, eastID, true)
	if err != nil {
		t.Fatal(err)
	}
	westRecs, err := readPartitions(dst, topic, partitions)
	if err != nil {
		t.Fatal(err)
	}
	onWest := 0
	for _, recs := range westRecs {
		onWest += len(recs)
	}
	var fenceErrs []string
	for _, e := range zombie.logs() {
		if msg := e.str("msg"); strings.Contains(msg, "retired") || strings.Contains(msg, "stopped") || strings.Contains(msg, "fenced") {
			fenceErrs = append(fenceErrs, fmt.Sprintf("%s: %s", msg, e.str("err")))
		}
	}
	t.Logf("zombie woke %v after the fence; it retired the link in %v (%s); west holds %d of the %d committed source records, unchanged, no duplicate",
		woke.Sub(fenceStart).Round(time.Millisecond), retiredIn.Round(time.Millisecond), retiredBy, onWest, committed)
	t.Logf("the zombie's own account: %.0f write attempts refused as fenced, %.0f transactions aborted; log: %q", fencedErrs, aborted, fenceErrs)
}
