package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/mirror"
	"github.com/drctl/drctl/verify"
)

// TestVerifyCommand: drctl verify exits 0 on a clean mirror, also while
// the mirror copies new records; 1 once a record is written straight
// into the standby, naming it; 2 on bad input; 3 with the standby down.
func TestVerifyCommand(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"orders\"]}\n  group_sync_interval: 1h\n"})
	kfaketest.CreateTopic(t, p.Topology, "east", "orders", 2, nil)
	kfaketest.ProduceEach(t, p.Topology, "east", "orders", 2, 30)
	ctx, stop := context.WithCancel(context.Background())
	d := mirror.NewDaemon(p.Topology, mirror.DaemonOptions{StatePoll: 200 * time.Millisecond,
		Engine: mirror.Options{Shards: 1, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond}})
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	stopMirror := func() { stop(); <-done }
	t.Cleanup(func() { stop() })
	link := p.Topology.Link("east", "west")
	caught := func() {
		kfaketest.Wait(t, 60*time.Second, "the mirror to catch up", func() (bool, string) {
			rep, err := linkstate.MeasureLag(kfaketest.Ctx(t, 10*time.Second), kfaketest.Session(t, p.Topology), link)
			return err == nil && rep.Caught(), fmt.Sprint(err)
		})
	}
	caught()

	// New records while the mirror runs: verify proves what is mirrored.
	kfaketest.ProduceEach(t, p.Topology, "east", "orders", 2, 40)
	out, errb, code := drctl(t, "-c", p.Path, "verify", "-o", "json")
	var rep verify.Report
	if code != exitOK || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("verify during a live mirror: exit %d\n%s\n%s", code, out, errb)
	}
	if s := rep.Summary; s.Partitions != 2 || s.Identical != 2 || s.Compared != s.SourceRecords || s.Compared < 60 || rep.Link != "east->west" {
		t.Errorf("summary %+v (link %s)", s, rep.Link)
	}

	caught()
	stopMirror()
	out, errb, code = drctl(t, "-c", p.Path, "verify", "--topic", "orders", "--partition", "1")
	if code != exitOK || !strings.Contains(out, "east orders/1 [0, 70) = west [0, ") || !strings.Contains(out, "identical, 70 of 70 records compared") {
		t.Fatalf("verify orders/1: exit %d\n%s\n%s", code, out, errb)
	}
	rogue := kfaketest.IdempotentProducer(t, p.Topology.Clusters["west"], "")
	_, at, err := rogue.SendMessage(&sarama.ProducerMessage{Topic: "orders", Partition: 0, Value: sarama.StringEncoder("not from east")})
	if err != nil {
		t.Fatal(err)
	}
	out, errb, code = drctl(t, "-c", p.Path, "verify")
	if code != exitDiffers || !strings.Contains(out, "east orders/0") || !strings.Contains(out, "DIFFERS") ||
		!strings.Contains(out, fmt.Sprintf("unexpected: east (none), west offset %d", at)) || !strings.Contains(errb, "1 of 2 partitions") {
		t.Errorf("verify with a record written into the standby: exit %d\n%s\n%s", code, out, errb)
	}
	out, _, code = drctl(t, "-c", p.Path, "verify", "-o", "json")
	if code != exitDiffers || json.Unmarshal([]byte(out), &rep) != nil || rep.Summary.Differing != 1 ||
		rep.Partitions[0].Details[0].TargetOffset != at || rep.Partitions[0].Details[0].Kind != verify.Unexpected {
		t.Errorf("json with a difference: exit %d\n%s", code, out)
	}

	for name, args := range map[string][]string{
		"partition without topic": {"--partition", "1"},
		"since and from-offset":   {"--since", "1h", "--from-offset", "3"},
		"negative sample":         {"--sample", "-2"},
		"topic not mirrored":      {"--topic", "payments"},
		"no such partition":       {"--topic", "orders", "--partition", "7"},
	} {
		if _, errb, code := drctl(t, append([]string{"-c", p.Path, "verify"}, args...)...); code != exitBadInput {
			t.Errorf("%s: exit %d, want 2: %s", name, code, errb)
		}
	}
	p.Stop("west")
	if _, errb, code := drctl(t, "-c", p.Path, "verify", "--timeout", "30s"); code != exitUnreachable || !strings.Contains(errb, "west") {
		t.Errorf("west down: exit %d, want 3: %s", code, errb)
	}
}
