package inspect

// The configured failover.salvage_topic_suffix decides, in every package
// that selects topics, which topics are quarantine (drctl's own, never
// mirrored, fenced or reported), and the default suffix then means nothing:
// a user topic that happens to end with ".drctl-salvage" is an ordinary
// mirrored topic.

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/aclfence"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
)

func TestConfiguredSalvageSuffixHonoured(t *testing.T) {
	allow := func(op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: "*", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
	}
	p := kfaketest.NewPair(t, kfaketest.Options{
		SASL:        true,
		ClusterOpts: []kfake.Opt{kfake.EnableACLs(), kfake.User("SCRAM-SHA-512", "app", "app-secret", allow(kmsg.ACLOperationWrite), allow(kmsg.ACLOperationDescribe))},
		Mirror:      "  topics: {include: [\"orders.*\"]}",
		Extra:       "failover: {fence: acl, producer_principals: [\"User:app\"], salvage_topic_suffix: .quarantine}\n",
	})
	topo := p.Topology
	if topo.Failover.SalvageTopicSuffix != ".quarantine" {
		t.Fatalf("suffix %q: the harness did not set it", topo.Failover.SalvageTopicSuffix)
	}
	for _, cluster := range []string{"east", "west"} {
		for _, topic := range []string{"orders", "orders.quarantine", "orders.drctl-salvage"} {
			kfaketest.CreateTopic(t, topo, cluster, topic, 1, nil)
		}
	}
	east := kfaketest.Dial(t, topo, "east")
	// orders.quarantine is the salvage topic of orders; orders.drctl-salvage
	// is a user topic, since the default suffix is not configured.
	want := []string{"orders", "orders.drctl-salvage"}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The mirror's selection.
	tps, err := linkstate.MirroredPartitions(east, topo)
	if err != nil {
		t.Fatal(err)
	}
	var mirrored []string
	for _, tp := range tps {
		mirrored = append(mirrored, tp.Topic)
	}
	if !reflect.DeepEqual(mirrored, want) {
		t.Errorf("mirror selects %v, want %v", mirrored, want)
	}

	// The acl fence.
	rec, err := aclfence.Fence(ctx, kfaketest.Dial(t, topo, "east"), topo, "east")
	if err != nil {
		t.Fatalf("fence east: %v", err)
	}
	var fenced []string
	for _, a := range rec.Added {
		fenced = append(fenced, a.Topic)
	}
	slices.Sort(fenced)
	if !reflect.DeepEqual(fenced, want) {
		t.Errorf("the fence denies writes on %v, want %v", fenced, want)
	}
	if _, err := aclfence.Unfence(ctx, kfaketest.Dial(t, topo, "east"), topo, "east"); err != nil {
		t.Fatalf("unfence east: %v", err)
	}

	// Status.
	st, _ := CollectStatus(ctx, kfaketest.Session(t, topo))
	if len(st.Unreachable()) != 0 {
		t.Fatalf("unreachable: %v", st.Unreachable())
	}
	var reported []string
	for _, ts := range st.Topics {
		reported = append(reported, ts.Name)
	}
	if !reflect.DeepEqual(reported, want) {
		t.Errorf("status reports %v, want %v", reported, want)
	}
}
