package failover

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/kfaketest"
)

// TestStatusFencedOnKfake: with fence: acl, status says per cluster whether
// drctl's fence is in place, before a fence, while it holds and after
// unfence.
func TestStatusFencedOnKfake(t *testing.T) {
	allow := kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: "*", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationWrite, Allow: true}
	p := kfaketest.NewPair(t, kfaketest.Options{
		SASL:        true,
		ClusterOpts: []kfake.Opt{kfake.EnableACLs(), kfake.User("SCRAM-SHA-512", "app", "app-secret", allow)},
		Mirror:      "  topics: {include: [\"orders\"]}",
		Extra:       "failover: {fence: acl, producer_principals: [\"User:app\"]}\n",
	})
	topo := p.Topology
	rfCreateTopic(t, topo, "east", "orders", 1)
	ctx := rfCtx(t, 60*time.Second)
	fenced := func() map[string]string {
		st, _ := CollectStatusLag(ctx, topo)
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
	if _, err := Fence(ctx, topo, "east"); err != nil {
		t.Fatalf("fence east: %v", err)
	}
	if got := fenced(); got["east"] != "fenced" || got["west"] != "open" {
		t.Errorf("with east fenced: %v, want east fenced, west open", got)
	}
	if _, err := Unfence(ctx, topo, "east"); err != nil {
		t.Fatalf("unfence east: %v", err)
	}
	if got := fenced(); got["east"] != "open" {
		t.Errorf("after unfence: %v, want east open", got)
	}
}
