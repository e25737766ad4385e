package inspect

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/aclfence"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// TestStatusFencedOnKfake: with fence: acl, status says per cluster whether
// drctl's fence is in place, before a fence, while it holds and after
// unfence.
func TestStatusFencedOnKfake(t *testing.T) {
	allow := kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: "*", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationWrite, Allow: true}
	// ops may look at everything but alter nothing: it cannot fence.
	ops := []kfake.ACL{
		{Resource: kmsg.ACLResourceTypeCluster, Name: "kafka-cluster", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationDescribe, Allow: true},
		{Resource: kmsg.ACLResourceTypeTopic, Name: "*", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationDescribe, Allow: true},
		{Resource: kmsg.ACLResourceTypeTopic, Name: "*", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationRead, Allow: true},
	}
	p := kfaketest.NewPair(t, kfaketest.Options{
		SASL: true,
		ClusterOpts: []kfake.Opt{kfake.EnableACLs(), kfake.User("SCRAM-SHA-512", "app", "app-secret", allow),
			kfake.User("SCRAM-SHA-512", "ops", "ops-secret", ops...)},
		Mirror: "  topics: {include: [\"orders\"]}",
		Extra:  "failover: {fence: acl, producer_principals: [\"User:app\"]}\n",
	})
	topo := p.Topology
	kfaketest.CreateTopic(t, topo, "east", "orders", 1, nil)
	ctx := kfaketest.Ctx(t, 60*time.Second)
	fenced := func() map[string]string {
		st, _ := CollectStatus(ctx, kfaketest.Session(t, topo))
		out := map[string]string{}
		for _, c := range st.Clusters {
			switch {
			case c.Fenced == nil:
				out[c.Name] = "unknown"
			case *c.Fenced:
				out[c.Name] = "fenced"
			default:
				out[c.Name] = "open"
			}
		}
		return out
	}
	if got := fenced(); got["east"] != "open" || got["west"] != "open" {
		t.Errorf("before any fence: %v, want both open", got)
	}
	if _, err := aclfence.Fence(ctx, kfaketest.Dial(t, topo, "east"), topo, "east"); err != nil {
		t.Fatalf("fence east: %v", err)
	}
	if got := fenced(); got["east"] != "fenced" || got["west"] != "open" {
		t.Errorf("with east fenced: %v, want east fenced, west open", got)
	}
	if _, err := aclfence.Unfence(ctx, kfaketest.Dial(t, topo, "east"), topo, "east"); err != nil {
		t.Fatalf("unfence east: %v", err)
	}
	if got := fenced(); got["east"] != "open" {
		t.Errorf("after unfence: %v, want east open", got)
	}

	// drctl's own principal (a super user) may fence; ops may not.
	permitted := func(topo *topology.Topology) map[string]string {
		st, _ := CollectStatus(ctx, kfaketest.Session(t, topo))
		out := map[string]string{}
		for _, c := range st.Clusters {
			if c.FencePermitted == nil {
				out[c.Name] = "unknown"
			} else {
				out[c.Name] = map[bool]string{true: "may fence", false: "may not fence"}[*c.FencePermitted]
			}
		}
		return out
	}
	if got := permitted(topo); got["east"] != "may fence" || got["west"] != "may fence" {
		t.Errorf("drctl as super user: %v, want both may fence", got)
	}
	asOps := *topo
	asOps.Clusters = map[string]*topology.Cluster{}
	for name, c := range topo.Clusters {
		cc := *c
		cc.SASL = &topology.SASL{Mechanism: "SCRAM-SHA-512", Username: "ops", Password: "ops-secret"}
		asOps.Clusters[name] = &cc
	}
	if got := permitted(&asOps); got["east"] != "may not fence" || got["west"] != "may not fence" {
		t.Errorf("drctl as ops without Alter on the cluster: %v, want both may not fence", got)
	}
}
