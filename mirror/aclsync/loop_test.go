package aclsync_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/mirror/aclsync"
	"github.com/drctl/drctl/topology"
)

// The loop on two kfake clusters with SASL and ACLs enforced: the
// standby follows the active's ACLs for app, and app may not write to the
// standby (drctl's fence) while it may on the active.

func dial(t *testing.T, c *topology.Cluster) sarama.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := kafkaconn.Dial(ctx, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

func admin(t *testing.T, c *topology.Cluster) sarama.ClusterAdmin {
	t.Helper()
	a, err := sarama.NewClusterAdminFromClient(dial(t, c))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func asApp(c *topology.Cluster) *topology.Cluster {
	app := *c
	app.SASL = &topology.SASL{Mechanism: "SCRAM-SHA-512", Username: "app", Password: "app-secret"}
	return &app
}

func tryProduce(t *testing.T, c *topology.Cluster, topic string) error {
	t.Helper()
	cfg, err := c.SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Return.Successes = true
	cfg.Producer.Retry.Max = 0
	p, err := sarama.NewSyncProducer(c.Bootstrap, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("x")})
	return err
}

func owned(t *testing.T, scope aclsync.Scope, a sarama.ClusterAdmin) []string {
	t.Helper()
	bs, err := aclsync.List(a)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, b := range bs {
		if scope.Owns(b) {
			out = append(out, b.String())
		}
	}
	slices.Sort(out)
	return out
}

func TestLoopOnKfake(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{
		SASL:        true,
		ClusterOpts: []kfake.Opt{kfake.EnableACLs(), kfake.User("SCRAM-SHA-512", "app", "app-secret")},
		Mirror:      "  topics: {include: [\"orders\", \"payments\"]}\n  groups: {include: [\"billing\"]}\n  acls: {interval: 100ms}",
		Extra:       "failover: {fence: acl, producer_principals: [\"User:app\"]}\n",
	})
	topo := p.Topology
	east, west := admin(t, topo.Clusters["east"]), admin(t, topo.Clusters["west"])
	for _, a := range []sarama.ClusterAdmin{east, west} {
		for _, tp := range []string{"orders", "payments", "scratch"} {
			if err := a.CreateTopic(tp, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	res := func(rt sarama.AclResourceType, name string) sarama.Resource {
		return sarama.Resource{ResourceType: rt, ResourceName: name, ResourcePatternType: sarama.AclPatternLiteral}
	}
	acl := func(principal string, op sarama.AclOperation, perm sarama.AclPermissionType) sarama.Acl {
		return sarama.Acl{Principal: principal, Host: "*", Operation: op, PermissionType: perm}
	}
	allow := sarama.AclPermissionAllow
	topic, group := sarama.AclResourceTopic, sarama.AclResourceGroup
	// east's operators grant app its topics and group; ACLs outside the
	// sync's scope are there too (drctl's own, a topic not mirrored).
	for _, c := range []struct {
		r sarama.Resource
		a sarama.Acl
	}{
		{res(topic, "orders"), acl("User:app", sarama.AclOperationWrite, allow)},
		{res(topic, "orders"), acl("User:app", sarama.AclOperationDescribe, allow)},
		{res(topic, "payments"), acl("User:app", sarama.AclOperationRead, allow)},
		{res(group, "billing"), acl("User:app", sarama.AclOperationRead, allow)},
		{res(topic, "orders"), acl("User:drctl", sarama.AclOperationAlter, allow)},
		{res(topic, "scratch"), acl("User:app", sarama.AclOperationWrite, allow)},
	} {
		if err := east.CreateACL(c.r, c.a); err != nil {
			t.Fatal(err)
		}
	}
	// west holds a stale grant the active does not have, and one outside
	// the scope.
	if err := west.CreateACL(res(topic, "payments"), acl("User:app", sarama.AclOperationWrite, allow)); err != nil {
		t.Fatal(err)
	}
	if err := west.CreateACL(res(topic, "scratch"), acl("User:ops", sarama.AclOperationWrite, allow)); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var rounds []aclsync.Round
	notSteady := 0
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	loop := &aclsync.Loop{Topo: topo, Source: "east", Target: "west", OnRound: func(r aclsync.Round, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			rounds = append(rounds, r)
		case errors.Is(err, aclsync.ErrNotSteady):
			notSteady++
		}
	}}
	go func() { defer close(done); _ = loop.Run(ctx) }()
	defer func() { cancel(); <-done }()

	scope := aclsync.NewScope(topo)
	same := func() error {
		e, w := owned(t, scope, east), owned(t, scope, west)
		if !slices.Equal(e, w) {
			return fmt.Errorf("east %q, west %q", e, w)
		}
		return nil
	}
	kfaketest.WaitFor(t, 20*time.Second, "west's ACLs in step with east's", same)
	if got := owned(t, scope, west); len(got) != 4 {
		t.Errorf("west holds %q, want east's 4 app ACLs", got)
	}
	wantOutside := []string{"ALLOW WRITE for User:ops from * on Topic:scratch (literal)"}
	var outside []string
	bs, _ := aclsync.List(west)
	for _, b := range bs {
		if !scope.Owns(b) && b.Permission == sarama.AclPermissionAllow {
			outside = append(outside, b.String())
		}
	}
	if !slices.Equal(outside, wantOutside) {
		t.Errorf("west's ACLs outside the scope: %q, want them untouched: %q", outside, wantOutside)
	}

	// The standby is fenced for app on every mirrored topic; the active not.
	kfaketest.WaitFor(t, 20*time.Second, "app refused on west's orders", func() error {
		if err := tryProduce(t, asApp(topo.Clusters["west"]), "orders"); !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
			return fmt.Errorf("app writes to the standby: %v", err)
		}
		return nil
	})
	if err := tryProduce(t, asApp(topo.Clusters["west"]), "payments"); !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Errorf("app writing to the standby's payments: %v, want refused", err)
	}
	if err := tryProduce(t, asApp(topo.Clusters["east"]), "orders"); err != nil {
		t.Errorf("app cannot write to the active: %v", err)
	}
	var fence []string
	bs, _ = aclsync.List(west)
	for _, b := range bs {
		if b.Permission == sarama.AclPermissionDeny {
			fence = append(fence, b.String())
		}
	}
	slices.Sort(fence)
	if want := []string{"DENY WRITE for User:app from * on Topic:orders (literal)", "DENY WRITE for User:app from * on Topic:payments (literal)"}; !slices.Equal(fence, want) {
		t.Errorf("west's DENY ACLs: %q, want the fence on the mirrored topics only: %q", fence, want)
	}

	// A deletion on the active propagates; so does a new topic's fence.
	if _, err := east.DeleteACL(sarama.AclFilter{ResourceType: topic, ResourceName: new("orders"), ResourcePatternTypeFilter: sarama.AclPatternLiteral,
		Principal: new("User:app"), Host: new("*"), Operation: sarama.AclOperationDescribe, PermissionType: allow}, false); err != nil {
		t.Fatal(err)
	}
	if err := east.CreateACL(res(group, "billing"), acl("User:reporter", sarama.AclOperationRead, allow)); err != nil {
		t.Fatal(err)
	}
	kfaketest.WaitFor(t, 20*time.Second, "a deletion and an addition on east reach west", same)
	if got := owned(t, scope, west); slices.Contains(got, "ALLOW DESCRIBE for User:app from * on Topic:orders (literal)") ||
		!slices.Contains(got, "ALLOW READ for User:reporter from * on Group:billing (literal)") {
		t.Errorf("west after the changes: %q", got)
	}

	// While a failover moves the roles, the loop changes nothing.
	st := rolestate.State{Topology: topo.Name, Epoch: 1, Active: "east", Standby: "west", Phase: rolestate.PhaseFailingOver,
		Run: &rolestate.Run{ID: "r1", Kind: rolestate.RunFailover}}
	for _, c := range []string{"east", "west"} {
		cl := dial(t, topo.Clusters[c])
		if err := rolestate.CompareAndSet(context.Background(), cl, cl.Config(), 0, st); err != nil {
			t.Fatalf("write the role state on %s: %v", c, err)
		}
	}
	mu.Lock()
	n, skipped := len(rounds), notSteady
	mu.Unlock()
	if err := east.CreateACL(res(topic, "orders"), acl("User:late", sarama.AclOperationRead, allow)); err != nil {
		t.Fatal(err)
	}
	kfaketest.WaitFor(t, 20*time.Second, "three rounds that saw the failing-over phase", func() error {
		mu.Lock()
		defer mu.Unlock()
		if notSteady < skipped+3 {
			return fmt.Errorf("%d so far", notSteady-skipped)
		}
		return nil
	})
	if got := owned(t, scope, west); slices.Contains(got, "ALLOW READ for User:late from * on Topic:orders (literal)") {
		t.Errorf("the loop copied an ACL while the phase was failing-over")
	}
	mu.Lock()
	if len(rounds) != n {
		t.Errorf("%d rounds succeeded while the phase was failing-over", len(rounds)-n)
	}
	mu.Unlock()
}

// TestStaleGrantsRemovedInOneRequest: a standby holding many grants the
// active does not have loses them in one DeleteAcls request (sarama's
// ClusterAdmin.DeleteACL sends one per binding, each waiting for the
// controller), and only those: the grant the active has too and the ACLs
// outside the sync's scope stay.
func TestStaleGrantsRemovedInOneRequest(t *testing.T) {
	const stale = 30
	p := kfaketest.NewPair(t, kfaketest.Options{
		SASL:        true,
		ClusterOpts: []kfake.Opt{kfake.EnableACLs()},
		Mirror:      "  topics: {include: [\"t\\\\d+\"]}\n  acls: {interval: 1h}",
	})
	topo := p.Topology
	east, west := admin(t, topo.Clusters["east"]), admin(t, topo.Clusters["west"])
	grant := func(a sarama.ClusterAdmin, topic, principal string) {
		t.Helper()
		if err := a.CreateACL(sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: topic, ResourcePatternType: sarama.AclPatternLiteral},
			sarama.Acl{Principal: principal, Host: "*", Operation: sarama.AclOperationRead, PermissionType: sarama.AclPermissionAllow}); err != nil {
			t.Fatal(err)
		}
	}
	grant(east, "t00", "User:app")
	grant(west, "t00", "User:app")
	for i := range stale {
		grant(west, fmt.Sprintf("t%02d", i), "User:old")
	}
	grant(west, "scratch", "User:ops") // outside the scope
	var requests, filters atomic.Int32
	p.West.ControlKey(int16(kmsg.DeleteACLs), func(r kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		requests.Add(1)
		filters.Add(int32(len(r.(*kmsg.DeleteACLsRequest).Filters)))
		return nil, nil, false
	})
	r, err := aclsync.SyncOnce(context.Background(), topo, "west", dial(t, topo.Clusters["east"]), dial(t, topo.Clusters["west"]),
		func(context.Context) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Applied.Remove) != stale || len(r.Applied.Add) != 0 {
		t.Errorf("the round removed %d and added %d ACLs, want %d removed", len(r.Applied.Remove), len(r.Applied.Add), stale)
	}
	if requests.Load() != 1 || filters.Load() != stale {
		t.Errorf("%d DeleteAcls request(s) with %d filters, want 1 with %d", requests.Load(), filters.Load(), stale)
	}
	bs, err := aclsync.List(west)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, b := range bs {
		left = append(left, b.String())
	}
	slices.Sort(left)
	want := []string{"ALLOW READ for User:app from * on Topic:t00 (literal)", "ALLOW READ for User:ops from * on Topic:scratch (literal)"}
	if !slices.Equal(left, want) {
		t.Errorf("west holds %q, want %q", left, want)
	}
}
