package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/mirror"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/verify"
)

// TestVerifyAfterFailover: after a failover to west, stopped by the
// operator right after the flip (so east, the old active, awaits its
// wipe), drctl verify checks the link before the flip, east->west, on its
// own: every copy on west identical, the records west took since the flip
// not counted against it, the records east took after the flip (a producer
// that did not stop) named as never copied. The live link west->east has
// no map yet and says so. Once the resumed run has wiped and re-seeded
// east, the live link verifies, and the old link is refused: east's topic
// is another incarnation.
func TestVerifyAfterFailover(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{
		Mirror: "  topics: {include: [\"orders\"]}\n  groups: {include: [\"billing\"]}\n  group_sync_interval: 300ms\n",
		Extra:  "failover: {fence: none, drain_timeout: 30s, quiet_period: 300ms}\n",
	})
	topo, path := p.Topology, p.Path
	kfaketest.CreateTopic(t, topo, "east", "orders", 2, nil)
	kfaketest.ProduceEach(t, topo, "east", "orders", 2, 30)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := mirror.NewDaemon(topo, mirror.DaemonOptions{StatePoll: 200 * time.Millisecond,
		Engine: mirror.Options{Shards: 1, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond}})
	mctx, stopMirror := context.WithCancel(ctx)
	mirrorDone := make(chan error, 1)
	go func() { mirrorDone <- d.Run(mctx) }()
	defer func() { stopMirror(); <-mirrorDone }()
	caught := func(source, target string) {
		kfaketest.Wait(t, 60*time.Second, "the mirror "+source+"->"+target+" to catch up", func() (bool, string) {
			rep, err := linkstate.MeasureLag(kfaketest.Ctx(t, 10*time.Second), kfaketest.Session(t, topo), topo.Link(source, target))
			return err == nil && rep.Caught(), fmt.Sprint(err)
		})
	}
	caught("east", "west")

	// The failover, stopped (a first Ctrl-C) once the roles flipped and
	// the old link was fenced.
	plan, err := failover.PlanFailover(ctx, kfaketest.Session(t, topo), failover.FailoverRequest{To: "west"})
	if err != nil {
		t.Fatal(err)
	}
	journal := t.TempDir()
	stop := &plans.Interrupts{}
	yes := failover.RunOptions{JournalDir: journal, Confirm: func(string) error { return nil }}
	interrupted := yes
	interrupted.Interrupts = stop
	interrupted.Hooks = []plans.Hook{plans.HookFunc(func(_ context.Context, e plans.Event) error {
		if e.Type == plans.EventStepDone && e.Name == failover.StepFenceMirror {
			stop.Interrupt()
		}
		return nil
	})}
	if err := failover.Execute(ctx, kfaketest.Session(t, topo), plan, interrupted); !errors.Is(err, plans.ErrInterrupted) {
		t.Fatalf("the failover should stop after the flip; got %v", err)
	}
	// West is the active: applications write to it; one producer kept
	// writing to east.
	kfaketest.ProduceEach(t, topo, "west", "orders", 2, 3)
	kfaketest.ProduceEach(t, topo, "east", "orders", 2, 4)

	out, errb, code := drctl(t, "-c", path, "verify", "-o", "json")
	var rep verify.Report
	if code != exitOK || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("verify after the flip: exit %d\n%s\n%s", code, out, errb)
	}
	if rep.Link != "east->west" || !rep.Retired || !strings.Contains(rep.Note, "awaits its wipe") || !rep.Proven() || rep.Summary.Compared != 60 {
		t.Errorf("verify after the flip: link %s, retired %v, note %q, summary %+v", rep.Link, rep.Retired, rep.Note, rep.Summary)
	}
	west := kfaketest.Dial(t, topo, "west")
	for _, pr := range rep.Partitions {
		end, err := west.GetOffset("orders", pr.Partition, sarama.OffsetNewest)
		if err != nil {
			t.Fatal(err)
		}
		if pr.SourceEnd-pr.SourceTo != 4 || pr.TargetTo > end-3 {
			t.Errorf("%s/%d: source [%d, %d) of %d, target [%d, %d): want 4 offsets never copied, the target range ending at the last copy",
				pr.Topic, pr.Partition, pr.SourceFrom, pr.SourceTo, pr.SourceEnd, pr.TargetFrom, pr.TargetTo)
		}
	}
	out, errb, code = drctl(t, "-c", path, "verify")
	for _, want := range []string{"verify east -> west", "awaits its wipe", "identical, 30 of 30 records compared", "offsets [30, 34) were never copied by this link"} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("verify after the flip, text: no %q (exit %d)\n%s\n%s", want, code, out, errb)
		}
	}
	// The same link named; the live one, which has copied nothing.
	if out, errb, code := drctl(t, "-c", path, "verify", "--link", "east->west", "--topic", "orders", "--partition", "1"); code != exitOK || !strings.Contains(out, "does not run") {
		t.Errorf("--link east->west: exit %d\n%s\n%s", code, out, errb)
	}
	if out, errb, code := drctl(t, "-c", path, "verify", "--link", "west->east"); code != exitDiffers || !strings.Contains(out, "holds no offset map of west->east") {
		t.Errorf("--link west->east before the reseed: exit %d\n%s\n%s", code, out, errb)
	}
	for name, c := range map[string]struct{ link, says string }{
		"redirected by the shell": {"east-", "quote the link"},
		"no arrow":                {"east", "give SOURCE->TARGET"},
		"unknown cluster":         {"east->north", "north is no cluster"},
		"one cluster":             {"west->west", "give two clusters"},
	} {
		if _, errb, code := drctl(t, "-c", path, "verify", "--link", c.link); code != exitBadInput || !strings.Contains(errb, c.says) {
			t.Errorf("--link %s (%s): exit %d, want 2 saying %q: %s", c.link, name, code, c.says, errb)
		}
	}

	// The run wipes and re-seeds east; then the live link is the one.
	if err := failover.Resume(ctx, kfaketest.Session(t, topo), plan.ID, yes); err != nil {
		t.Fatalf("resume: %v", err)
	}
	caught("west", "east")
	out, errb, code = drctl(t, "-c", path, "verify", "-o", "json")
	rep = verify.Report{}
	if code != exitOK || json.Unmarshal([]byte(out), &rep) != nil || rep.Link != "west->east" || rep.Retired || rep.Note != "" || !rep.Proven() || rep.Summary.Compared != 66 {
		t.Fatalf("verify after the reseed: exit %d, link %s, retired %v, summary %+v\n%s", code, rep.Link, rep.Retired, rep.Summary, errb)
	}
	out, errb, code = drctl(t, "-c", path, "verify", "--link", "east->west", "-o", "json")
	rep = verify.Report{}
	if code != exitDiffers || json.Unmarshal([]byte(out), &rep) != nil || rep.Summary.NotVerified != 2 ||
		!strings.Contains(rep.Partitions[0].Reason, "not the one the link east->west copied") {
		t.Errorf("the old link after the reseed: exit %d\n%s\n%s", code, out, errb)
	}
	// The live link is checked as any other: a record written straight
	// into east, the new standby, is found.
	rogue := kfaketest.IdempotentProducer(t, topo.Clusters["east"], "")
	if _, _, err := rogue.SendMessage(&sarama.ProducerMessage{Topic: "orders", Partition: 0, Value: sarama.StringEncoder("rogue")}); err != nil {
		t.Fatal(err)
	}
	if _, _, code := drctl(t, "-c", path, "verify"); code != exitDiffers {
		t.Errorf("a record written into east, the new standby: exit %d, want 1", code)
	}
}
