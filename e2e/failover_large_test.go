//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
	"github.com/drctl/drctl/topology"
)

// largeRecordBytes is the last record east holds that never reached west:
// larger than Kafka's and sarama's default limits (1,048,588 and
// 1,000,000 bytes).
const largeRecordBytes = 4_000_000

// largeValue is largeRecordBytes that gzip shrinks to a few KiB, with a
// head and a tail of its own, so that a truncated or shifted copy differs.
func largeValue() []byte {
	v := bytes.Repeat([]byte("never mirrored;"), largeRecordBytes/15+1)[:largeRecordBytes]
	copy(v, "head:")
	copy(v[len(v)-5:], ":tail")
	return v
}

// largeLast is an unplanned failover to west stopped at fence-stale while
// east was down, whose RPO is two records of partition 0 of orders: a
// small one, then a large one (the last record that never reached west).
// East is back up.
type largeLast struct {
	ft             *foTopo
	orders         string
	eastID, westID string
	runID          string
	// east is what orders held on east before it went down: the mirrored
	// record (offset 0), "small" (1) and the large one (2).
	east  []kafkaread.Record
	large []byte
	clock *foClock
}

// unplannedWithLargeLast builds a largeLast: orders is created on east
// with topicConfigs (nil: the broker's defaults) and written by a producer
// with codec; the mirror runs throughout.
//
// How the two records stay unmirrored while the mirror observes them (the
// RPO is computed from the ends it records on west): the test pauses the
// link east->west as an unplanned drill does (linkstate.PutPause at the
// current epoch): the mirror copies nothing but goes on recording the
// source's ends. The pause holds only at that epoch, so the failover's
// flip ends it and the new link west->east copies normally.
func unplannedWithLargeLast(t *testing.T, kind string, codec sarama.CompressionCodec, topicConfigs map[string]*string) *largeLast {
	t.Helper()
	x := &largeLast{clock: newFoClock(), large: largeValue()}
	x.ft = newFoTopo(t, kind, "1s", `{fence: acl, producer_principals: ["User:app"], drain_timeout: 1m, quiet_period: 1s}`)
	ft := x.ft
	x.orders = ft.topic("orders")
	createTopic(t, "east", x.orders, 1, topicConfigs)
	eastCl, westCl := ft.dial(t, "east"), ft.dial(t, "west")
	var err error
	if x.eastID, err = kafkaconn.ClusterID(eastCl); err != nil {
		t.Fatal(err)
	}
	if x.westID, err = kafkaconn.ClusterID(westCl); err != nil {
		t.Fatal(err)
	}
	startMirror(t, ft.mirrorTopo(), "mirror", "--session-timeout", "6s")
	prod := salvageProducer(t, "east", codec)
	send := func(v []byte) {
		t.Helper()
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: x.orders, Value: sarama.ByteEncoder(v)}); err != nil {
			t.Fatalf("produce %d bytes to %s on east: %v", len(v), x.orders, err)
		}
	}
	send([]byte("mirrored"))
	ft.waitLinkCaught(t, "east", "west", time.Minute)
	x.clock.lap("setup; 1 record mirrored")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	link := ft.Topo.Link("east", "west")
	now := time.Now().UTC()
	pause := linkstate.Pause{Topology: ft.Name, Source: "east", Target: "west", Epoch: foRoles(t, ft).Epoch,
		ID: "e2e-" + ft.Name, Holder: "e2e", At: now, Until: now.Add(10 * time.Minute)}
	if err := linkstate.PutPause(ctx, map[string]sarama.Client{"east": eastCl, "west": westCl}, pause); err != nil {
		t.Fatal(err)
	}
	tp := topology.TopicPartition{Topic: x.orders, Partition: 0}
	observed := func(want string, ok func(linkstate.Observed) bool) {
		t.Helper()
		kfaketest.WaitFor(t, 30*time.Second, want, func() error {
			seen, err := linkstate.LastObserved(ctx, westCl, link)
			if err != nil {
				return err
			}
			if o := seen[tp]; !ok(o) {
				return fmt.Errorf("observed %+v", o)
			}
			return nil
		})
	}
	observed("the mirror holds the pause", func(o linkstate.Observed) bool { return o.Paused == pause.ID })
	send([]byte("small"))
	send(x.large)
	observed("the mirror observed the 2 records it does not copy", func(o linkstate.Observed) bool {
		return o.Paused == pause.ID && o.Mirrored == 1 && o.End == 3
	})
	if x.east, err = readPartition(ctx, eastCl, x.orders, 0); err != nil || len(x.east) != 3 || !bytes.Equal(x.east[2].Value, x.large) {
		t.Fatalf("east's %s: %d record(s) (%v), want 3, the last the %d-byte one", x.orders, len(x.east), err, largeRecordBytes)
	}
	x.clock.lap("2 records on east the mirror observed and did not copy")

	killCluster(t, "east")
	x.clock.lap("kafka.sh kill east")
	fo := ft.run(t, 3*time.Minute, nil, "failover", "--to", "west", "--unplanned", "--yes")
	x.clock.lap("drctl failover --to west --unplanned (until it stops)")
	if len(fo.Events) > 0 {
		x.runID = fo.Events[0].RunID
	}
	if failed, ok := fo.failed(); fo.Code == 0 || !ok || failed.Name != failover.StepFenceStale || x.runID == "" {
		t.Fatalf("the unplanned run should stop at %s while east is down: exit %d, run %q, failed step %q (%s)", failover.StepFenceStale, fo.Code, x.runID, failed.Name, failed.Error)
	}
	rpoDone, ok := fo.stepDone(runrecord.StepRPO)
	if !ok {
		t.Fatalf("no %s step in the run:\n%s", runrecord.StepRPO, fo.timings())
	}
	var rpo inspect.RPOReport
	if err := json.Unmarshal(rpoDone.Outputs, &rpo); err != nil {
		t.Fatalf("%s outputs %s: %v", runrecord.StepRPO, rpoDone.Outputs, err)
	}
	if rpo.Records != 2 || len(rpo.Partitions) != 1 || rpo.Partitions[0].Topic != x.orders || rpo.Partitions[0].Records != 2 {
		t.Errorf("reported RPO %+v, want 2 records, all of %s/0", rpo, x.orders)
	}
	if roles := foRoles(t, ft); roles.Active != "west" || roles.Run == nil {
		t.Fatalf("roles while east is down: %+v, want west active, the run in progress", roles)
	}
	startCluster(t, "east")
	x.clock.lap("kafka.sh start east")
	return x
}

// eastUnchanged checks that east still holds what it held before it went
// down, record by record: nothing was wiped.
func (x *largeLast) eastUnchanged(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := readPartition(ctx, x.ft.dial(t, "east"), x.orders, 0)
	if err != nil {
		t.Fatalf("east's %s after the failed salvage: %v (the wipe ran?)", x.orders, err)
	}
	same := len(got) == len(x.east)
	for i := 0; same && i < len(got); i++ {
		g, w := got[i], x.east[i]
		same = g.Offset == w.Offset && sameBytes(g.Key, w.Key) && sameBytes(g.Value, w.Value) && g.Timestamp.Equal(w.Timestamp)
	}
	if !same {
		t.Fatalf("east's %s after the failed salvage holds %d record(s), want its %d as they were (the wipe ran?)", x.orders, len(got), len(x.east))
	}
}

// maxMessageBytesOf returns topic's max.message.bytes (0 when unknown).
func maxMessageBytesOf(t *testing.T, admin sarama.ClusterAdmin, topic string) int {
	t.Helper()
	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{"max.message.bytes"}})
	if err != nil {
		t.Fatalf("describe %s: %v", topic, err)
	}
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Value); e.Name == "max.message.bytes" && err == nil {
			return n
		}
	}
	return 0
}

// salvaged decodes the salvage step's report of a run.
func salvaged(t *testing.T, r *foRun) failover.SalvageReport {
	t.Helper()
	done, ok := r.stepDone(failover.StepSalvage)
	if !ok {
		t.Fatalf("the run did no %s step:\n%s", failover.StepSalvage, r.timings())
	}
	var rep failover.SalvageReport
	if err := json.Unmarshal(done.Outputs, &rep); err != nil {
		t.Fatalf("%s outputs %s: %v", failover.StepSalvage, done.Outputs, err)
	}
	t.Logf("salvage: %s", done.Summary)
	return rep
}

// steadyAndReseeded checks that the run ended with west active, steady,
// and east, re-seeded by the new link, holding exactly west's orders.
func (x *largeLast) steadyAndReseeded(t *testing.T) {
	t.Helper()
	if roles := foRoles(t, x.ft); roles.Active != "west" || roles.Standby != "east" || roles.Phase != rolestate.PhaseSteady || roles.Run != nil {
		t.Errorf("roles after the resumed run: %+v, want west active, east standby, steady, no run", roles)
	}
	if n, err := sameTopic(x.ft.dial(t, "west"), x.ft.dial(t, "east"), x.orders, x.westID); err != nil {
		t.Errorf("east after the reseed: %v", err)
	} else {
		t.Logf("east's %s holds exactly west's %d record(s)", x.orders, n)
	}
}

// TestUnplannedLargeLastRecordRealKafka: orders allows 6 MiB
// (max.message.bytes), and the last record east holds that never reached
// west is 4,000,000 bytes. East dies; the unplanned failover flips the
// roles on west and stops at fence-stale; when east is back, `drctl
// resume` finishes: the salvage writes both records of the RPO into the
// quarantine topic (created with orders' limit plus room for its
// headers), the large one byte for byte, key, timestamp, stale cluster
// and offset as they were, and counts 2; the run ends steady with west
// active, and east, wiped and re-seeded, holds exactly west's records. The
// new link then copies another record of that size from west to east.
func TestUnplannedLargeLastRecordRealKafka(t *testing.T) {
	limit := "6291456"
	x := unplannedWithLargeLast(t, "large", sarama.CompressionNone, map[string]*string{"max.message.bytes": &limit})
	ft := x.ft

	rs := ft.run(t, 4*time.Minute, nil, "resume", "--yes")
	x.clock.lap("drctl resume (fence-stale..finish)")
	if rs.Code != 0 || rs.outcome().Outcome != plans.OutcomeSucceeded {
		t.Fatalf("resume: exit %d, outcome %q: %s", rs.Code, rs.outcome().Outcome, rs.outcome().Error)
	}
	rep := salvaged(t, rs)
	quarantine := ft.Topo.SalvageTopic(x.orders)
	if rep.Records != 2 || len(rep.Partitions) != 1 || rep.Partitions[0].Into != quarantine || rep.Partitions[0].Records != 2 {
		t.Errorf("salvage report %+v, want the 2 records of the RPO, all into %s", rep, quarantine)
	}
	westCl := ft.dial(t, "west")
	westAdmin, err := sarama.NewClusterAdminFromClient(westCl)
	if err != nil {
		t.Fatal(err)
	}
	if got := maxMessageBytesOf(t, westAdmin, quarantine); got < 6291456+1024 {
		t.Errorf("%s's max.message.bytes is %d, want at least orders' %s plus 1 KiB", quarantine, got, limit)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := readPartition(ctx, westCl, quarantine, 0)
	if err != nil {
		t.Fatalf("read %s on west: %v", quarantine, err)
	}
	if len(got) != 2 {
		t.Fatalf("%s/0 on west holds %d record(s), want the 2 east never mirrored", quarantine, len(got))
	}
	for i, r := range got {
		want := x.east[1+i]
		from, off := salvagedFrom(r)
		if !sameBytes(r.Value, want.Value) || !sameBytes(r.Key, want.Key) || !r.Timestamp.Equal(want.Timestamp) || from != x.eastID || off != want.Offset {
			t.Errorf("%s record %d: %d bytes (key %q, %v), salvaged from %q offset %d; want east's offset %d as it was: %d bytes (key %q, %v), from %s",
				quarantine, i, len(r.Value), r.Key, r.Timestamp, from, off, want.Offset, len(want.Value), want.Key, want.Timestamp, x.eastID)
		}
	}
	x.steadyAndReseeded(t)
	x.clock.lap("checks")

	// The new link copies a record of that size too.
	prod := salvageProducer(t, "west", sarama.CompressionNone)
	if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: x.orders, Value: sarama.ByteEncoder(x.large)}); err != nil {
		t.Fatalf("produce %d bytes to %s on west: %v", len(x.large), x.orders, err)
	}
	ft.waitLinkCaught(t, "west", "east", time.Minute)
	if n, err := sameTopic(westCl, ft.dial(t, "east"), x.orders, x.westID); err != nil || n != 2 {
		t.Errorf("east after west wrote a %d-byte record: %d record(s) compared, %v", len(x.large), n, err)
	}
	x.clock.lap("a 4,000,000-byte record written on west, copied to east")
	t.Logf("timings:\n%s", x.clock.report())
}

// TestSalvageToDirWayOutRealKafka: the way out when the quarantine cannot
// take a record. orders is at the broker's default max.message.bytes
// (1,048,588) and its last unmirrored record is 4,000,000 bytes that fit
// only gzip'd: the salvage writes records uncompressed, so the quarantine
// topic (created with orders' limit plus 1 KiB) refuses it. The resumed
// run stops at the salvage, before the wipe, with an error that names the
// record, "too large", the limit to raise, "nothing was wiped" and
// `drctl resume <id> --salvage-to DIR`; east keeps every record and the
// run stays in phase wiping. That command, as the error spells it,
// finishes the run: the salvage step completes before the wipe starts,
// the file under DIR holds both records of the RPO (the large one byte
// for byte), and the run ends steady with east re-seeded.
func TestSalvageToDirWayOutRealKafka(t *testing.T) {
	x := unplannedWithLargeLast(t, "salvageto", sarama.CompressionGZIP, nil)
	ft := x.ft

	rs := ft.run(t, 4*time.Minute, nil, "resume", "--yes")
	x.clock.lap("drctl resume (stops at the salvage)")
	failed, ok := rs.failed()
	if rs.Code == 0 || !ok || failed.Name != failover.StepSalvage {
		t.Fatalf("resume with a record the quarantine cannot take: exit %d, failed step %q (%s), want the %s step to fail", rs.Code, failed.Name, failed.Error, failover.StepSalvage)
	}
	quarantine := ft.Topo.SalvageTopic(x.orders)
	wayOut := "drctl resume " + x.runID + " --salvage-to DIR"
	for _, want := range []string{x.orders + "/0", "offset 2", quarantine, "too large", "max.message.bytes", "nothing was wiped", wayOut} {
		if !strings.Contains(failed.Error, want) {
			t.Errorf("the salvage's error does not say %q:\n%s", want, failed.Error)
		}
	}
	if !strings.Contains(rs.Stderr, wayOut) {
		t.Errorf("drctl resume does not show the operator %q; stderr:\n%s", wayOut, rs.Stderr)
	}
	if slices.ContainsFunc(rs.Events, func(e plans.Event) bool { return e.Name == runrecord.StepWipe }) {
		t.Errorf("the wipe started after the failed salvage:\n%s", rs.timings())
	}
	x.eastUnchanged(t)
	if roles := foRoles(t, ft); roles.Active != "west" || roles.Phase != rolestate.PhaseWiping || roles.Run == nil {
		t.Errorf("roles after the failed salvage: %+v, want west active, phase wiping, the run in progress", roles)
	}
	x.clock.lap("checks of the failed salvage")

	dir := t.TempDir()
	out := ft.run(t, 4*time.Minute, nil, "resume", x.runID, "--salvage-to", dir, "--yes")
	x.clock.lap("drctl resume ID --salvage-to DIR (salvage..finish)")
	if out.Code != 0 || out.outcome().Outcome != plans.OutcomeSucceeded {
		t.Fatalf("resume --salvage-to: exit %d, outcome %q: %s", out.Code, out.outcome().Outcome, out.outcome().Error)
	}
	salvageAt := slices.IndexFunc(out.Events, func(e plans.Event) bool { return e.Type == plans.EventStepDone && e.Name == failover.StepSalvage })
	wipeAt := slices.IndexFunc(out.Events, func(e plans.Event) bool { return e.Type == plans.EventStepStarted && e.Name == runrecord.StepWipe })
	if salvageAt < 0 || wipeAt < salvageAt {
		t.Errorf("the salvage (event %d) was not done before the wipe started (event %d):\n%s", salvageAt, wipeAt, out.timings())
	}
	rep := salvaged(t, out)
	if rep.Dir != dir || rep.Records != 2 || len(rep.Partitions) != 1 || rep.Partitions[0].Records != 2 ||
		!strings.HasPrefix(rep.Partitions[0].Into, filepath.Join(dir, "east", x.orders)+string(filepath.Separator)) {
		t.Fatalf("salvage report %+v, want the 2 records of the RPO in one file under %s", rep, filepath.Join(dir, "east", x.orders))
	}
	f, err := os.Open(rep.Partitions[0].Into)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []failover.SalvagedRecord
	for dec := json.NewDecoder(f); dec.More(); {
		var r failover.SalvagedRecord
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("%s: %v", f.Name(), err)
		}
		got = append(got, r)
	}
	if len(got) != 2 {
		t.Fatalf("%s holds %d record(s), want the 2 east never mirrored", f.Name(), len(got))
	}
	for i, r := range got {
		want := x.east[1+i]
		if r.Topic != x.orders || r.Partition != 0 || r.Offset != want.Offset || !sameBytes(r.Value, want.Value) || !sameBytes(r.Key, want.Key) ||
			!r.Timestamp.Equal(want.Timestamp) || r.SalvagedFrom != x.eastID {
			t.Errorf("%s line %d: %s/%d offset %d, %d bytes (key %q, %v), from %q; want %s/0 offset %d as it was on east: %d bytes (key %q, %v), from %s",
				f.Name(), i+1, r.Topic, r.Partition, r.Offset, len(r.Value), r.Key, r.Timestamp, r.SalvagedFrom, x.orders, want.Offset, len(want.Value), want.Key, want.Timestamp, x.eastID)
		}
	}
	x.steadyAndReseeded(t)
	x.clock.lap("checks")
	t.Logf("timings:\n%s", x.clock.report())
}
