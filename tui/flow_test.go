package tui

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/mirror"
	"github.com/drctl/drctl/topology"
)

// This file drives the console as an operator would, on two kfake
// clusters: real Kafka wire protocol, the real mirror, the real executor.

// valueAt is the value of the first committed record of topic/part on cl
// at or after offset ("" when there is none).
func valueAt(t *testing.T, cl sarama.Client, topic string, part int32, offset int64) string {
	t.Helper()
	if recs := kfaketest.Records(t, cl, topic, part, offset); len(recs) > 0 {
		return string(recs[0].Value)
	}
	return ""
}

// waitScreen waits until the console has drawn text.
func waitScreen(t *testing.T, tm *teatest.TestModel, text string, within time.Duration) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return strings.Contains(ansi.Strip(string(b)), text) },
		teatest.WithDuration(within), teatest.WithCheckInterval(50*time.Millisecond))
}

func runMirror(t *testing.T, topo *topology.Topology) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := mirror.NewDaemon(topo, mirror.DaemonOptions{StatePoll: 200 * time.Millisecond,
		Engine: mirror.Options{Shards: 2, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))}})
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestFailoverThroughKeys: an operator opens the console, sees the standby
// ready, presses f, reads the plan, types the target's name, answers the
// fence-none question, and watches the run succeed; the roles flipped and
// the group resumes on west at the very record it would have read on east.
func TestFailoverThroughKeys(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{
		Mirror: "  topics: {include: [\"orders\"]}\n  groups: {include: [\"billing\"]}\n  group_sync_interval: 300ms",
		Extra:  "failover: {fence: none, drain_timeout: 30s, quiet_period: 300ms}\n",
	})
	topo := p.Topology
	kfaketest.Seed(t, topo, "east", "orders", 3, 10, "billing", 4)
	runMirror(t, topo)

	m := New(Options{Topology: topo, Interval: 300 * time.Millisecond, Timeout: 10 * time.Second, JournalDir: t.TempDir()})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 40))
	waitScreen(t, tm, "mirror caught up, groups in sync, no consumers on the standby", 60*time.Second)

	tm.Send(key("f"))
	waitScreen(t, tm, `Type the name of the cluster "west"`, 30*time.Second)
	tm.Send(key("east")) // the wrong name runs nothing
	tm.Send(key("enter"))
	waitScreen(t, tm, "that is not west; nothing was changed", 10*time.Second)
	tm.Send(key("west"))
	tm.Send(key("enter"))
	waitScreen(t, tm, "Have they stopped?", 30*time.Second)
	tm.Send(key("y"))
	waitScreen(t, tm, "succeeded", 90*time.Second)
	waitScreen(t, tm, "active west  standby east", 10*time.Second)
	tm.Send(key("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	if m.Resume != "" {
		t.Errorf("a succeeded run left a resume command: %s", m.Resume)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	st, _ := inspect.CollectStatus(ctx, kfaketest.Session(t, topo))
	if st.Roles.Active != "west" || st.Roles.Standby != "east" || st.Roles.Phase != "steady" {
		t.Fatalf("roles after the failover: %+v", st.Roles)
	}
	west := kfaketest.Dial(t, topo, "west")
	for part := range int32(3) {
		at := kfaketest.Committed(t, west, "billing", "orders", part)
		if at < 0 {
			t.Fatalf("billing has no position on west in orders/%d", part)
		}
		if got, want := valueAt(t, west, "orders", part, at), strconv.Itoa(int(part))+"/4"; got != want {
			t.Errorf("billing resumes on west at orders/%d offset %d, record %q; on east it would read %q next", part, at, got, want)
		}
	}
}

// TestClusterKilledShowsDown: a cluster killed mid-session is shown down
// within the refresh timeout, and up again when it returns; keys answer
// meanwhile.
func TestClusterKilledShowsDown(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Persist: true})
	const timeout = 5 * time.Second
	m := New(Options{Topology: p.Topology, Interval: 200 * time.Millisecond, Timeout: timeout, JournalDir: t.TempDir()})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 40))
	waitScreen(t, tm, "up  id kfake-west", 30*time.Second)

	p.Stop("west")
	killed := time.Now()
	waitScreen(t, tm, "DOWN (unreachable)", 2*timeout+5*time.Second)
	took := time.Since(killed)
	t.Logf("west shown down %s after it died", took.Round(time.Millisecond))
	if took > timeout+3*time.Second {
		t.Errorf("west was shown down %s after it died; the refresh timeout is %s", took.Round(time.Millisecond), timeout)
	}
	tm.Send(key("6"))
	waitScreen(t, tm, "cluster west is DOWN", 5*time.Second)

	p.Restart(t, "west")
	waitScreen(t, tm, "cluster west is back", 30*time.Second)
	tm.Send(key("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
}

// TestClusterHangsShowsDown: a cluster that accepts connections and never
// answers is shown down within the refresh timeout, and the keys answer
// while that refresh hangs.
func TestClusterHangsShowsDown(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{})
	var hang atomic.Bool
	p.West.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		return nil, nil, hang.Load() // handled with no answer: the client waits
	})
	const timeout = 3 * time.Second
	m := New(Options{Topology: p.Topology, Interval: 200 * time.Millisecond, Timeout: timeout, JournalDir: t.TempDir()})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 40))
	waitScreen(t, tm, "up  id kfake-west", 30*time.Second)

	hang.Store(true)
	hung := time.Now()
	waitScreen(t, tm, "↻", 5*time.Second) // a refresh is in flight
	pressed := time.Now()
	tm.Send(key("3"))
	waitScreen(t, tm, "[3 Groups]", 2*time.Second)
	if d := time.Since(pressed); d > time.Second {
		t.Errorf("a key took %s to answer while a refresh hung", d)
	}
	tm.Send(key("1"))
	waitScreen(t, tm, "DOWN (unreachable)", 3*timeout)
	took := time.Since(hung)
	t.Logf("hung west shown down %s after it stopped answering", took.Round(time.Millisecond))
	if took > 2*timeout+2*time.Second {
		t.Errorf("hung west was shown down after %s; the refresh timeout is %s", took, timeout)
	}
	hang.Store(false)
	tm.Send(key("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
}

// TestOffsetsSyncThroughKeys: s on a group shows the offsets it would
// commit on the standby, asks, and commits the exact translation.
func TestOffsetsSyncThroughKeys(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{
		Mirror: "  topics: {include: [\"orders\"]}\n  groups: {include: [\"billing\"]}\n  group_sync_interval: 1h",
	})
	topo := p.Topology
	east := kfaketest.Dial(t, topo, "east")
	kfaketest.Seed(t, topo, "east", "orders", 3, 10, "billing", 4)
	runMirror(t, topo)

	m := New(Options{Topology: topo, Interval: 300 * time.Millisecond, Timeout: 10 * time.Second, JournalDir: t.TempDir()})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 40))
	waitScreen(t, tm, "lag 0 records", 60*time.Second)
	// The group moves on east after whatever the mirror synced.
	req := &sarama.OffsetCommitRequest{Version: 7, ConsumerGroup: "billing", ConsumerGroupGeneration: -1}
	for part := range int32(3) {
		req.AddBlock("orders", part, 7, 0, "")
	}
	coord, err := east.Coordinator("billing")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := coord.CommitOffset(req); err != nil {
		t.Fatal(err)
	}
	tm.Send(key("3"))
	waitScreen(t, tm, "billing", 10*time.Second)
	tm.Send(key("s"))
	waitScreen(t, tm, "Commit 3 offset(s) on west? [y/N]", 30*time.Second)
	tm.Send(key("y"))
	waitScreen(t, tm, "committed 3 offset(s) on west", 30*time.Second)
	tm.Send(key("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))

	west := kfaketest.Dial(t, topo, "west")
	for part := range int32(3) {
		at := kfaketest.Committed(t, west, "billing", "orders", part)
		if got, want := valueAt(t, west, "orders", part, at), strconv.Itoa(int(part))+"/7"; got != want {
			t.Errorf("after s, billing on west reads orders/%d offset %d next, record %q; on east it reads %q next", part, at, got, want)
		}
	}
}
