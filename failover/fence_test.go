package failover

// The acl fence on kfake with SASL and ACLs enforced: Fence stops the
// producer principals from writing to the selected topics while drctl (a
// super user) still can, and Unfence removes exactly what Fence added.

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/aclfence"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// appCluster is cluster c as the application "app" logs in to it.
func appCluster(c *topology.Cluster) *topology.Cluster {
	app := *c
	app.SASL = &topology.SASL{Mechanism: "SCRAM-SHA-512", Username: "app", Password: "app-secret"}
	return &app
}

// tryProduce writes one record to topic and returns the error.
func tryProduce(p sarama.SyncProducer, topic string) error {
	_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("x")})
	return err
}

func TestFenceACLOnKfake(t *testing.T) {
	allow := func(rt kmsg.ACLResourceType, name string, op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: rt, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
	}
	p := kfaketest.NewPair(t, kfaketest.Options{
		SASL: true,
		ClusterOpts: []kfake.Opt{kfake.EnableACLs(), kfake.User("SCRAM-SHA-512", "app", "app-secret",
			allow(kmsg.ACLResourceTypeTopic, "*", kmsg.ACLOperationWrite),
			allow(kmsg.ACLResourceTypeTopic, "*", kmsg.ACLOperationDescribe),
		)},
		Mirror: "  topics: {include: [\"orders\", \"payments\"]}",
		Extra:  "failover: {fence: acl, producer_principals: [\"User:app\"]}\n",
	})
	topo := p.Topology
	for _, tc := range []struct {
		name       string
		partitions int32
	}{{"orders", 2}, {"payments", 1}, {"scratch", 1}} {
		kfaketest.CreateTopic(t, topo, "east", tc.name, tc.partitions, nil)
	}
	east := kfaketest.Admin(t, kfaketest.Dial(t, topo, "east"))
	topic := func(name string) sarama.Resource {
		return sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: name, ResourcePatternType: sarama.AclPatternLiteral}
	}
	denyWrite := func(principal string) sarama.Acl {
		return sarama.Acl{Principal: principal, Host: "*", Operation: sarama.AclOperationWrite, PermissionType: sarama.AclPermissionDeny}
	}
	// Before the fence: the same DENY the fence would add on payments (an
	// operator's), a DENY WRITE for another principal on orders, and an
	// ALLOW on a group.
	preexisting := []struct {
		r sarama.Resource
		a sarama.Acl
	}{
		{topic("payments"), denyWrite("User:app")},
		{topic("orders"), denyWrite("User:other")},
		{sarama.Resource{ResourceType: sarama.AclResourceGroup, ResourceName: "billing", ResourcePatternType: sarama.AclPatternLiteral},
			sarama.Acl{Principal: "User:app", Host: "*", Operation: sarama.AclOperationRead, PermissionType: sarama.AclPermissionAllow}},
	}
	for _, pe := range preexisting {
		if err := east.CreateACL(pe.r, pe.a); err != nil {
			t.Fatalf("create %s: %v", aclString(pe.r, &pe.a), err)
		}
	}

	app := kfaketest.Producer(t, appCluster(topo.Clusters["east"]), 0)
	drctl := kfaketest.Producer(t, topo.Clusters["east"], 0)
	if err := tryProduce(app, "orders"); err != nil {
		t.Fatalf("app cannot write to orders before the fence (test setup): %v", err)
	}
	if err := tryProduce(app, "payments"); !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Fatalf("app writes to payments despite the operator's DENY (test setup): %v", err)
	}
	aclsBefore := aclsOf(t, east)
	westBefore := aclsOf(t, kfaketest.Admin(t, kfaketest.Dial(t, topo, "west")))

	ctx := kfaketest.Ctx(t, 60*time.Second)
	rec, err := Fence(ctx, kfaketest.Session(t, topo), "east")
	if err != nil {
		t.Fatalf("fence east: %v", err)
	}
	wantAdded := []aclfence.ACL{{Topic: "orders", Principal: "User:app", Host: "*"}}
	wantExisting := []aclfence.ACL{{Topic: "payments", Principal: "User:app", Host: "*"}}
	if !reflect.DeepEqual(rec.Added, wantAdded) || !reflect.DeepEqual(rec.Existing, wantExisting) {
		t.Errorf("fence record: added %+v, existing %+v; want added %+v, existing %+v", rec.Added, rec.Existing, wantAdded, wantExisting)
	}
	if stored := fenceRecordOf(t, topo, "east"); stored == nil || !reflect.DeepEqual(*stored, *rec) {
		t.Errorf("east stores the fence record %+v; Fence returned %+v", stored, rec)
	}

	// The fence holds against app on the selected topics, and only there.
	if err := tryProduce(app, "orders"); !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Errorf("app writes to orders on a fenced east: %v", err)
	}
	if err := tryProduce(app, "payments"); !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Errorf("app writes to payments on a fenced east: %v", err)
	}
	if err := tryProduce(app, "scratch"); err != nil {
		t.Errorf("app cannot write to scratch, which is not mirrored and must not be fenced: %v", err)
	}
	if err := tryProduce(drctl, "orders"); err != nil {
		t.Errorf("drctl (super user) cannot write to orders on a fenced east: %v", err)
	}
	fenced := aclsOf(t, east)
	added := aclString(topic("orders"), &sarama.Acl{Principal: "User:app", Host: "*", Operation: sarama.AclOperationWrite, PermissionType: sarama.AclPermissionDeny})
	if want := slices.Sorted(slices.Values(append(slices.Clone(aclsBefore), added))); !reflect.DeepEqual(fenced, want) {
		t.Errorf("ACLs on a fenced east:\n got %q\nwant %q", fenced, want)
	}

	// Fencing again changes nothing and duplicates nothing.
	rec2, err := Fence(ctx, kfaketest.Session(t, topo), "east")
	if err != nil {
		t.Fatalf("fence east again: %v", err)
	}
	if !reflect.DeepEqual(rec2, rec) {
		t.Errorf("fence twice: record %+v, the first was %+v", rec2, rec)
	}
	if stored := fenceRecordOf(t, topo, "east"); stored == nil || !reflect.DeepEqual(*stored, *rec) {
		t.Errorf("after fencing twice east stores %+v, want %+v", stored, rec)
	}
	if again := aclsOf(t, east); !reflect.DeepEqual(again, fenced) {
		t.Errorf("fence twice changed the ACLs:\n got %q\nwant %q", again, fenced)
	}

	removed, err := Unfence(ctx, kfaketest.Session(t, topo), "east")
	if err != nil {
		t.Fatalf("unfence east: %v", err)
	}
	if !reflect.DeepEqual(removed, wantAdded) {
		t.Errorf("unfence removed %+v, want %+v", removed, wantAdded)
	}
	if after := aclsOf(t, east); !reflect.DeepEqual(after, aclsBefore) {
		t.Errorf("ACLs on east after unfence differ from before the fence:\n got %q\nwant %q", after, aclsBefore)
	}
	if stored := fenceRecordOf(t, topo, "east"); stored != nil && (len(stored.Added) != 0 || len(stored.Existing) != 0) {
		t.Errorf("east still records a fence after unfence: %+v", stored)
	}
	if err := tryProduce(app, "orders"); err != nil {
		t.Errorf("app cannot write to orders after unfence: %v", err)
	}
	if err := tryProduce(app, "payments"); !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Errorf("unfence lifted the operator's own DENY on payments: %v", err)
	}
	if after := aclsOf(t, kfaketest.Admin(t, kfaketest.Dial(t, topo, "west"))); !reflect.DeepEqual(after, westBefore) {
		t.Errorf("fencing east changed the ACLs of west:\n got %q\nwant %q", after, westBefore)
	}

	// Unfencing an unfenced cluster removes nothing.
	if removed, err := Unfence(ctx, kfaketest.Session(t, topo), "east"); err != nil || len(removed) != 0 {
		t.Errorf("unfence twice: removed %+v, %v", removed, err)
	}
	if after := aclsOf(t, east); !reflect.DeepEqual(after, aclsBefore) {
		t.Errorf("unfence twice changed the ACLs:\n got %q\nwant %q", after, aclsBefore)
	}
}

// TestUnfenceRemovesManyACLsInOneRequest: unfence deletes the fence's ACLs
// in one DeleteAcls request, not one per ACL (100 of them took 3 s of a
// failover's reseed tail on real Kafka), and still removes exactly what the
// fence added: an operator's DENY on a fenced topic stays.
func TestUnfenceRemovesManyACLsInOneRequest(t *testing.T) {
	const topics = 40
	p := kfaketest.NewPair(t, kfaketest.Options{
		SASL:        true,
		ClusterOpts: []kfake.Opt{kfake.EnableACLs()},
		Mirror:      "  topics: {include: [\"t\\\\d+\"]}",
		Extra:       "failover: {fence: acl, producer_principals: [\"User:app\", \"User:batch\"]}\n",
	})
	topo := p.Topology
	for i := range topics {
		kfaketest.CreateTopic(t, topo, "east", fmt.Sprintf("t%02d", i), 1, nil)
	}
	east := kfaketest.Admin(t, kfaketest.Dial(t, topo, "east"))
	own := sarama.Acl{Principal: "User:app", Host: "*", Operation: sarama.AclOperationWrite, PermissionType: sarama.AclPermissionDeny}
	if err := east.CreateACL(sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: "t07", ResourcePatternType: sarama.AclPatternLiteral}, own); err != nil {
		t.Fatal(err)
	}
	before := aclsOf(t, east)
	ctx := kfaketest.Ctx(t, 60*time.Second)
	rec, err := Fence(ctx, kfaketest.Session(t, topo), "east")
	if err != nil {
		t.Fatalf("fence east: %v", err)
	}
	if want := 2*topics - 1; len(rec.Added) != want || len(aclsOf(t, east)) != len(before)+want {
		t.Fatalf("the fence added %d ACLs (%d listed), want %d", len(rec.Added), len(aclsOf(t, east))-len(before), want)
	}
	var requests, filters atomic.Int32
	p.East.ControlKey(int16(kmsg.DeleteACLs), func(r kmsg.Request) (kmsg.Response, error, bool) {
		p.East.KeepControl()
		requests.Add(1)
		filters.Add(int32(len(r.(*kmsg.DeleteACLsRequest).Filters)))
		return nil, nil, false
	})
	removed, err := Unfence(ctx, kfaketest.Session(t, topo), "east")
	if err != nil {
		t.Fatalf("unfence east: %v", err)
	}
	if !reflect.DeepEqual(removed, rec.Added) {
		t.Errorf("unfence removed %d ACLs, want the %d the fence added", len(removed), len(rec.Added))
	}
	if requests.Load() != 1 || int(filters.Load()) != len(rec.Added) {
		t.Errorf("unfence sent %d DeleteAcls request(s) with %d filters, want 1 with %d", requests.Load(), filters.Load(), len(rec.Added))
	}
	if after := aclsOf(t, east); !reflect.DeepEqual(after, before) {
		t.Errorf("ACLs on east after unfence differ from before the fence:\n got %q\nwant %q", after, before)
	}
}
