//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/plans"
)

// Faults of the brokers themselves (kafka.sh kill, pause): the mirror and
// a failover against a broker that crashes or hangs.

// TestBrokerKilledMidMirrorRealKafka: while a stream of plain and
// transactional records (some aborted) flows into east and
// `drctl mirror run` copies it, west's broker (the mirror's target, where
// its transactions and progress live) is SIGKILLed and restarted, and then
// east's (the source) too. In the end west holds every committed source
// record exactly once, in order, and no aborted one.
func TestBrokerKilledMidMirrorRealKafka(t *testing.T) {
	const partitions = 4
	topic := uniqueName(t, "bk")
	mt := writeMirrorTopology(t, topicPattern(topic))
	createTopic(t, "east", topic, partitions, nil)
	t.Cleanup(func() { deleteTopics(t, "west", topic) })
	eastID := func() string {
		id, err := kafkaconn.ClusterID(mt.dial(t, "east"))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}()

	var more atomic.Bool
	more.Store(true)
	s := &stream{Topic: topic, Partitions: partitions, Min: 20_000, Max: 200_000, Pace: 100 * time.Millisecond, BatchSize: 100, More: more.Load}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	streamDone := s.start(ctx, mt.Topo.Clusters["east"], mt.Name+"-stream")
	p := startMirror(t, mt, "mirror", "--session-timeout", "6s")
	copied := func() float64 {
		n, _, _ := p.metric("drctl_mirror_records_total", `link="east->west"`)
		return n
	}
	kfaketest.WaitFor(t, 2*time.Minute, "the mirror copies", func() error {
		if n := copied(); n < 3000 {
			return fmt.Errorf("%.0f records copied", n)
		}
		return nil
	})

	// The target's broker crashes mid-copy: open transactions, progress
	// commits in flight.
	atKill, copiedAtKill := s.Produced.Load(), copied()
	killed := time.Now()
	killCluster(t, "west")
	startCluster(t, "west")
	westBack := time.Since(killed)
	before := copied()
	kfaketest.WaitFor(t, 3*time.Minute, "the mirror copies again after west's restart", func() error {
		if p.exited() {
			return fmt.Errorf("the mirror exited with %d:\n%s", p.code, p.tail(20))
		}
		if n := copied(); n <= before+1000 {
			return fmt.Errorf("%.0f records copied since west came back", n-before)
		}
		return nil
	})
	resumedIn := time.Since(killed)
	t.Logf("west SIGKILLed with %d records produced and %.0f copied; back in %v; the mirror copied again %v after the kill",
		atKill, copiedAtKill, westBack.Round(time.Millisecond), resumedIn.Round(time.Millisecond))

	more.Store(false)
	if err := streamDone(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	// The source's broker crashes while the mirror reads it.
	killed = time.Now()
	killCluster(t, "east")
	startCluster(t, "east")
	eastBack := time.Since(killed)
	catchUp := time.Now()
	waitCaughtUp(t, mt, 3*time.Minute)
	t.Logf("east SIGKILLed after the stream; back in %v; the mirror caught up %v later", eastBack.Round(time.Millisecond), time.Since(catchUp).Round(time.Millisecond))
	if p.exited() {
		t.Errorf("the mirror exited with %d across the broker crashes:\n%s", p.code, p.tail(20))
	}

	total, err := compareTopic(mt.dial(t, "east"), mt.dial(t, "west"), topic, partitions, eastID, false)
	if err != nil {
		t.Fatalf("after SIGKILLs of west and east: %v", err)
	}
	want := s.Produced.Load() - s.Aborted.Load()
	if int64(total) != want {
		t.Errorf("east holds %d committed records, the stream committed %d", total, want)
	}
	t.Logf("stream: %d records (%d committed transactions, %d aborted with %d records); west holds all %d committed records exactly once, in order: lost 0, duplicated 0",
		s.Produced.Load(), s.Committed.Load(), s.AbortedTx.Load(), s.Aborted.Load(), total)
}

// TestBrokerHungDuringDrainRealKafka: west's broker hangs (SIGSTOP) while
// a planned failover drains the mirror into it. The drain times out and
// rolls back: east is unfenced (app writes to it again), the roles are
// east active, steady, and nothing is lost: once west answers again
// (SIGCONT) the mirror copies every record, record by record.
func TestBrokerHungDuringDrainRealKafka(t *testing.T) {
	ft := newFoTopo(t, "hang", "10m", `{fence: acl, producer_principals: ["User:app"], drain_timeout: 8s, quiet_period: 1s}`)
	orders := ft.topic("orders")
	createTopic(t, "east", orders, 2, nil)
	prod := ft.mirrorTopo().producer(t, "east", "")
	send := func(from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: orders, Partition: int32(i % 2), Key: sarama.StringEncoder("k" + strconv.Itoa(i)),
				Value: sarama.StringEncoder("order-" + strconv.Itoa(i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(0, 200)
	eastCl := ft.dial(t, "east")
	eastID, err := kafkaconn.ClusterID(eastCl)
	if err != nil {
		t.Fatal(err)
	}
	startMirror(t, ft.mirrorTopo(), "mirror", "--session-timeout", "6s")
	ft.waitLinkCaught(t, "east", "west", 2*time.Minute)
	ft.waitStandbyFenced(t, "west", time.Minute)
	eastACLs := ft.acls(t, "east")

	var paused atomic.Bool
	resumed := make(chan struct{})
	t.Cleanup(func() {
		if paused.Load() {
			kafkaScript(t, 30*time.Second, "resume", "west")
		}
	})
	var hungAt time.Time
	fo := ft.run(t, 4*time.Minute, func(e plans.Event) {
		if e.Type != plans.EventStepStarted || e.Name != failover.StepDrain || paused.Load() {
			return
		}
		kafkaScript(t, 30*time.Second, "pause", "west")
		paused.Store(true)
		hungAt = time.Now()
		// West answers again after the drain timeout (8s) has passed:
		// the rollback's writes to it wait for it.
		go func() {
			time.Sleep(15 * time.Second)
			kafkaScript(t, 30*time.Second, "resume", "west")
			paused.Store(false)
			close(resumed)
		}()
	}, "failover", "--to", "west", "--yes")
	if !paused.Load() && hungAt.IsZero() {
		t.Fatalf("the failover never started its drain: %s", fo.timings())
	}
	select {
	case <-resumed:
	case <-time.After(time.Minute):
		t.Fatal("west was not resumed")
	}
	failed, _ := fo.failed()
	if fo.Code == 0 || failed.Name != failover.StepDrain || !strings.Contains(failed.Error, "drain timed out") {
		t.Fatalf("failover with west hung: exit %d, failed step %q: %s; want the drain to time out", fo.Code, failed.Name, failed.Error)
	}
	if !strings.Contains(failed.Error, "hung or very slow") && !strings.Contains(failed.Error, "could not be measured") {
		t.Errorf("the drain's error does not say that a broker held it: %s", failed.Error)
	}
	if !strings.Contains(failed.Error, "roles restored") || !strings.Contains(failed.Error, "removed the") {
		t.Errorf("the drain's rollback did not unfence east and restore the roles: %s", failed.Error)
	}
	t.Logf("west hung at the drain's start; the run ended %v later: %s", time.Since(hungAt).Round(time.Millisecond), firstLine(failed.Error))
	roles := foRoles(t, ft)
	if roles.Active != "east" || roles.Standby != "west" || roles.Phase != "steady" || roles.Run != nil {
		t.Errorf("roles after the rolled-back drain: %+v, want east active, steady", roles)
	}
	if d := diffACLs(ft.acls(t, "east"), eastACLs); d != "" {
		t.Errorf("east's ACLs after the rollback differ from before the run: %s", d)
	}
	if err := appProbe(t, "east", orders); err != nil {
		t.Errorf("app cannot write to east after the rollback: %v", err)
	}

	send(200, 100)
	ft.waitLinkCaught(t, "east", "west", 2*time.Minute)
	westCl := ft.dial(t, "west")
	kfaketest.WaitFor(t, time.Minute, "west holds east's records", func() error {
		n, err := sameTopic(eastCl, westCl, orders, eastID)
		if err == nil {
			t.Logf("west holds exactly east's %d records of %s, record by record: lost 0, duplicated 0", n, orders)
		}
		return err
	})
}
