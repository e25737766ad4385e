//go:build e2e

package e2e

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
	"github.com/drctl/drctl/topology"
)

// TestFailoverUnplannedRealKafka: east dies while records the mirror has
// seen are not yet on west. `drctl failover --to west --unplanned` flips
// the roles on west alone and reports an RPO equal to exactly those
// records, per partition, then stops at fence-stale while east is down.
// When east is back, `drctl resume` finishes the run, and the salvage
// copies exactly those records into <topic>.drctl-salvage on west, each
// naming east and its offset there (drctl.salvaged-from/-offset, the
// record's own provenance untouched); east is re-seeded as the standby.
//
// How records stay unmirrored: the RPO is computed from the source ends
// the mirror last recorded on west (docs/failover.md), so the mirror must
// see the records but be unable to copy them. A mirror stopped with
// SIGSTOP sees nothing, and its RPO would read 0. Instead the topic's
// max.message.bytes (which the mirror copies to west) is set low, and the
// application writes records that fit only compressed: east takes them,
// west refuses the mirror's uncompressed copies (MESSAGE_TOO_LARGE), while
// the mirror keeps recording the ends it sees.
func TestFailoverUnplannedRealKafka(t *testing.T) {
	clock := newFoClock()
	ft := newFoTopo(t, "up", "1s", `{fence: acl, producer_principals: ["User:app"], drain_timeout: 1m, quiet_period: 1s}`)
	orders := ft.topic("orders")
	const parts = 3
	createTopic(t, "east", orders, parts, nil)
	eastCl, westCl := ft.dial(t, "east"), ft.dial(t, "west")
	eastID, err := kafkaconn.ClusterID(eastCl)
	if err != nil {
		t.Fatal(err)
	}
	westID, err := kafkaconn.ClusterID(westCl)
	if err != nil {
		t.Fatal(err)
	}
	startMirror(t, ft.mirrorTopo(), "mirror", "--session-timeout", "6s")

	// Mirrored: small records.
	small := foProducer(t, "east", sarama.CompressionNone)
	const n1 = 60
	for i := range n1 {
		foSend(t, small, orders, int32(i%parts), "k"+strconv.Itoa(i), "small-"+strconv.Itoa(i))
	}
	ft.waitLinkCaught(t, "east", "west", time.Minute)
	clock.lap("setup; 60 records mirrored")

	// West will refuse the mirror's copies of large records.
	limit := "16384"
	eastAdmin, err := sarama.NewClusterAdminFromClient(eastCl)
	if err != nil {
		t.Fatal(err)
	}
	if err := eastAdmin.AlterConfig(sarama.TopicResource, orders, map[string]*string{"max.message.bytes": &limit}, false); err != nil {
		t.Fatal(err)
	}
	westAdmin, err := sarama.NewClusterAdminFromClient(westCl)
	if err != nil {
		t.Fatal(err)
	}
	kfaketest.WaitFor(t, time.Minute, "the mirror copied max.message.bytes to west", func() error {
		entries, err := westAdmin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: orders, ConfigNames: []string{"max.message.bytes"}})
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.Name == "max.message.bytes" && e.Value == limit {
				return nil
			}
		}
		return fmt.Errorf("west's %s: %+v", orders, entries)
	})

	// Not mirrored: 45 records of 64 KiB that only fit gzip'd.
	big := foProducer(t, "east", sarama.CompressionGZIP)
	const n2 = 45
	type sent struct {
		key, value string
		offset     int64
	}
	unmirrored := make([][]sent, parts)
	for i := range n2 {
		p := int32(i % parts)
		key, value := "k"+strconv.Itoa(n1+i), foBigValue(n1+i)
		off := foSend(t, big, orders, p, key, value)
		unmirrored[p] = append(unmirrored[p], sent{key, value, off})
	}
	kfaketest.WaitFor(t, time.Minute, "the mirror recorded the 45 records it cannot copy", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		rpo, err := inspect.ObservedRPO(ctx, session(t, ft.Topo), "east", "west")
		if err != nil {
			return err
		}
		if rpo.Records != n2 {
			return fmt.Errorf("RPO so far %d records", rpo.Records)
		}
		return nil
	})
	if n, err := foCount(westCl, orders, parts); err != nil || n != n1 {
		t.Fatalf("west holds %d records of %s (%v), want the %d mirrored ones only", n, orders, err, n1)
	}
	clock.lap("45 records on east the mirror has seen but cannot copy")

	// The site goes down.
	killCluster(t, "east")
	clock.lap("kafka.sh kill east")
	fo := ft.run(t, 3*time.Minute, nil, "failover", "--to", "west", "--unplanned", "--yes")
	clock.lap("drctl failover --to west --unplanned (until it stops)")
	failed, ok := fo.failed()
	if fo.Code == 0 || !ok || failed.Name != failover.StepFenceStale {
		t.Fatalf("the unplanned run should stop at %s while east is down: exit %d, failed step %q (%s)", failover.StepFenceStale, fo.Code, failed.Name, failed.Error)
	}
	rpoDone, ok := fo.stepDone(runrecord.StepRPO)
	if !ok {
		t.Fatalf("no %s step in the run:\n%s", runrecord.StepRPO, fo.timings())
	}
	var rpo inspect.RPOReport
	if err := json.Unmarshal(rpoDone.Outputs, &rpo); err != nil {
		t.Fatalf("%s outputs %s: %v", runrecord.StepRPO, rpoDone.Outputs, err)
	}
	if rpo.Records != n2 || !strings.Contains(rpoDone.Summary, fmt.Sprintf("RPO: %d record(s)", n2)) {
		t.Errorf("reported RPO %d records (%q), want the %d produced but not mirrored", rpo.Records, rpoDone.Summary, n2)
	}
	for _, pr := range rpo.Partitions {
		if pr.Topic != orders || pr.Partition < 0 || pr.Partition >= parts {
			t.Errorf("RPO names a partition the test never wrote: %+v", pr)
			continue
		}
		if want := int64(len(unmirrored[pr.Partition])); pr.Records != want {
			t.Errorf("RPO of %s/%d: %d records, want %d", pr.Topic, pr.Partition, pr.Records, want)
		}
	}
	t.Logf("rpo-report: %s", rpoDone.Summary)
	roles := foRoles(t, ft)
	if roles.Active != "west" || roles.Run == nil {
		t.Errorf("roles while east is down: %+v, want west active with the run in progress", roles)
	}

	// East comes back; resume finishes the run.
	startCluster(t, "east")
	clock.lap("kafka.sh start east")
	rs := ft.run(t, 3*time.Minute, nil, "resume", "--yes")
	clock.lap("drctl resume (fence-stale..finish)")
	if rs.Code != 0 || rs.outcome().Outcome != plans.OutcomeSucceeded {
		t.Fatalf("resume: exit %d, outcome %q: %s", rs.Code, rs.outcome().Outcome, rs.outcome().Error)
	}
	salvageDone, ok := rs.stepDone(failover.StepSalvage)
	if !ok {
		t.Fatalf("the resumed run did no %s step:\n%s", failover.StepSalvage, rs.timings())
	}
	var salvage failover.SalvageReport
	if err := json.Unmarshal(salvageDone.Outputs, &salvage); err != nil {
		t.Fatal(err)
	}
	if salvage.Records != n2 {
		t.Errorf("salvaged %d records, want the %d of the RPO", salvage.Records, n2)
	}
	quarantine := orders + ft.Topo.Failover.SalvageTopicSuffix
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for p := range int32(parts) {
		got, err := readPartition(ctx, westCl, quarantine, p)
		if err != nil {
			t.Fatalf("read %s/%d on west: %v", quarantine, p, err)
		}
		want := unmirrored[p]
		if len(got) != len(want) {
			t.Errorf("%s/%d on west holds %d records, want the %d never mirrored", quarantine, p, len(got), len(want))
			continue
		}
		for i, r := range got {
			from, off := salvagedFrom(r)
			_, _, origins, offsets := provenance(r)
			if string(r.Key) != want[i].key || string(r.Value) != want[i].value || off != want[i].offset || from != eastID || origins+offsets != 0 {
				t.Errorf("%s/%d record %d: key %q, %d bytes, salvaged from %q offset %d, %d provenance header(s); want key %q, %d bytes, from east (%s) offset %d, none (the app wrote it on east)",
					quarantine, p, i, r.Key, len(r.Value), from, off, origins+offsets, want[i].key, len(want[i].value), eastID, want[i].offset)
			}
		}
	}
	t.Logf("salvage: %s", salvageDone.Summary)
	roles = foRoles(t, ft)
	if roles.Active != "west" || roles.Phase != "steady" || roles.Run != nil {
		t.Errorf("roles after the resumed run: %+v", roles)
	}
	// East is the standby again, re-seeded with west's records.
	eastCl = ft.dial(t, "east")
	n, err := sameTopic(westCl, eastCl, orders, westID)
	if err != nil {
		t.Errorf("east after the reseed: %v", err)
	}
	t.Logf("east's %s holds exactly west's %d records", orders, n)
	if parts, err := eastCl.Partitions(quarantine); err == nil {
		t.Logf("note: the quarantine topic %s was mirrored to east too (%d partitions): it matches the topic selection", quarantine, len(parts))
	}
	clock.lap("checks")
	t.Logf("timings:\n%s\n  unplanned failover, steps preflight..rpo-report: %v (rpo-report done %v after the process started)",
		clock.report(), fo.sumSteps(failover.StepPreflight, runrecord.StepRPO).Round(time.Millisecond), fo.doneAt(runrecord.StepRPO).Round(time.Millisecond))
}

// foProducer returns a producer on cluster, as app, that writes to the
// partition each message names.
func foProducer(t *testing.T, cluster string, codec sarama.CompressionCodec) sarama.SyncProducer {
	t.Helper()
	cfg := saramaConfig(t, env.AppUser, env.AppPass, mechSCRAM512)
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Compression = codec
	p, err := sarama.NewSyncProducer([]string{bootstrap(t, cluster)}, cfg)
	if err != nil {
		t.Fatalf("producer on %s: %v", cluster, err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// foSend writes one record and returns its offset.
func foSend(t *testing.T, p sarama.SyncProducer, topic string, partition int32, key, value string) int64 {
	t.Helper()
	_, off, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: partition, Key: sarama.StringEncoder(key), Value: sarama.StringEncoder(value)})
	if err != nil {
		t.Fatalf("produce to %s/%d: %v", topic, partition, err)
	}
	return off
}

// foBigValue is 64 KiB that gzip shrinks to a few hundred bytes.
func foBigValue(n int) string {
	return strings.Repeat(fmt.Sprintf("unmirrored-%06d;", n), 64<<10/18+1)[:64<<10]
}

// salvagedFrom returns the stale cluster and offset a quarantine record
// names (drctl.salvaged-from, drctl.salvaged-offset; offset -1 if absent).
func salvagedFrom(r kafkaread.Record) (from string, offset int64) {
	offset = -1
	for _, h := range r.Headers {
		switch string(h.Key) {
		case topology.HeaderSalvagedFrom:
			from = string(h.Value)
		case topology.HeaderSalvagedOffset:
			if len(h.Value) == 8 {
				offset = int64(binary.BigEndian.Uint64(h.Value))
			}
		}
	}
	return from, offset
}

// foCount counts the committed records of partitions 0..parts-1.
func foCount(client sarama.Client, topic string, parts int32) (int, error) {
	recs, err := readPartitions(client, topic, parts)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range recs {
		n += len(r)
	}
	return n, nil
}
