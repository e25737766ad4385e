package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestMirrorReshardCommand: drctl mirror reshard without a terminal needs
// --yes; it refuses (exit 2, the fix named, nothing changed) a link that
// never ran and a link whose mirror runs; once the mirror stopped it
// changes the count, says so, and a mirror run without --shards copies on
// with the new count.
func TestMirrorReshardCommand(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"orders\"]}"})
	kfaketest.CreateTopic(t, p.Topology, "east", "orders", 3, nil)
	kfaketest.Produce(t, p.Topology, "east", "orders", 30)
	link := p.Topology.Link("east", "west")
	west := kfaketest.Dial(t, p.Topology, "west")
	shards := func() int {
		info, err := kafkaread.Topic(context.Background(), west, link.ShardsTopic())
		if err != nil {
			t.Fatal(err)
		}
		return info.Partitions
	}
	reshard := func(args ...string) (string, string, int) {
		return drctl(t, append([]string{"-c", p.Path, "mirror", "reshard"}, args...)...)
	}
	if _, stderr, code := reshard("--shards", "2"); code != 2 || !strings.Contains(stderr, "pass --yes") {
		t.Fatalf("without a terminal or --yes: exit %d, %q", code, stderr)
	}
	if _, stderr, code := reshard("--shards", "2", "--yes"); code != 2 || !strings.Contains(stderr, "has not run") {
		t.Fatalf("a link that never ran: exit %d, %q", code, stderr)
	}

	mirrorRun := func(args ...string) (stop func() int) {
		ctx, cancel := context.WithCancel(context.Background())
		exited := make(chan int, 1)
		go func() {
			exited <- run(ctx, append([]string{"drctl", "-c", p.Path, "mirror", "run", "--listen", ""}, args...), Streams{Out: io.Discard, Err: io.Discard})
		}()
		return func() int { cancel(); return <-exited }
	}
	stop := mirrorRun("--shards", "4")
	// A reshard is refused while the link's worker group has members. A
	// process that has created the link's topics but not joined the group
	// yet is not one: a reshard then goes ahead, and the process stops on
	// its own once it finds the count changed (mirror.ShardCountError). So
	// the refusal is tried once the mirror has joined.
	admin := kfaketest.Admin(t, west)
	kfaketest.Wait(t, 30*time.Second, "the mirror in the link's worker group", func() (bool, string) {
		d, err := admin.DescribeConsumerGroups([]string{link.WorkersGroup()})
		if err != nil || len(d) == 0 {
			return false, fmt.Sprint("describe: ", err)
		}
		return len(d[0].Members) > 0, fmt.Sprintf("%d member(s)", len(d[0].Members))
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, stderr, code := reshard("--shards", "2", "--yes")
		if code == 2 && strings.Contains(stderr, "stop every drctl mirror run") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("reshard while the mirror runs: exit %d, %q; want a refusal naming the fix", code, stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := shards(); n != 4 {
		t.Fatalf("a refused reshard left %d shards, want 4", n)
	}
	if code := stop(); code != 0 {
		t.Fatalf("mirror run stopped with exit %d", code)
	}
	stdout, stderr, code := reshard("--shards", "2", "--yes")
	if code != 0 || !strings.Contains(stdout, "4 shards -> 2") || !strings.Contains(stdout, "without --shards") {
		t.Fatalf("reshard of a stopped link: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if n := shards(); n != 2 {
		t.Fatalf("after the reshard the link has %d shards, want 2", n)
	}
	if stdout, _, code := reshard("--shards", "2", "--yes", "-o", "json"); code != 0 || !strings.Contains(stdout, `"from": 2`) || !strings.Contains(stdout, `"to": 2`) {
		t.Fatalf("a reshard to the same count: exit %d, %q", code, stdout)
	}
	// The old count is refused at once, naming both ways out.
	if _, stderr, code := drctl(t, "-c", p.Path, "mirror", "run", "--listen", "", "--shards", "4"); code == 0 ||
		!strings.Contains(stderr, "ran with 2 shards, now asked for 4") || !strings.Contains(stderr, "drctl mirror reshard --shards 4") {
		t.Fatalf("mirror run --shards 4 on a link of 2: exit %d, %q", code, stderr)
	}
	stop = mirrorRun()
	kfaketest.Produce(t, p.Topology, "east", "orders", 30)
	deadline = time.Now().Add(30 * time.Second)
	for {
		stdout, _, code := drctl(t, "-c", p.Path, "mirror", "lag", "-o", "json")
		if code == 0 && strings.Contains(stdout, `"total_records": 0`) && strings.Contains(stdout, `"mirrored": 20`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mirror without --shards after the reshard never caught up: %s", stdout)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code := stop(); code != 0 {
		t.Fatalf("mirror run stopped with exit %d", code)
	}
}
