package aclsync_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/mirror/aclsync"
)

// TestFenceBeforeTheGrantsOfANewTopic: a topic new on the active, with
// its application's grants (ALLOW WRITE included), is not on the standby
// yet. One round copies the grants; the standby's DENY WRITE for it must
// be created before them (or in the same request), although the topic does
// not exist there, so that the application cannot write to the standby the
// moment the mirror creates the topic.
func TestFenceBeforeTheGrantsOfANewTopic(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{
		SASL:        true,
		ClusterOpts: []kfake.Opt{kfake.EnableACLs(), kfake.User("SCRAM-SHA-512", "app", "app-secret")},
		Mirror:      "  topics: {include: [\"orders\", \"fresh\"]}\n  acls: {interval: 1h}",
		Extra:       "failover: {fence: acl, producer_principals: [\"User:app\"]}\n",
	})
	topo := p.Topology
	kfaketest.CreateTopic(t, topo, "east", "orders", 1, nil)
	kfaketest.CreateTopic(t, topo, "west", "orders", 1, nil)
	kfaketest.CreateTopic(t, topo, "east", "fresh", 1, nil) // not on the standby yet
	east := admin(t, topo.Clusters["east"])
	for _, tp := range []string{"orders", "fresh"} {
		if err := east.CreateACL(sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: tp, ResourcePatternType: sarama.AclPatternLiteral},
			sarama.Acl{Principal: "User:app", Host: "*", Operation: sarama.AclOperationWrite, PermissionType: sarama.AclPermissionAllow}); err != nil {
			t.Fatal(err)
		}
	}
	// Every CreateAcls request west receives, in order: "ALLOW fresh",
	// "DENY fresh" per creation.
	var mu sync.Mutex
	var creations [][]string
	p.West.ControlKey(int16(kmsg.CreateACLs), func(r kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		var req []string
		for _, c := range r.(*kmsg.CreateACLsRequest).Creations {
			if c.ResourceType == kmsg.ACLResourceTypeTopic && c.Operation == kmsg.ACLOperationWrite {
				req = append(req, fmt.Sprintf("%s %s", c.PermissionType, c.ResourceName))
			}
		}
		mu.Lock()
		creations = append(creations, req)
		mu.Unlock()
		return nil, nil, false
	})
	r, err := aclsync.SyncOnce(context.Background(), topo, "west", dial(t, topo.Clusters["east"]), dial(t, topo.Clusters["west"]),
		func(context.Context) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Applied.Add) != 2 {
		t.Errorf("the round copied %d grant(s), want both ALLOW WRITE: %v", len(r.Applied.Add), r.Applied.Add)
	}
	mu.Lock()
	for _, tp := range []string{"orders", "fresh"} {
		deny, allow := -1, -1
		for i, req := range creations {
			for _, c := range req {
				if c == "DENY "+tp && deny < 0 {
					deny = i
				}
				if c == "ALLOW "+tp && allow < 0 {
					allow = i
				}
			}
		}
		if deny < 0 || allow < 0 || deny > allow {
			t.Errorf("topic %s: DENY WRITE in CreateAcls request %d, ALLOW WRITE in request %d (of %q): want the DENY first or in the same request",
				tp, deny, allow, creations)
		}
	}
	mu.Unlock()

	// The mirror creates the topic on the standby: the application is
	// refused there from its first moment.
	kfaketest.CreateTopic(t, topo, "west", "fresh", 1, nil)
	if err := tryProduce(t, asApp(topo.Clusters["west"]), "fresh"); !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Errorf("app writing to the standby's new topic fresh: %v, want refused by the fence", err)
	}
	if err := tryProduce(t, asApp(topo.Clusters["east"]), "fresh"); err != nil {
		t.Errorf("app cannot write to the active's fresh: %v", err)
	}
}
