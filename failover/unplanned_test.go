package failover

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/mirror"
	"github.com/drctl/drctl/runrecord"
)

// TestUnplannedFailoverRPOAndSalvage: records produced on the active that
// the mirror could not copy are reported as the RPO of an unplanned
// failover made while the active is down; when it comes back, the reseed
// salvages exactly those records into quarantine on the new active.
func TestUnplannedFailoverRPOAndSalvage(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{
		Persist: true,
		Mirror:  "  topics: {include: [\"orders\"]}\n  groups: {include: [\"billing\"]}\n  group_sync_interval: 300ms",
		Extra:   "failover: {fence: none, drain_timeout: 30s, quiet_period: 300ms}\n",
	})
	topo := p.Topology
	kfaketest.CreateTopicOn(t, kfaketest.Dial(t, topo, "east"), "orders", 2, nil)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := mirror.NewDaemon(topo, mirror.DaemonOptions{StatePoll: 200 * time.Millisecond,
		Engine: mirror.Options{Shards: 2, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond}})
	dDone := make(chan error, 1)
	go func() { dDone <- d.Run(ctx) }()
	defer func() { cancel(); <-dDone }()

	produce := func(n int) {
		t.Helper()
		cfg, _ := topo.Clusters["east"].SaramaConfig()
		cfg.Producer.Return.Successes = true
		cfg.Producer.Partitioner = sarama.NewManualPartitioner
		prod, err := sarama.NewSyncProducer(topo.Clusters["east"].Bootstrap, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		for i := range n {
			if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "orders", Partition: int32(i % 2), Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(100)
	waitMirrored(t, topo, "east", "west")

	// West now refuses the mirror's data (but not its bookkeeping): the
	// next 37 records stay on east only.
	p.West.ControlKey(0, func(req kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		pr := req.(*kmsg.ProduceRequest)
		for _, tp := range pr.Topics {
			if tp.Topic == "orders" {
				resp := pr.ResponseKind().(*kmsg.ProduceResponse)
				for _, rt := range pr.Topics {
					rtr := kmsg.NewProduceResponseTopic()
					rtr.Topic = rt.Topic
					for _, rp := range rt.Partitions {
						prr := kmsg.NewProduceResponseTopicPartition()
						prr.Partition = rp.Partition
						prr.ErrorCode = kerr.NotEnoughReplicas.Code
						rtr.Partitions = append(rtr.Partitions, prr)
					}
					resp.Topics = append(resp.Topics, rtr)
				}
				return resp, nil, true
			}
		}
		return nil, nil, false
	})
	produce(37)
	// Wait until the mirror has observed the new end on east.
	kfaketest.WaitFor(t, 20*time.Second, "the mirror observed 137 records on east", func() error {
		rep, err := inspect.ObservedRPO(ctx, kfaketest.Session(t, topo), "east", "west")
		if err != nil {
			return err
		}
		if rep.Records != 37 {
			return fmt.Errorf("observed RPO %d records", rep.Records)
		}
		return nil
	})

	p.Stop("east") // the site goes down
	p.West.DropControl()
	pctx, pcancel := context.WithTimeout(ctx, 30*time.Second)
	plan, err := PlanFailover(pctx, kfaketest.Session(t, topo), FailoverRequest{To: "west", Mode: Unplanned})
	pcancel()
	if err != nil {
		t.Fatal(err)
	}
	journal := t.TempDir()
	rctx, rcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer rcancel()
	err = Execute(rctx, kfaketest.Session(t, topo), plan, RunOptions{JournalDir: journal, Confirm: func(string) error { return nil }})
	if err == nil || !errors.Is(err, kafkaconn.ErrUnreachable) {
		t.Fatalf("the unplanned run should stop at the stale cluster while east is down; got %v", err)
	}
	var rpo inspect.RPOReport
	if raw := outputOf(t, journal, plan.ID, runrecord.StepRPO); raw != nil {
		if err := jsonUnmarshal(raw, &rpo); err != nil {
			t.Fatal(err)
		}
	}
	if rpo.Records != 37 {
		t.Errorf("reported RPO = %d records, want 37", rpo.Records)
	}
	st, _ := inspect.CollectStatus(ctx, kfaketest.Session(t, topo))
	if st.Roles.Active != "west" {
		t.Errorf("after the unplanned failover the active is %s", st.Roles.Active)
	}

	p.Restart(t, "east") // the old active comes back
	if err := Resume(rctx, kfaketest.Session(t, topo), plan.ID, RunOptions{JournalDir: journal, Confirm: func(string) error { return nil }}); err != nil {
		t.Fatalf("resume: %v", err)
	}
	var salvage SalvageReport
	if err := jsonUnmarshal(outputOf(t, journal, plan.ID, StepSalvage), &salvage); err != nil {
		t.Fatal(err)
	}
	if salvage.Records != 37 {
		t.Errorf("salvaged %d records, want the 37 of the RPO", salvage.Records)
	}
	west := kfaketest.Dial(t, topo, "west")
	n := 0
	for part := range int32(2) {
		recs, err := readCommitted(west, "orders"+topo.Failover.SalvageTopicSuffix, part)
		if err != nil {
			t.Fatal(err)
		}
		n += len(recs)
	}
	if n != 37 {
		t.Errorf("the quarantine topics on west hold %d records, want 37", n)
	}
	st, _ = inspect.CollectStatus(ctx, kfaketest.Session(t, topo))
	if st.Roles.Active != "west" || st.Roles.Phase != "steady" {
		t.Errorf("roles after the resumed run: %+v", st.Roles)
	}
}
