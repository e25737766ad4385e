package failover

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

// bigRecordBytes is a record larger than sarama's and Kafka's default
// limits (1,000,000 and 1,048,588 bytes), in a topic that allows 6 MiB.
const (
	bigRecordBytes = 4_000_000
	bigTopicLimit  = "6291456"
)

// produceLarge writes values to partition 0 of topic on cluster, in order,
// with a producer whose limit fits bigRecordBytes.
func produceLarge(t *testing.T, topo *topology.Topology, cluster, topic string, values ...[]byte) {
	t.Helper()
	cfg, err := topo.Clusters[cluster].SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.MaxMessageBytes = 8 << 20
	prod, err := sarama.NewSyncProducer(topo.Clusters[cluster].Bootstrap, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for _, v := range values {
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.ByteEncoder(v)}); err != nil {
			t.Fatalf("produce %d bytes to %s on %s: %v", len(v), topic, cluster, err)
		}
	}
}

// salvagedOffsetsIn returns the stale offsets (topology.HeaderSalvagedOffset) of the
// records in partition 0 of the quarantine topic, in the order they are
// there, and their values by offset.
func salvagedOffsetsIn(t *testing.T, cl sarama.Client, into string) ([]int64, map[int64][]byte) {
	t.Helper()
	recs, err := readCommitted(cl, into, 0)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	vals := map[int64][]byte{}
	for _, r := range recs {
		for _, h := range r.Headers {
			if string(h.Key) == topology.HeaderSalvagedOffset && len(h.Value) == 8 {
				off := int64(binary.BigEndian.Uint64(h.Value))
				offs = append(offs, off)
				vals[off] = r.Value
			}
		}
	}
	return offs, vals
}

func topicConfig(t *testing.T, cl sarama.Client, topic, name string) string {
	t.Helper()
	entries, err := kfaketest.Admin(t, cl).DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{name}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// TestSalvageLargeRecord: a 4,000,000-byte record in a topic that allows
// 6 MiB, never mirrored, is salvaged whole between two small ones: the
// quarantine topic takes the source topic's max.message.bytes, and the
// salvage's producer is not held to sarama's default 1,000,000 bytes.
func TestSalvageLargeRecord(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: "failover: {fence: none, drain_timeout: 30s}\n"})
	topo := p.Topology
	kfaketest.CreateTopic(t, topo, "east", "orders", 1, map[string]string{"max.message.bytes": bigTopicLimit})
	big := bytes.Repeat([]byte{'x'}, bigRecordBytes)
	produceLarge(t, topo, "east", "orders", []byte("before"), big, []byte("after"))

	rep, err := Salvage(kfaketest.Ctx(t, time.Minute), kfaketest.Session(t, topo), "east", "west")
	if err != nil {
		t.Fatalf("salvage of a record over 1 MB: %v", err)
	}
	if rep.Records != 3 {
		t.Errorf("salvaged %d record(s), want 3", rep.Records)
	}
	west := kfaketest.Dial(t, topo, "west")
	into := topo.SalvageTopic("orders")
	offs, vals := salvagedOffsetsIn(t, west, into)
	if !slices.Equal(offs, []int64{0, 1, 2}) {
		t.Errorf("the quarantine holds east's offsets %v, want [0 1 2]", offs)
	}
	if !bytes.Equal(vals[1], big) {
		t.Errorf("the large record's value in quarantine has %d bytes, want %d", len(vals[1]), len(big))
	}
	if got, _ := strconv.Atoi(topicConfig(t, west, into, "max.message.bytes")); got < 6291456 {
		t.Errorf("the quarantine topic's max.message.bytes is %d, want at least the source topic's %s", got, bigTopicLimit)
	}
}

// TestSalvageResumesFromWhatItVerified: a quarantine partition that holds
// the record after one that was never written (an earlier salvage whose
// batch lost its large record and delivered the next one) does not make a
// resumed salvage skip the missing record: it salvages every offset the
// quarantine does not hold, and counts what it wrote and read back.
func TestSalvageResumesFromWhatItVerified(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: "failover: {fence: none, drain_timeout: 30s}\n"})
	topo := p.Topology
	kfaketest.CreateTopic(t, topo, "east", "orders", 1, map[string]string{"max.message.bytes": bigTopicLimit})
	big := bytes.Repeat([]byte{'y'}, bigRecordBytes)
	produceLarge(t, topo, "east", "orders", []byte("before"), big, []byte("after"))

	// What an earlier salvage left: offsets 0 and 2 in quarantine, 1 not.
	east := kfaketest.Dial(t, topo, "east")
	info, err := kafkaread.Topic(kfaketest.Ctx(t, 10*time.Second), east, "orders")
	if err != nil {
		t.Fatal(err)
	}
	into := topo.SalvageTopic("orders")
	kfaketest.CreateTopic(t, topo, "west", into, 1, nil)
	var msgs []*sarama.ProducerMessage
	for _, off := range []int64{0, 2} {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(off))
		msgs = append(msgs, &sarama.ProducerMessage{Topic: into, Value: sarama.StringEncoder("earlier"), Headers: []sarama.RecordHeader{
			headerOf(topology.HeaderSalvagedFrom, "kfake-east"), {Key: []byte(topology.HeaderSalvagedOffset), Value: b[:]}, headerOf(topology.HeaderSalvagedTopicID, info.ID)}})
	}
	if err := kfaketest.IdempotentProducer(t, topo.Clusters["west"], "").SendMessages(msgs); err != nil {
		t.Fatal(err)
	}

	rep, err := Salvage(kfaketest.Ctx(t, time.Minute), kfaketest.Session(t, topo), "east", "west")
	if err != nil {
		t.Fatalf("resumed salvage: %v", err)
	}
	west := kfaketest.Dial(t, topo, "west")
	offs, vals := salvagedOffsetsIn(t, west, into)
	slices.Sort(offs)
	if !slices.Equal(offs, []int64{0, 1, 2}) {
		t.Errorf("after the resumed salvage the quarantine holds east's offsets %v, want [0 1 2]: offset 1 was skipped", offs)
	}
	if !bytes.Equal(vals[1], big) {
		t.Errorf("the large record's value in quarantine has %d bytes, want %d", len(vals[1]), len(big))
	}
	if rep.Records != 3 {
		t.Errorf("salvaged %d record(s), want the 3 that are in quarantine", rep.Records)
	}
}

// failProduceTo makes c answer every produce request that writes to topic
// with code (every partition of the request) until the returned stop is
// called.
func failProduceTo(c *kfake.Cluster, topic string, code int16) (stop func()) {
	var stopped atomic.Bool
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if stopped.Load() {
			c.DropControl()
			return nil, nil, false
		}
		c.KeepControl()
		pr := req.(*kmsg.ProduceRequest)
		if !slices.ContainsFunc(pr.Topics, func(rt kmsg.ProduceRequestTopic) bool { return rt.Topic == topic }) {
			return nil, nil, false
		}
		resp := pr.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range pr.Topics {
			rtr := kmsg.NewProduceResponseTopic()
			rtr.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				prr := kmsg.NewProduceResponseTopicPartition()
				prr.Partition = rp.Partition
				prr.ErrorCode = code
				rtr.Partitions = append(rtr.Partitions, prr)
			}
			resp.Topics = append(resp.Topics, rtr)
		}
		return resp, nil, true
	})
	return func() { stopped.Store(true) }
}

// TestSalvageStopsOnARecordItCannotWrite: a quarantine topic the active
// refuses (authorization) stops the salvage with the cause, the record and
// the fix; nothing is counted as salvaged.
func TestSalvageStopsOnARecordItCannotWrite(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: "failover: {fence: none, drain_timeout: 30s}\n"})
	topo := p.Topology
	kfaketest.CreateTopic(t, topo, "east", "orders", 1, nil)
	produceLarge(t, topo, "east", "orders", []byte("one"), []byte("two"))
	into := topo.SalvageTopic("orders")
	failProduceTo(p.West, into, kerr.TopicAuthorizationFailed.Code)

	rep, err := Salvage(kfaketest.Ctx(t, time.Minute), kfaketest.Session(t, topo), "east", "west")
	if err == nil {
		t.Fatalf("salvage into a topic the active refuses succeeded: %+v", rep)
	}
	if _, ok := errors.AsType[*QuarantineError](err); !ok {
		t.Fatalf("error %v is not a QuarantineError", err)
	}
	if !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Errorf("error %v does not wrap the broker's cause", err)
	}
	for _, want := range []string{"orders/0", "offset 0", into, "authoriz", "WRITE", "nothing was wiped"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// TestUnplannedRunSalvagesALargeLastRecord: the last record east holds
// that never reached west is 4,000,000 bytes (its topic allows 6 MiB).
// The unplanned run stops while east is down; once east is back, a resume
// whose salvage west refuses (authorization) stops before the wipe with
// the cause and the way out, leaves east's records in place, and then
// finishes: through quarantine once west takes the records, or through
// files with --salvage-to while it does not. Either way both records of
// the RPO are salvaged whole and counted, and the run ends steady.
func TestUnplannedRunSalvagesALargeLastRecord(t *testing.T) {
	for _, way := range []string{"quarantine", "salvage-to"} {
		t.Run(way, func(t *testing.T) {
			p := kfaketest.NewPair(t, kfaketest.Options{Persist: true, Mirror: ordersBillingYAML, Extra: "failover: {fence: none, drain_timeout: 30s}\n"})
			topo := p.Topology
			kfaketest.CreateTopic(t, topo, "east", "orders", 1, map[string]string{"max.message.bytes": bigTopicLimit})
			produceLarge(t, topo, "east", "orders", []byte("mirrored"))
			startMirror(t, topo, "east", "west")
			waitMirrored(t, topo, "east", "west")
			refuseOrders(p.West)
			big := bytes.Repeat([]byte{'z'}, bigRecordBytes)
			produceLarge(t, topo, "east", "orders", []byte("small"), big)
			west := kfaketest.Dial(t, topo, "west")
			kfaketest.Wait(t, 20*time.Second, "the mirror observed the 2 records it cannot copy", func() (bool, string) {
				seen, err := linkstate.LastObserved(kfaketest.Ctx(t, 10*time.Second), west, topo.Link("east", "west"))
				if err != nil {
					return false, err.Error()
				}
				o := seen[topology.TopicPartition{Topic: "orders", Partition: 0}]
				return o.End-o.Mirrored == 2, fmt.Sprintf("%+v", o)
			})
			p.Stop("east")
			p.West.DropControl()

			plan, err := PlanFailover(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), FailoverRequest{To: "west", Mode: Unplanned})
			if err != nil {
				t.Fatal(err)
			}
			journal := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := Execute(ctx, kfaketest.Session(t, topo), plan, RunOptions{JournalDir: journal, Yes: true}); !errors.Is(err, kafkaconn.ErrUnreachable) {
				t.Fatalf("the unplanned run should stop at east while it is down; got %v", err)
			}
			p.Restart(t, "east")

			into := topo.SalvageTopic("orders")
			allow := failProduceTo(p.West, into, kerr.TopicAuthorizationFailed.Code)
			err = Resume(ctx, kfaketest.Session(t, topo), plan.ID, RunOptions{JournalDir: journal, Yes: true})
			if _, ok := errors.AsType[*QuarantineError](err); !ok {
				t.Fatalf("resume while west refuses the quarantine: got %v, want a QuarantineError", err)
			}
			for _, want := range []string{"offset 1", "not authorized", "nothing was wiped", "drctl resume " + plan.ID + " --salvage-to DIR"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if recs := kfaketest.Records(t, kfaketest.Dial(t, topo, "east"), "orders", 0, 0); len(recs) != 3 {
				t.Fatalf("east's orders holds %d record(s) after the failed salvage, want all 3: the wipe ran", len(recs))
			}
			if st := snapshotOf(t, topo, "west").State; st.Phase != rolestate.PhaseWiping {
				t.Errorf("phase after the failed salvage: %s, want wiping", st.Phase)
			}

			o := RunOptions{JournalDir: journal, Yes: true}
			if way == "salvage-to" {
				o.SalvageTo = t.TempDir()
			} else {
				allow()
			}
			if err := Resume(ctx, kfaketest.Session(t, topo), plan.ID, o); err != nil {
				t.Fatalf("resume (%s): %v", way, err)
			}
			var rep SalvageReport
			if err := jsonUnmarshal(outputOf(t, journal, plan.ID, StepSalvage), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Records != 2 {
				t.Errorf("salvaged %d record(s), want the 2 of the RPO", rep.Records)
			}
			got := map[int64][]byte{}
			if way == "salvage-to" {
				if len(rep.Partitions) != 1 || !strings.HasPrefix(rep.Partitions[0].Into, filepath.Join(o.SalvageTo, "east", "orders")) {
					t.Fatalf("salvaged into %+v, want one file under %s", rep.Partitions, o.SalvageTo)
				}
				f, err := os.Open(rep.Partitions[0].Into)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				dec := json.NewDecoder(f)
				for dec.More() {
					var r SalvagedRecord
					if err := dec.Decode(&r); err != nil {
						t.Fatal(err)
					}
					got[r.Offset] = r.Value
				}
			} else {
				_, got = salvagedOffsetsIn(t, west, into)
			}
			if len(got) != 2 || string(got[1]) != "small" || !bytes.Equal(got[2], big) {
				t.Errorf("salvaged offsets %v (the large one %d bytes), want 1 (small) and 2 (%d bytes)", slices.Sorted(maps.Keys(got)), len(got[2]), len(big))
			}
			st, _ := inspect.CollectStatus(ctx, kfaketest.Session(t, topo))
			if st.Roles.Active != "west" || st.Roles.Phase != "steady" {
				t.Errorf("roles after the resumed run: %+v", st.Roles)
			}
		})
	}
}
