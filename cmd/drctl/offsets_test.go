package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/mirror"
	"github.com/drctl/drctl/mirror/groupsync"
	"github.com/drctl/drctl/topology"
)

// offsetsEnv is a kfake pair whose topic "orders" (2 partitions, with
// aborted transactions in it) has been mirrored east -> west by an
// in-process engine, whose own group sync is too slow to interfere.
type offsetsEnv struct {
	pair     *kfaketest.Pair
	src, dst sarama.Client
}

func newOffsetsEnv(t *testing.T) *offsetsEnv {
	t.Helper()
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [orders]}\n  groups: {include: [\"app-.*\"]}\n  group_sync_interval: 1h\n"})
	ctx := kfaketest.Ctx(t, 30*time.Second)
	env := &offsetsEnv{pair: p, src: kfaketest.Dial(t, p.Topology, "east"), dst: kfaketest.Dial(t, p.Topology, "west")}
	kfaketest.CreateTopicOn(t, env.src, "orders", 2, nil)
	cfg, err := p.Topology.Clusters["east"].SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Transaction.ID = "offsets-cli-test"
	prod, err := sarama.NewSyncProducer(p.Topology.Clusters["east"].Bootstrap, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 20 {
		if err := prod.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "orders", Partition: int32(j % 2), Value: sarama.StringEncoder(fmt.Sprintf("%d-%d", i, j))}); err != nil {
				t.Fatal(err)
			}
		}
		if i%4 == 3 {
			err = prod.AbortTxn()
		} else {
			err = prod.CommitTxn()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	e, err := mirror.NewEngine(p.Topology, "east", "west", mirror.Options{Epoch: -1, Shards: 2, TopicSyncInterval: 200 * time.Millisecond,
		IdleCheck: 200 * time.Millisecond, SessionTimeout: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })
	deadline := time.Now().Add(30 * time.Second)
	for {
		rep, err := linkstate.MeasureLag(ctx, kfaketest.Session(t, p.Topology), e.Link())
		if err == nil && rep.Caught() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mirror did not catch up: %v %+v", err, rep)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return env
}

// standbyOffsets returns group's committed offsets of orders on west.
func (env *offsetsEnv) standbyOffsets(t *testing.T, group string) map[int32]int64 {
	t.Helper()
	admin, err := sarama.NewClusterAdminFromClient(env.dst)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{"orders": {0, 1}})
	if err != nil && !errors.Is(err, sarama.ErrGroupIDNotFound) {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	if resp == nil {
		return out
	}
	for p, b := range resp.Blocks["orders"] {
		if b.Offset >= 0 {
			out[p] = b.Offset
		}
	}
	return out
}

// firstSourceOffset returns the provenance of the first committed record
// at or after offset on west's orders/p, -1 when none.
func (env *offsetsEnv) firstSourceOffset(t *testing.T, p int32, offset int64) int64 {
	t.Helper()
	got := int64(-1)
	stop := errors.New("stop")
	_, err := kafkaread.ReadCommitted(context.Background(), env.dst, "orders", p, offset, func(r kafkaread.Record) error {
		for _, h := range r.Headers {
			if string(h.Key) == topology.HeaderSourceOffset && len(h.Value) == 8 {
				got = int64(binary.BigEndian.Uint64(h.Value))
			}
		}
		return stop
	})
	if err != nil && !errors.Is(err, stop) {
		t.Fatal(err)
	}
	return got
}

// TestOffsetsCommands runs drctl offsets translate and sync in-process
// against a mirrored kfake pair.
func TestOffsetsCommands(t *testing.T) {
	env := newOffsetsEnv(t)
	path := env.pair.Path
	// Offset 4 of partition 0 lies in the first aborted transaction's
	// range or just after a marker: a hole either way.
	kfaketest.CommitOn(t, env.src, "app-one", "orders", map[int32]int64{0: 4, 1: 7})
	kfaketest.CommitOn(t, env.src, "app-busy", "orders", map[int32]int64{0: 2})

	out, stderr, code := drctl(t, "-c", path, "offsets", "translate", "--group", "app-one", "-o", "json")
	if code != 0 {
		t.Fatalf("translate: exit %d: %s", code, stderr)
	}
	var rep groupsync.TranslationReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("translate -o json: %v\n%s", err, out)
	}
	if len(rep.Groups) != 1 || rep.Link != "east->west" || len(rep.Groups[0].Partitions) != 2 {
		t.Fatalf("translate report: %+v", rep)
	}
	targets := map[int32]int64{}
	for _, p := range rep.Groups[0].Partitions {
		if p.Status.String() != "exact" || !p.Exact || p.TargetEnd < p.Target || p.StandbyCommitted != -1 {
			t.Errorf("translated partition %+v", p)
		}
		// The consumer at the target reads first the source record at or
		// after the committed position.
		first := env.firstSourceOffset(t, p.Partition, p.Target)
		if first < p.SourceCommitted {
			t.Errorf("orders/%d: a consumer at target %d reads source offset %d first, before the position %d", p.Partition, p.Target, first, p.SourceCommitted)
		}
		targets[p.Partition] = p.Target
	}
	if !strings.Contains(out, `"status": "exact"`) || !strings.Contains(out, `"source_committed": 4`) {
		t.Errorf("JSON schema: %s", out)
	}
	table, _, code := drctl(t, "-c", path, "offsets", "translate")
	t.Logf("drctl offsets translate:\n%s", table)
	if code != 0 || !strings.Contains(table, "GROUP app-one") || !strings.Contains(table, "GROUP app-busy") || !strings.Contains(table, "exact") {
		t.Errorf("translate table (exit %d):\n%s", code, table)
	}

	// Refusals that contact nothing.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"offsets", "sync", "--group", "app-one"}, "pass --yes"},
		{[]string{"offsets", "sync", "--group", "other", "--yes"}, "not selected by mirror.groups"},
		{[]string{"offsets", "sync", "--group", "_drctl.test.east-west.progress", "--yes"}, "drctl's own"},
		{[]string{"offsets", "translate", "--group", "_drctl.x"}, "drctl's own"},
	} {
		_, stderr, code := drctl(t, append([]string{"-c", path}, c.args...)...)
		if code != exitBadInput || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, exitBadInput, c.want)
		}
	}
	if got := env.standbyOffsets(t, "app-one"); len(got) != 0 {
		t.Fatalf("a refused sync changed the standby: %v", got)
	}

	// A sync with --yes commits and reports before -> after.
	out, stderr, code = drctl(t, "-c", path, "offsets", "sync", "--group", "app-one", "--yes", "-o", "json")
	if code != 0 {
		t.Fatalf("sync: exit %d: %s\n%s", code, stderr, out)
	}
	var res groupsync.Sync
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("sync -o json: %v\n%s", err, out)
	}
	if g := res.Groups[0]; g.Action != groupsync.SyncCommit || !g.Committed || len(g.Changes) != 2 || g.Changes[0].Before != -1 || g.Changes[0].After != targets[0] {
		t.Fatalf("sync result: %+v", res.Groups)
	}
	if got := env.standbyOffsets(t, "app-one"); got[0] != targets[0] || got[1] != targets[1] {
		t.Fatalf("standby offsets %v, want %v", got, targets)
	}
	out, _, code = drctl(t, "-c", path, "offsets", "sync", "--group", "app-one", "--yes")
	if code != 0 || !strings.Contains(out, "in-sync") {
		t.Errorf("second sync (exit %d):\n%s", code, out)
	}

	// A group with members on the standby is refused, and says so.
	kfaketest.CommitOn(t, env.dst, "app-busy", "orders", map[int32]int64{0: 1})
	m := joinStandby(t, env.pair.Topology.Clusters["west"], "app-busy")
	defer m.Close()
	out, stderr, code = drctl(t, "-c", path, "offsets", "sync", "--group", "app-busy", "--yes")
	t.Logf("drctl offsets sync --group app-busy --yes:\n%s%s", out, stderr)
	if code != exitFailure || !strings.Contains(stderr, "app-busy (skipped-active): group app-busy has 1 members on the standby west") {
		t.Errorf("sync of an active group: exit %d\nstdout %s\nstderr %s", code, out, stderr)
	}
	if got := env.standbyOffsets(t, "app-busy"); got[0] != 1 || len(got) != 1 {
		t.Errorf("the active group moved on the standby: %v", got)
	}

	// On a terminal the changes are shown and confirmed.
	kfaketest.CommitOn(t, env.src, "app-one", "orders", map[int32]int64{0: 9})
	for _, answer := range []string{"n\n", "", "yes\n"} {
		var stdout, errb bytes.Buffer
		app := newApp()
		Streams{In: strings.NewReader(answer), Out: &stdout, Err: &errb, IsTerminal: true}.attach(app)
		err := app.RunContext(context.Background(), []string{"drctl", "-c", path, "offsets", "sync", "--group", "app-one"})
		text := stdout.String()
		if !strings.Contains(text, "will commit") || !strings.Contains(text, "[y/N]") || !strings.Contains(text, fmt.Sprint(targets[0])) {
			t.Errorf("answer %q: the plan was not shown before the question:\n%s", answer, text)
		}
		got := env.standbyOffsets(t, "app-one")
		if answer != "yes\n" {
			if err == nil || !strings.Contains(err.Error(), "nothing was changed") || got[0] != targets[0] {
				t.Errorf("answer %q: err %v, standby %v", answer, err, got)
			}
			continue
		}
		t.Logf("drctl offsets sync on a terminal, answering yes:\n%s", text)
		if err != nil || got[0] == targets[0] || !strings.Contains(text, "committed") {
			t.Errorf("answer yes: err %v, standby %v\n%s", err, got, text)
		}
	}
}

func TestConfirm(t *testing.T) {
	// Answers as typed: surrounding spaces are part of the input under test.
	padded := "  y \n"
	for in, want := range map[string]bool{"y\n": true, "YES\n": true, padded: true, "yes": true, "n\n": false, "\n": false, "": false, "yess\n": false} {
		var out bytes.Buffer
		cf := Consent{s: Streams{In: strings.NewReader(in), IsTerminal: true}}
		err := cf.YesNo(&out, "Go?")
		if got := err == nil; got != want || (err != nil && !errors.Is(err, errNotConfirmed)) || out.String() != "Go? [y/N] " {
			t.Errorf("YesNo on %q = %v (prompt %q)", in, err, out.String())
		}
	}
	// A cluster's name must be typed exactly.
	paddedName := " west \n"
	for in, want := range map[string]bool{"west\n": true, paddedName: true, "West\n": false, "y\n": false, "": false} {
		var out bytes.Buffer
		cf := Consent{s: Streams{In: strings.NewReader(in), IsTerminal: true}}
		if got := cf.Typed(&out, "Type west: ", "west") == nil; got != want || out.String() != "Type west: " {
			t.Errorf("Typed on %q: consent %v, want %v (prompt %q)", in, got, want, out.String())
		}
	}
	// --yes asks nothing; no terminal and no --yes is refused with exit 2.
	var out bytes.Buffer
	if err := (Consent{yes: true}).YesNo(&out, "Go?"); err != nil || out.Len() != 0 {
		t.Errorf("with --yes: %v, asked %q", err, out.String())
	}
	err := Consent{}.Require("this changes the clusters: pass --yes")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitBadInput || !strings.Contains(err.Error(), "pass --yes") {
		t.Errorf("Require without a terminal = %v; want exit 2 naming --yes", err)
	}
	if err := (Consent{s: Streams{IsTerminal: true}}).Require("x"); err != nil {
		t.Errorf("Require on a terminal = %v", err)
	}
}

// standbyMember holds a consumer group on a cluster without consuming.
type standbyMember struct {
	cg   sarama.ConsumerGroup
	done chan struct{}
}

func (m *standbyMember) Close() { _ = m.cg.Close(); <-m.done }

type holdHandler struct{ ready chan struct{} }

func (h holdHandler) Setup(sarama.ConsumerGroupSession) error {
	select {
	case h.ready <- struct{}{}:
	default:
	}
	return nil
}
func (holdHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (holdHandler) ConsumeClaim(s sarama.ConsumerGroupSession, _ sarama.ConsumerGroupClaim) error {
	<-s.Context().Done()
	return nil
}

func joinStandby(t *testing.T, c *topology.Cluster, group string) *standbyMember {
	t.Helper()
	cfg, err := c.SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cg, err := sarama.NewConsumerGroup(c.Bootstrap, group, cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := &standbyMember{cg: cg, done: make(chan struct{})}
	h := holdHandler{ready: make(chan struct{}, 1)}
	go func() {
		defer close(m.done)
		for {
			if err := cg.Consume(context.Background(), []string{"orders"}, h); errors.Is(err, sarama.ErrClosedConsumerGroup) {
				return
			}
		}
	}()
	select {
	case <-h.ready:
	case <-time.After(15 * time.Second):
		t.Fatal("the standby member never joined")
	}
	return m
}
