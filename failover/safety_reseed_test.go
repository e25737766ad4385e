package failover

// On kfake: no wipe without salvage, salvage never rewrites
// provenance, a reseed of a cluster that is not stale and an unplanned
// failover of an active that answers are refused unless forced.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/mirror"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
	"github.com/drctl/drctl/topology"
)

// produceHeaders writes one record per header set to partition 0 of
// topic on cluster (a nil set: no headers).
func produceHeaders(t *testing.T, topo *topology.Topology, cluster, topic string, sets ...[]sarama.RecordHeader) {
	t.Helper()
	cfg, err := topo.Clusters[cluster].SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	prod, err := sarama.NewSyncProducer(topo.Clusters[cluster].Bootstrap, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i, hs := range sets {
		m := &sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.StringEncoder("k"), Value: sarama.StringEncoder(string(rune('a' + i))), Headers: hs}
		if _, _, err := prod.SendMessage(m); err != nil {
			t.Fatal(err)
		}
	}
}

func headerOf(k, v string) sarama.RecordHeader {
	return sarama.RecordHeader{Key: []byte(k), Value: []byte(v)}
}

// TestReseedOfHealthyStandbyRefused: `drctl reseed west` on the in-sync
// standby is refused, says why and how to force it, and leaves no trace
// (no phase change, no run record, no quarantine topic on east).
func TestReseedOfHealthyStandbyRefused(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: "failover: {fence: none, drain_timeout: 30s}\n"})
	topo := p.Topology
	seedOrders(t, topo)
	startMirror(t, topo, "east", "west")
	waitMirrored(t, topo, "east", "west")
	waitGroupSynced(t, topo, "west", "billing", 3) // the snapshot must not race the first sync round
	before := snapshots(t, topo, "east", "west")
	_, err := PlanReseed(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), "west")
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("reseed of the healthy standby: got %v, want a refusal", err)
	}
	for _, want := range []string{"west", "not stale", "--force"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not contain %q", err, want)
		}
	}
	after := assertUnchanged(t, topo, before)
	if _, ok := after["east"].Topics["orders"+topo.Failover.SalvageTopicSuffix]; ok {
		t.Errorf("east has a quarantine topic after the refusal")
	}

	// Forced, the salvage copies nothing: every record on west came from
	// east, the cluster it would salvage into.
	rep, err := Salvage(kfaketest.Ctx(t, 60*time.Second), kfaketest.Session(t, topo), "west", "east")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 0 {
		t.Errorf("salvaged %d record(s) of the in-sync standby into east; all of them came from east", rep.Records)
	}
	if rep.FromActive != 30 {
		t.Errorf("counted %d record(s) that came from east, want 30", rep.FromActive)
	}
}

// TestSalvageKeepsProvenance: the stale cluster holds a record that came
// from the active (skipped), one written there by an application and one
// mirrored from a third cluster (both salvaged, their headers as they
// were, plus drctl's salvage headers).
func TestSalvageKeepsProvenance(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: "failover: {fence: none, drain_timeout: 30s}\n"})
	topo := p.Topology
	kfaketest.CreateTopic(t, topo, "west", "orders", 1, nil)
	var off [8]byte
	binary.BigEndian.PutUint64(off[:], 41)
	produceHeaders(t, topo, "west", "orders",
		[]sarama.RecordHeader{headerOf(topology.HeaderOrigin, "kfake-east"), {Key: []byte(topology.HeaderSourceOffset), Value: off[:]}},
		[]sarama.RecordHeader{headerOf("app", "1")},
		[]sarama.RecordHeader{headerOf(topology.HeaderOrigin, "kfake-north"), {Key: []byte(topology.HeaderSourceOffset), Value: off[:]}},
	)
	rep, err := Salvage(kfaketest.Ctx(t, 60*time.Second), kfaketest.Session(t, topo), "west", "east")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 2 {
		t.Errorf("salvaged %d record(s), want 2 (the application's and the third cluster's)", rep.Records)
	}
	recs, err := readCommitted(kfaketest.Dial(t, topo, "east"), "orders"+topo.Failover.SalvageTopicSuffix, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("the quarantine topic holds %d record(s), want 2", len(recs))
	}
	header := func(r int, k string) string {
		for _, h := range recs[r].Headers {
			if string(h.Key) == k {
				return string(h.Value)
			}
		}
		return ""
	}
	if got := header(0, topology.HeaderOrigin); got != "" {
		t.Errorf("the application's record got origin %q; salvage must not invent provenance", got)
	}
	if got := header(0, "app"); got != "1" {
		t.Errorf("the application's header is %q, want 1", got)
	}
	if got := header(1, topology.HeaderOrigin); got != "kfake-north" {
		t.Errorf("the third cluster's record has origin %q after salvage, want kfake-north (provenance rewritten)", got)
	}
	if got := header(1, topology.HeaderSourceOffset); got != string(off[:]) {
		t.Errorf("the third cluster's record lost its source offset")
	}
	for i := range recs {
		if got := header(i, topology.HeaderSalvagedFrom); got != "kfake-west" {
			t.Errorf("record %d: %s is %q, want kfake-west", i, topology.HeaderSalvagedFrom, got)
		}
	}
	// Idempotent: a second salvage adds nothing.
	if _, err := Salvage(kfaketest.Ctx(t, 60*time.Second), kfaketest.Session(t, topo), "west", "east"); err != nil {
		t.Fatal(err)
	}
	if recs, _ := readCommitted(kfaketest.Dial(t, topo, "east"), "orders"+topo.Failover.SalvageTopicSuffix, 0); len(recs) != 2 {
		t.Errorf("after a second salvage the quarantine topic holds %d record(s), want 2", len(recs))
	}
}

// TestUnplannedWithLiveActiveRefused: an unplanned failover while the
// active answers is refused (planning it, and applying a plan saved while
// it was down), naming the flag that forces it; nothing changes. Forced,
// the plan fences the old active before the flip.
func TestUnplannedWithLiveActiveRefused(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Persist: true, Mirror: ordersBillingYAML, Extra: "failover: {fence: acl, drain_timeout: 30s}\n"})
	topo := p.Topology
	seedOrders(t, topo)
	kfaketest.CreateTopic(t, topo, "west", "orders", 3, nil)
	before := snapshots(t, topo, "east", "west")
	_, err := PlanFailover(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), FailoverRequest{To: "west", Mode: Unplanned})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "answers") || !strings.Contains(err.Error(), "--force-unplanned") {
		t.Fatalf("unplanned failover of a live active: got %v, want a refusal naming --force-unplanned", err)
	}
	assertUnchanged(t, topo, before)

	p.Stop("east")
	saved, err := PlanFailover(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), FailoverRequest{To: "west", Mode: Unplanned})
	if err != nil {
		t.Fatalf("unplanned failover with east down: %v", err)
	}
	p.Restart(t, "east")
	var c confirmCounter
	journal := t.TempDir()
	err = execute(t, topo, saved, journal, &c)
	var serr *plans.StepError
	if !errors.As(err, &serr) || serr.Name != StepPreflight || !strings.Contains(err.Error(), "answers") {
		t.Fatalf("applying the plan saved while east was down: got %v, want the preflight to refuse", err)
	}
	assertUnchanged(t, topo, before)
	noStepDone(t, topo, saved.ID)

	forced, err := PlanFailover(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), FailoverRequest{To: "west", Mode: Unplanned, ForceUnplanned: true})
	if err != nil {
		t.Fatalf("forced: %v", err)
	}
	fence, flip := stepIndex(t, forced, StepFenceActive), stepIndex(t, forced, runrecord.StepFlip)
	if fence > flip {
		t.Errorf("the forced plan fences east at step %d, after the flip at %d", fence+1, flip+1)
	}
	var in Inputs
	if err := forced.DecodeInputs(&in); err != nil || !in.Force || !strings.Contains(in.ForceReason, "east") {
		t.Errorf("the forced plan does not record why it was forced: %+v %v", in, err)
	}
}

// TestSalvageAfterWipe: the old active east was wiped; a producer that
// still writes there recreates orders and writes 5 records at offsets the
// old link east->west once mirrored. A later salvage of east (before the
// next wipe) saves all 5: the wipe forgot the old link's progress.
func TestSalvageAfterWipe(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: "failover: {fence: none, drain_timeout: 30s}\n"})
	topo := p.Topology
	kfaketest.CreateTopic(t, topo, "east", "orders", 1, nil)
	kfaketest.Produce(t, topo, "east", "orders", 20)
	ctx, cancel := context.WithCancel(context.Background())
	d := mirror.NewDaemon(topo, mirror.DaemonOptions{StatePoll: 200 * time.Millisecond,
		Engine: mirror.Options{Shards: 1, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond}})
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	waitMirrored(t, topo, "east", "west")
	cancel()
	<-done

	if _, err := Wipe(kfaketest.Ctx(t, 60*time.Second), kfaketest.Session(t, topo), "east", "west"); err != nil {
		t.Fatal(err)
	}
	kfaketest.CreateTopic(t, topo, "east", "orders", 1, nil)
	kfaketest.Produce(t, topo, "east", "orders", 5)
	rep, err := Salvage(kfaketest.Ctx(t, 60*time.Second), kfaketest.Session(t, topo), "east", "west")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 5 {
		t.Errorf("salvaged %d record(s) of the recreated topic, want all 5", rep.Records)
	}
}

// TestSalvageAfterTheTopicWasRecreated: records salvaged from an earlier
// copy of a topic (before a wipe and re-seed, or a delete and re-create)
// never hide the records of the new copy, whose offsets start at 0 again:
// every one of them reaches quarantine, and a second salvage of the same
// copy adds nothing.
func TestSalvageAfterTheTopicWasRecreated(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: "failover: {fence: none, drain_timeout: 30s}\n"})
	topo := p.Topology
	into := "orders" + topo.Failover.SalvageTopicSuffix
	app := func(v string) []sarama.RecordHeader { return []sarama.RecordHeader{headerOf("app", v)} }
	quarantined := func() []string {
		recs, err := readCommitted(kfaketest.Dial(t, topo, "east"), into, 0)
		if err != nil {
			t.Fatal(err)
		}
		var vals []string
		for _, r := range recs {
			for _, h := range r.Headers {
				if string(h.Key) == "app" {
					vals = append(vals, string(h.Value))
				}
			}
		}
		return vals
	}
	salvage := func(want int64) {
		t.Helper()
		rep, err := Salvage(kfaketest.Ctx(t, 60*time.Second), kfaketest.Session(t, topo), "west", "east")
		if err != nil {
			t.Fatal(err)
		}
		if rep.Records != want {
			t.Errorf("salvage reported %d record(s), want %d", rep.Records, want)
		}
	}

	kfaketest.CreateTopic(t, topo, "west", "orders", 1, nil)
	produceHeaders(t, topo, "west", "orders", app("a1"), app("a2"), app("a3"), app("a4"), app("a5"))
	salvage(5)

	// The topic is deleted and created again on west; its three records
	// have offsets 0-2, below the five already salvaged.
	admin := kfaketest.Admin(t, kfaketest.Dial(t, topo, "west"))
	if err := admin.DeleteTopic("orders"); err != nil {
		t.Fatal(err)
	}
	kfaketest.Wait(t, 30*time.Second, "orders deleted on west", func() (bool, string) {
		topics, err := admin.ListTopics()
		_, there := topics["orders"]
		return err == nil && !there, fmt.Sprint(err)
	})
	kfaketest.CreateTopic(t, topo, "west", "orders", 1, nil)
	produceHeaders(t, topo, "west", "orders", app("b1"), app("b2"), app("b3"))
	salvage(3)
	salvage(3) // the same copy again: counted, nothing added
	got := quarantined()
	want := []string{"a1", "a2", "a3", "a4", "a5", "b1", "b2", "b3"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("quarantine holds %v, want %v: records of the new copy of the topic were skipped or doubled", got, want)
	}
}

// TestForcedReseedOfHealthyStandbyWithMirrorRunning: `drctl reseed west
// --force` on the in-sync standby while the mirror copies into it, its
// daemon reading the roles every 2s (drctl mirror run: 5s), runs to the
// end. The run's phase stops the mirror of east->west only at the
// daemon's next read; the wipe waits for that mirror to leave west
// instead of failing at once and leaving the run in phase wiping with no
// mirror copying. Nothing is salvaged (every record on west came from
// east) and west holds east's records again.
func TestForcedReseedOfHealthyStandbyWithMirrorRunning(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: "failover: {fence: none, drain_timeout: 30s}\n"})
	topo := p.Topology
	seedOrders(t, topo)
	startMirrorPolling(t, topo, "east", "west", 2*time.Second)
	waitMirrored(t, topo, "east", "west")
	plan, err := PlanReseedWith(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), "west", ReseedOptions{Force: true})
	if err != nil {
		t.Fatalf("forced reseed of the standby: %v", err)
	}
	var c confirmCounter
	if err := execute(t, topo, plan, t.TempDir(), &c); err != nil {
		t.Fatalf("the forced reseed of the healthy standby failed: %v", err)
	}
	after := snapshots(t, topo, "east", "west")
	for _, cl := range []string{"east", "west"} {
		if st := after[cl].State; st.Active != "east" || st.Standby != "west" || st.Phase != rolestate.PhaseSteady || st.Run != nil {
			t.Errorf("%s: roles after the reseed %s, want east active, west standby, steady", cl, after[cl].Roles)
		}
	}
	east, west := kfaketest.Dial(t, topo, "east"), kfaketest.Dial(t, topo, "west")
	for part := range int32(3) {
		want, got := kfaketest.Records(t, east, "orders", part, 0), kfaketest.Records(t, west, "orders", part, 0)
		if len(got) != len(want) {
			t.Fatalf("orders/%d: west holds %d record(s) after the re-seed, east %d", part, len(got), len(want))
		}
		for i := range want {
			if string(got[i].Value) != string(want[i].Value) {
				t.Errorf("orders/%d record %d: west %q, east %q", part, i, got[i].Value, want[i].Value)
			}
		}
	}
	if s, ok := after["east"].Topics["orders"+topo.Failover.SalvageTopicSuffix]; ok && strings.Contains(strings.ReplaceAll(s, ":[0,0)", ""), ":[") {
		t.Errorf("east's quarantine topic holds records (%s): every record on west came from east", s)
	}
	rec, err := loadRun(kfaketest.Ctx(t, 20*time.Second), topo, plan.ID)
	if err != nil || rec == nil {
		t.Fatalf("run record of %s: %v", plan.ID, err)
	}
	var salvaged SalvageReport
	if err := json.Unmarshal(rec.Outputs[stepIndex(t, plan, StepSalvage)], &salvaged); err != nil {
		t.Fatalf("the salvage's output: %v", err)
	}
	if salvaged.Records != 0 || salvaged.FromActive != 30 {
		t.Errorf("salvaged %d record(s), skipped %d as east's; want 0 and all 30", salvaged.Records, salvaged.FromActive)
	}
	var wipe WipeReport
	if err := json.Unmarshal(rec.Outputs[stepIndex(t, plan, runrecord.StepWipe)], &wipe); err != nil {
		t.Fatalf("the wipe's output: %v", err)
	}
	if !slices.Contains(wipe.TopicsDeleted, "orders") {
		t.Errorf("the wipe deleted %v on west, want orders among them", wipe.TopicsDeleted)
	}
}

// TestWipeWaitsOnlyForTheMirror: the wipe waits for members of the
// mirror's own groups (here a consumer that holds the workers group of
// east->west on west, as a hung mirror would), reporting it, and the
// first interrupt stops that wait with nothing deleted; a member of an
// application group is waited for up to failover.clients.timeout and then
// refused by name (group, client, host), and one that leaves in time lets
// the wipe go on.
func TestWipeWaitsOnlyForTheMirror(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: "failover: {fence: none, drain_timeout: 30s}\n"})
	topo := p.Topology
	kfaketest.CreateTopic(t, topo, "west", "orders", 1, nil)
	kfaketest.Produce(t, topo, "west", "orders", 5)
	leaveMirror := holdGroup(t, topo, "west", topo.Link("east", "west").WorkersGroup(), "orders")
	ordersOnWest := func() string {
		t.Helper()
		return snapshotOf(t, topo, "west").Topics["orders"]
	}
	before := ordersOnWest()

	plan := plans.New("wipe-wait", "reseed")
	if err := plan.Add(wipeStep.Spec("Wipe the mirrored topics and groups on west", reseedParams{Stale: "west", Active: "east"})); err != nil {
		t.Fatal(err)
	}
	in := &plans.Interrupts{}
	waiting := make(chan string, 1)
	hook := plans.HookFunc(func(_ context.Context, e plans.Event) error {
		if e.Type == plans.EventStepProgress {
			select {
			case waiting <- e.Message:
			default:
			}
		}
		return nil
	})
	ex := &plans.Executor{Registry: registry(kfaketest.Session(t, topo), answers{}), Hooks: []plans.Hook{hook}, Interrupts: in}
	done := make(chan error, 1)
	go func() { done <- ex.Run(context.Background(), plan) }()
	select {
	case msg := <-waiting:
		if !strings.Contains(msg, "waiting for the mirror of east->west") || !strings.Contains(msg, "nothing deleted") {
			t.Errorf("progress %q does not say it waits for the mirror, with nothing deleted", msg)
		}
	case err := <-done:
		t.Fatalf("the wipe ended before it waited for the mirror: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the wipe reported no wait within 30s")
	}
	in.Interrupt()
	select {
	case err := <-done:
		if !errors.Is(err, plans.ErrInterrupted) {
			t.Errorf("got %v, want an interrupted run", err)
		}
		if next, ok := plans.NextStep(err); !ok || next != 0 {
			t.Errorf("a resume starts at step %d (%v), want the wipe again", next+1, ok)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wipe still waits 10s after the interrupt")
	}
	if now := ordersOnWest(); now != before {
		t.Errorf("west's orders was %q, now %q: the interrupted wait deleted something", before, now)
	}

	// An application consumer that stays is waited for up to
	// failover.clients.timeout, then refused by name.
	leave := holdGroup(t, topo, "west", "billing", "orders")
	topo.Failover.ClientsTimeout = 2 * time.Second
	start := time.Now()
	_, err := Wipe(kfaketest.Ctx(t, 2*time.Minute), kfaketest.Session(t, topo), "west", "east")
	for _, want := range []string{"group billing: client ", " on 127.0.0.1", "failover.clients.timeout", "stop or move those consumers", "nothing was deleted"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("wipe with billing active on west: %v; want a refusal saying %q", err, want)
		}
	}
	if took := time.Since(start); took < 2*time.Second || took > 10*time.Second {
		t.Errorf("the refusal of an application group came after %v; want it after the 2s of failover.clients.timeout", took)
	}
	if now := ordersOnWest(); now != before {
		t.Errorf("west's orders was %q, now %q after the refusal", before, now)
	}

	// One that leaves within the timeout lets the wipe go on, and the
	// progress said whom it waited for.
	topo.Failover.ClientsTimeout = time.Minute
	var waitedFor []string
	progress := plans.HookFunc(func(_ context.Context, e plans.Event) error {
		if e.Type == plans.EventStepProgress {
			if len(waitedFor) == 0 {
				leave()
				leaveMirror()
			}
			waitedFor = append(waitedFor, e.Message)
		}
		return nil
	})
	again := &plans.Executor{Registry: registry(kfaketest.Session(t, topo), answers{}), Hooks: []plans.Hook{progress}}
	if err := again.Run(kfaketest.Ctx(t, 2*time.Minute), plan); err != nil {
		t.Fatalf("the wipe after the consumer left: %v", err)
	}
	if len(waitedFor) == 0 || !strings.Contains(waitedFor[0], "group billing: client ") || !strings.Contains(waitedFor[0], "nothing deleted yet") {
		t.Errorf("progress while waiting: %q; want it to name the consumer and say nothing was deleted", waitedFor)
	}
	if _, ok := snapshotOf(t, topo, "west").Topics["orders"]; ok {
		t.Error("orders is still on west after the wipe")
	}
}
