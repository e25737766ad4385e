//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestMirrorVerifierRealKafka: drctl mirror run's verifier on real Kafka
// (mirror.verify full, a round every second). It proves a clean copy up to
// the mirrored position (its /metrics and drctl status); then, with the
// mirror stopped, a record is produced straight into the standby's topic,
// and the restarted mirror's verifier finds it on its partition, resuming
// from the stored watermark: drctl_verify_differences_total, drctl status's
// problems and its readiness (NOT READY: the standby differs) say so.
func TestMirrorVerifierRealKafka(t *testing.T) {
	prefix := uniqueName(t, "mv")
	mt := writeMirrorTopology(t, topicPattern(prefix))
	raw, err := os.ReadFile(mt.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mt.Path, append(raw, []byte("  verify: {mode: full, interval: 1s}\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	topic := prefix + ".a"
	createTopic(t, "east", topic, 2, nil)
	t.Cleanup(func() { deleteTopics(t, "west", topic) })
	produce := func(n int, tag string) {
		var msgs []*sarama.ProducerMessage
		for p := range int32(2) {
			for i := range n {
				msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: p, Key: sarama.StringEncoder(fmt.Sprintf("%s%d", tag, i)),
					Value: sarama.StringEncoder(fmt.Sprintf("%s %d/%d", tag, p, i))})
			}
		}
		if err := mt.producer(t, "east", "").SendMessages(msgs); err != nil {
			t.Fatal(err)
		}
	}
	produce(100, "a")
	status := func() *inspect.Status {
		r := runDrctl(t, []string{passwordVar + "=" + env.Password}, "-c", mt.Path, "-o", "json", "status")
		var st inspect.Status
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
			t.Fatalf("drctl status: exit %d, %v\n%s", r.code, err, r.stderr)
		}
		return &st
	}
	link := `link="east->west"`

	proc := startMirror(t, mt, "mirror")
	kfaketest.WaitFor(t, 2*time.Minute, "both partitions proven up to 100", func() error {
		v, ok, err := proc.metric("drctl_verify_proven_offset", link, `topic="`+topic+`"`)
		if err != nil || !ok || v != 200 {
			return fmt.Errorf("sum of drctl_verify_proven_offset %v (%v, %v)", v, ok, err)
		}
		return nil
	})
	if st := status(); st.Mirror == nil || st.Mirror.Proof == nil || st.Mirror.Proof.Partitions != 2 || st.Mirror.Proof.Records != 200 || st.Mirror.Proof.Differences != 0 {
		t.Errorf("status of a clean mirror: proof %+v", st.Mirror)
	}
	proc.signal(syscall.SIGTERM)
	if _, err := proc.waitExit(30 * time.Second); err != nil {
		t.Fatal(err)
	}

	_, rogueAt, err := mt.producer(t, "west", "").SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 1, Value: sarama.StringEncoder("not from east")})
	if err != nil {
		t.Fatal(err)
	}
	produce(20, "b")
	proc = startMirror(t, mt, "mirror-2")
	kfaketest.WaitFor(t, 2*time.Minute, "the record on the standby found, partition 0 proven up to 120", func() error {
		d, _, err := proc.metric("drctl_verify_differences_total", link, `topic="`+topic+`"`, `partition="1"`)
		if err != nil {
			return err
		}
		p0, _, err := proc.metric("drctl_verify_proven_offset", link, `topic="`+topic+`"`, `partition="0"`)
		if err != nil || d != 1 || p0 != 120 {
			return fmt.Errorf("differences on partition 1: %v; partition 0 proven to %v (%v)", d, p0, err)
		}
		return nil
	})
	if c, _, err := proc.metric("drctl_verify_records_total", link, `topic="`+topic+`"`); err != nil || c != 40 {
		t.Errorf("the restarted verifier compared %v records (%v), want the 40 new ones: it resumes from the stored watermark", c, err)
	}
	st := status()
	want := fmt.Sprintf("the standby differs from the source: the mirror's verifier found 1 difference(s) on 1 partition(s): %s/1 (unexpected: source offset -1, standby offset %d", topic, rogueAt)
	if !slices.ContainsFunc(st.Problems, func(p string) bool { return strings.Contains(p, want) }) {
		t.Errorf("status problems %q do not say %q", st.Problems, want)
	}
	if st.Readiness.Level != inspect.NotReady || !slices.ContainsFunc(st.Readiness.Reasons, func(r string) bool { return strings.HasPrefix(r, "the standby differs") }) {
		t.Errorf("readiness %+v: want NOT READY, the standby differs", st.Readiness)
	}
}
