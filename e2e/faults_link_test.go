//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestFaultSourceLinkCut: the link between the mirror and the source is
// cut for 30 s, longer than every client timeout (the topology's 5 s
// timeout, sarama's request and metadata retries), and restored, while a
// stream flows into east. Nothing is lost or duplicated, and the same
// mirror process recovers by itself.
//
// How the link is cut: east's broker JVM is SIGSTOPed and SIGCONTed. Its
// sockets stay open and the kernel still accepts connections and data, but
// no request is ever answered: to the mirror this is a network partition
// that drops every reply (a black hole), not a refused connection. It also
// cuts east off from the stream's producers, whose batches fail and are
// written off as in doubt. A TCP proxy between the mirror and east would
// cut the mirror alone, but a Kafka client only uses the bootstrap address
// to learn the broker's advertised address, and e2e/kafka.sh's listeners
// advertise the broker's own ports: every connection after the first would
// go around the proxy.
func TestFaultSourceLinkCut(t *testing.T) {
	clock := newFoClock()
	const (
		partitions = 4
		cut        = 30 * time.Second
	)
	topic := uniqueName(t, "fl")
	mt := writeMirrorTopology(t, topicPattern(topic))
	createTopic(t, "east", topic, partitions, nil)
	t.Cleanup(func() { deleteTopics(t, "west", topic) })
	eastID, err := kafkaconn.ClusterID(mt.dial(t, "east"))
	if err != nil {
		t.Fatal(err)
	}
	m := startMirror(t, mt, "mirror")
	s := &faultStream{Topic: topic, Partitions: partitions, Pace: 50 * time.Millisecond, BatchSize: 20}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	halt := s.start(ctx, mt.Topo.Clusters["east"], mt.Name+"-stream")
	defer halt()
	kfaketest.WaitFor(t, 2*time.Minute, "the mirror copies the stream", func() error {
		if n := mirroredRecords(m); n < 300 {
			return fmt.Errorf("%.0f records copied", n)
		}
		return nil
	})
	clock.lap("setup: topic, mirror and stream running")

	copiedBefore := mirroredRecords(m)
	ackedBefore := s.ackedCount()
	logsBefore := len(m.logs())
	h := hangBroker(t, "east")
	// The cut itself lasts a fixed time: that is the fault. Meanwhile the
	// mirror must copy nothing (it cannot read east) and stay up.
	cutEnds := time.Now().Add(cut)
	for time.Now().Before(cutEnds) {
		if m.exited() {
			t.Fatalf("the mirror exited with %d during the cut:\n%s", m.code, m.tail(30))
		}
		time.Sleep(time.Second)
	}
	copiedDuring := mirroredRecords(m) - copiedBefore
	h.resume(t)
	clock.lap(fmt.Sprintf("link cut for %v (east SIGSTOPed)", cut))

	mark := sourceEnds(t, mt, 2*time.Minute)
	waitMirroredPast(t, mt, mark, 4*time.Minute)
	recovered := time.Since(h.resumed)
	kfaketest.WaitFor(t, 2*time.Minute, "the stream writes again", func() error {
		if n := s.ackedCount(); n < ackedBefore+200 {
			return fmt.Errorf("%d records acknowledged, %d before the cut", n, ackedBefore)
		}
		return nil
	})
	clock.lap("link restored, mirror recovered by itself")
	halt()
	waitCaughtUp(t, mt, 3*time.Minute)
	if m.exited() {
		t.Fatalf("the mirror exited with %d:\n%s", m.code, m.tail(30))
	}
	check := checkFaultCopy(t, mt, s, eastID)
	clock.lap("stream stopped, mirror caught up, records compared")
	t.Logf("stream: %s", s.summary())
	t.Logf("cut for %v with the mirror at %.0f records copied; it copied %.0f records during the cut (what it had fetched before)",
		h.resumed.Sub(h.at).Round(time.Millisecond), copiedBefore, copiedDuring)
	t.Logf("time to recover: the same mirror process had copied everything east held at the restore %v after it", recovered.Round(time.Millisecond))
	t.Logf("the mirror logged during and after the cut: %s", firstWarning(m, logsBefore))
	t.Logf("verdict: %s", check)
	t.Logf("phases:\n%s", clock.report())
}
