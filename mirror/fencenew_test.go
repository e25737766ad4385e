package mirror

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// TestANewTopicIsFencedBeforeTheMirrorCreatesIt: the standby already holds
// the application's grant by prefix (ALLOW WRITE on "fresh."), so a topic
// the mirror creates there is writable the moment it exists unless drctl's
// DENY WRITE for it came first. The ACL sync round that would fence it runs
// only every hour here: the mirror's own topic pass must fence the topic
// before its CreateTopics request, and the application is refused on the
// standby's new topic.
func TestANewTopicIsFencedBeforeTheMirrorCreatesIt(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{
		SASL:        true,
		ClusterOpts: []kfake.Opt{kfake.EnableACLs(), kfake.User("SCRAM-SHA-512", "app", "app-secret")},
		Mirror:      "  topics: {include: [\"fresh.*\"]}\n  acls: {interval: 1h}",
		Extra:       "failover: {fence: acl, producer_principals: [\"User:app\"]}\n",
	})
	topo := p.Topology
	west := kfaketest.DialCluster(t, topo.Clusters["west"])
	wa, err := sarama.NewClusterAdminFromClient(west)
	if err != nil {
		t.Fatal(err)
	}
	ea, err := sarama.NewClusterAdminFromClient(kfaketest.DialCluster(t, topo.Clusters["east"]))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []sarama.ClusterAdmin{ea, wa} {
		if err := a.CreateACL(sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: "fresh.", ResourcePatternType: sarama.AclPatternPrefixed},
			sarama.Acl{Principal: "User:app", Host: "*", Operation: sarama.AclOperationWrite, PermissionType: sarama.AclPermissionAllow}); err != nil {
			t.Fatal(err)
		}
	}
	// Every request west receives about fresh.one, in order.
	var mu sync.Mutex
	var seen []string
	p.West.ControlKey(int16(kmsg.CreateACLs), func(r kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		for _, c := range r.(*kmsg.CreateACLsRequest).Creations {
			if c.ResourceName == "fresh.one" {
				mu.Lock()
				seen = append(seen, fmt.Sprintf("acl %s %s", c.PermissionType, c.Operation))
				mu.Unlock()
			}
		}
		return nil, nil, false
	})
	p.West.ControlKey(int16(kmsg.CreateTopics), func(r kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		for _, tp := range r.(*kmsg.CreateTopicsRequest).Topics {
			if tp.Topic == "fresh.one" {
				mu.Lock()
				seen = append(seen, "create topic")
				mu.Unlock()
			}
		}
		return nil, nil, false
	})
	kfaketest.CreateTopicOn(t, kfaketest.DialCluster(t, topo.Clusters["east"]), "fresh.one", 1, nil)
	runEngine(t, topo, Options{Shards: 1})
	waitFor(t, 30*time.Second, "fresh.one on the standby", func() error {
		if tps, err := wa.ListTopics(); err != nil {
			return err
		} else if _, ok := tps["fresh.one"]; !ok {
			return errors.New("not created yet")
		}
		return nil
	})
	mu.Lock()
	order := append([]string(nil), seen...)
	mu.Unlock()
	deny, create := -1, -1
	for i, s := range order {
		if s == "acl DENY WRITE" && deny < 0 {
			deny = i
		}
		if s == "create topic" && create < 0 {
			create = i
		}
	}
	if deny < 0 || create < 0 || deny > create {
		t.Fatalf("requests to the standby about fresh.one: %q; want its DENY WRITE before its creation", order)
	}
	if err := produceAs(t, topo.Clusters["west"], "fresh.one"); !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Errorf("the application writing to the standby's new topic: %v, want refused by the fence", err)
	}
	if err := produceAs(t, topo.Clusters["east"], "fresh.one"); err != nil {
		t.Errorf("the application cannot write to the active's fresh.one: %v", err)
	}
}

// produceAs sends one record to topic on c as the application user "app".
func produceAs(t *testing.T, c *topology.Cluster, topic string) error {
	t.Helper()
	app := *c
	app.SASL = &topology.SASL{Mechanism: "SCRAM-SHA-512", Username: "app", Password: "app-secret"}
	cfg, err := app.SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Return.Successes = true
	cfg.Producer.Retry.Max = 0
	prod, err := sarama.NewSyncProducer(app.Bootstrap, cfg)
	if err != nil {
		return err
	}
	defer prod.Close()
	_, _, err = prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("x")})
	return err
}
