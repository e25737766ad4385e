package failover

// A cluster that returns with another cluster id (rebuilt empty) is
// flagged in the run and in status, and the records of the RPO are
// reported lost, with their count.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

// refuseOrders makes c refuse every produce to orders (the mirror's data
// stays on the source), until c.DropControl().
func refuseOrders(c *kfake.Cluster) {
	c.ControlKey(0, func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		pr := req.(*kmsg.ProduceRequest)
		for _, tp := range pr.Topics {
			if tp.Topic != "orders" {
				continue
			}
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
		return nil, nil, false
	})
}

// TestRebuiltClusterFlagged: after an unplanned failover with an RPO of 9
// records, east comes back empty under another cluster id. status flags
// it, naming the 9 lost records; the resumed run reports it in its
// salvage step, with the count, and ends steady.
func TestRebuiltClusterFlagged(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Persist: true, Mirror: ordersBillingYAML, Extra: "failover: {fence: none, drain_timeout: 30s, quiet_period: 300ms}\n"})
	topo := p.Topology
	kfaketest.CreateTopic(t, topo, "east", "orders", 1, nil)
	kfaketest.Produce(t, topo, "east", "orders", 20)
	startMirror(t, topo, "east", "west")
	waitMirrored(t, topo, "east", "west")
	refuseOrders(p.West)
	kfaketest.Produce(t, topo, "east", "orders", 9)
	// The mirror's own observation, on west: east is down when the RPO
	// is measured, so it is all the run has.
	west := kfaketest.Dial(t, topo, "west")
	kfaketest.Wait(t, 20*time.Second, "the mirror observed the 9 records it cannot copy", func() (bool, string) {
		seen, err := linkstate.LastObserved(kfaketest.Ctx(t, 10*time.Second), west, topo.Link("east", "west"))
		if err != nil {
			return false, err.Error()
		}
		o := seen[topology.TopicPartition{Topic: "orders", Partition: 0}]
		return o.End-o.Mirrored == 9, fmt.Sprintf("%+v", o)
	})
	addr := p.East.ListenAddrs()[0]
	p.Stop("east")
	p.West.DropControl()

	plan, err := PlanFailover(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), FailoverRequest{To: "west", Mode: Unplanned})
	if err != nil {
		t.Fatal(err)
	}
	var in Inputs
	if err := plan.DecodeInputs(&in); err != nil || in.ClusterIDs["east"] != "kfake-east" {
		t.Errorf("the unplanned plan does not know east's cluster id: %v %v", in.ClusterIDs, err)
	}
	journal := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := Execute(ctx, kfaketest.Session(t, topo), plan, RunOptions{JournalDir: journal, Yes: true}); !errors.Is(err, kafkaconn.ErrUnreachable) {
		t.Fatalf("the unplanned run should stop at east while it is down; got %v", err)
	}

	var port int
	if _, err := fmt.Sscanf(addr[strings.LastIndex(addr, ":")+1:], "%d", &port); err != nil {
		t.Fatal(err)
	}
	rebuilt, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("kfake-east-rebuilt"), kfake.Ports(port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rebuilt.Close)

	st, _ := inspect.CollectStatus(kfaketest.Ctx(t, 20*time.Second), kfaketest.Session(t, topo))
	var east *inspect.ClusterStatus
	for i := range st.Clusters {
		if st.Clusters[i].Name == "east" {
			east = &st.Clusters[i]
		}
	}
	if east == nil || !east.IdentityChanged || east.RecordedClusterID != "kfake-east" {
		t.Errorf("status does not flag east as rebuilt: %+v", east)
	}
	problems := strings.Join(st.Problems, "\n")
	for _, want := range []string{"kfake-east-rebuilt", "rebuilt", "9 record(s)", "lost"} {
		if !strings.Contains(problems, want) {
			t.Errorf("status problems do not say %q:\n%s", want, problems)
		}
	}

	if err := Resume(ctx, kfaketest.Session(t, topo), plan.ID, RunOptions{JournalDir: journal, Yes: true}); err != nil {
		t.Fatalf("resume: %v", err)
	}
	var salvage SalvageReport
	if err := jsonUnmarshal(outputOf(t, journal, plan.ID, StepSalvage), &salvage); err != nil {
		t.Fatal(err)
	}
	if salvage.Identity == nil || salvage.Identity.LostRecords != 9 || salvage.Identity.Now != "kfake-east-rebuilt" {
		t.Errorf("the salvage step does not report east rebuilt with 9 lost records: %+v", salvage.Identity)
	}
}
