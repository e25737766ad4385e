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

// TestFaultSourceBrokerKilled: the active's broker (east, the source of
// the mirror and of the stream) is SIGKILLed while a stream of plain and
// transactional records flows into it and `drctl mirror run` copies it,
// and started again. (fault_broker_test.go kills east once the stream has
// ended, and west, the target, mid-stream.) Batches the stream could not
// write while east was down are in doubt; whatever east holds, west holds
// exactly once, in order, with its provenance, and the same mirror process
// recovers by itself.
func TestFaultSourceBrokerKilled(t *testing.T) {
	const victim = "east"
	clock := newFoClock()
	const partitions = 4
	topic := uniqueName(t, "fk")
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
	// The mirror copies the stream as it comes: its transactions on west
	// are open all the time.
	kfaketest.WaitFor(t, 2*time.Minute, "the mirror copies the stream", func() error {
		if n := mirroredRecords(m); n < 500 {
			return fmt.Errorf("%.0f records copied", n)
		}
		return nil
	})
	clock.lap("setup: topic, mirror and stream running")

	copiedBefore := mirroredRecords(m)
	ackedBefore := s.ackedCount()
	logsBefore := len(m.logs())
	killCluster(t, victim)
	killed := time.Now()
	// It stays down while kafka.sh starts it again (the JVM's start-up, and
	// the old broker session expiring first: seconds, on a loaded machine
	// a minute): records keep arriving (or failing, on east) and the
	// mirror runs into the dead broker.
	clock.lap(victim + " killed (SIGKILL)")
	startCluster(t, victim)
	back := time.Now()
	outage := back.Sub(killed)
	clock.lap(victim + " started again")
	if m.exited() {
		t.Fatalf("the mirror exited with %d while %s was down:\n%s", m.code, victim, m.tail(30))
	}
	// Recovered: the mirror has copied everything east held when the
	// broker was back, and the stream writes again.
	mark := sourceEnds(t, mt, 2*time.Minute)
	waitMirroredPast(t, mt, mark, 4*time.Minute)
	recovered := time.Since(back)
	kfaketest.WaitFor(t, 2*time.Minute, "the stream writes again", func() error {
		if n := s.ackedCount(); n < ackedBefore+200 {
			return fmt.Errorf("%d records acknowledged, %d before the kill", n, ackedBefore)
		}
		return nil
	})
	clock.lap("mirror recovered by itself")
	halt()
	waitCaughtUp(t, mt, 3*time.Minute)
	clock.lap("stream stopped, mirror caught up")
	if m.exited() {
		t.Fatalf("the mirror exited with %d:\n%s", m.code, m.tail(30))
	}
	check := checkFaultCopy(t, mt, s, eastID)
	clock.lap("records compared")
	t.Logf("stream: %s", s.summary())
	t.Logf("%s SIGKILLed with the mirror at %.0f records copied (%d acknowledged by then); down for %v (kill to ready)",
		victim, copiedBefore, ackedBefore, outage.Round(time.Millisecond))
	t.Logf("time to recover: the same mirror process had copied everything east held when %s was ready again %v later (%v after the kill)",
		victim, recovered.Round(time.Millisecond), (outage + recovered).Round(time.Millisecond))
	warned := 0
	for _, e := range m.logs()[logsBefore:] {
		if lv := e.str("level"); lv == "WARN" || lv == "ERROR" {
			warned++
		}
	}
	t.Logf("the mirror logged %d warnings and errors from the kill on; the first: %s", warned, firstWarning(m, logsBefore))
	t.Logf("verdict: %s", check)
	t.Logf("phases:\n%s", clock.report())
}

// firstWarning renders the first warning or error the child logged from
// log index from on.
func firstWarning(p *mirrorProc, from int) string {
	e, _ := p.findLog(from, func(e logEntry) bool { lv := e.str("level"); return lv == "WARN" || lv == "ERROR" })
	if e == nil {
		return "(none)"
	}
	return fmt.Sprintf("%s: %s (err: %v)", e.str("level"), e.str("msg"), e["err"])
}
