//go:build e2e

package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/mirror/aclsync"
	"github.com/drctl/drctl/topology"
)

// TestACLSyncRealKafka: with `drctl mirror run` running (StandardAuthorizer,
// kafka.sh), the standby west follows east's ACLs for the application
// principal app within seconds (additions and deletions), and is fenced
// against app's writes; after `drctl failover --to west`, app reads,
// writes and commits its group's offsets on west with no manual step,
// and east, the new standby, refuses its writes.
func TestACLSyncRealKafka(t *testing.T) {
	clock := newFoClock()
	ft := newFoTopo(t, "acl", "10m", `{fence: acl, producer_principals: ["User:app"], drain_timeout: 2m, quiet_period: 1s}`)
	orders, billing := ft.topic("orders"), ft.topic("billing")
	createTopic(t, "east", orders, 2, nil)
	allow := sarama.AclPermissionAllow
	ft.addACLs(t, "east",
		foTopicACL{orders, "User:app", sarama.AclOperationWrite, allow},
		foTopicACL{orders, "User:app", sarama.AclOperationRead, allow},
		foTopicACL{orders, "User:app", sarama.AclOperationDescribe, allow})
	addGroupACL(t, ft, "east", billing, "User:app")
	if err := appProbe(t, "east", orders); err != nil {
		t.Fatalf("app cannot write to east's %s with its ACLs (test setup): %v", orders, err)
	}
	startMirror(t, ft.mirrorTopo(), "mirror")
	start := time.Now()
	waitACLParity(t, ft, "east", "west", time.Minute)
	t.Logf("west holds east's %d app ACLs %v after the mirror started", len(ownedACLs(t, ft, "west")), time.Since(start).Round(time.Millisecond))
	westCl := ft.dial(t, "west")
	kfaketest.WaitFor(t, time.Minute, "the mirror created "+orders+" on west", func() error {
		if err := westCl.RefreshMetadata(orders); err != nil {
			return err
		}
		_, err := westCl.Partitions(orders)
		return err
	})
	created := time.Now()
	ft.waitStandbyFenced(t, "west", time.Minute)
	t.Logf("west's %s fenced %v after the mirror created it", orders, time.Since(created).Round(time.Millisecond))
	clock.lap("mirror started: ACLs in step, west fenced")

	// The broker refuses app's writes to the standby, not to the active.
	if err := appProbe(t, "west", orders); !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Errorf("app writing to the standby west before the failover: %v, want %v; west's ACLs: %v", err, sarama.ErrTopicAuthorizationFailed, ft.acls(t, "west"))
	}
	if err := appProbe(t, "east", orders); err != nil {
		t.Errorf("app writing to the active east: %v", err)
	}

	// An ACL added on the active appears on the standby within seconds; a
	// deletion propagates too.
	ft.addACLs(t, "east", foTopicACL{orders, "User:reporter", sarama.AclOperationRead, allow})
	added := time.Now()
	waitACLParity(t, ft, "east", "west", 30*time.Second)
	addLag := time.Since(added)
	reporter := foACL{Resource: "Topic:" + orders + "(Literal)", Principal: "User:reporter", Host: "*", Operation: "Read", Permission: "Allow"}
	if !ft.acls(t, "west")[reporter] {
		t.Fatalf("west lacks %s after parity", reporter)
	}
	deleteTopicACL(t, ft, "east", orders, "User:reporter", sarama.AclOperationRead, allow)
	deleted := time.Now()
	waitACLParity(t, ft, "east", "west", 30*time.Second)
	delLag := time.Since(deleted)
	if ft.acls(t, "west")[reporter] {
		t.Fatalf("west still holds %s after parity", reporter)
	}
	t.Logf("an ACL added on east reached west in %v; its deletion in %v", addLag.Round(time.Millisecond), delLag.Round(time.Millisecond))
	if addLag > 15*time.Second || delLag > 15*time.Second {
		t.Errorf("ACL changes took %v and %v to reach the standby, want seconds", addLag, delLag)
	}

	// status and validate --online show the parity per principal.
	st := runDrctl(t, ft.env(), "-c", ft.Path, "-o", "json", "status")
	var sj struct {
		ACLs *aclsync.Parity `json:"acls"`
	}
	if st.code != 0 || json.Unmarshal([]byte(st.stdout), &sj) != nil || sj.ACLs == nil {
		t.Fatalf("status: exit %d: %s %s", st.code, st.stdout, st.stderr)
	}
	if len(sj.ACLs.Principals) != 1 || sj.ACLs.Principals[0].Principal != "User:app" || !sj.ACLs.Principals[0].InParity() ||
		sj.ACLs.Principals[0].InSync != 4 || len(sj.ACLs.FenceGaps) != 0 {
		t.Errorf("status acls: %+v, want User:app with 4 ACLs in parity and no fence gap", sj.ACLs)
	}
	v := runDrctl(t, ft.env(), "-c", ft.Path, "validate", "--online")
	if v.code != 0 || !strings.Contains(v.stdout, "User:app: 4 ACL(s) as on east") || !strings.Contains(v.stdout, "standby fence") {
		t.Errorf("validate --online: exit %d, want the ACL parity of User:app and the standby fence:\n%s", v.code, v.stdout)
	}
	clock.lap("ACL added and deleted on east, followed on west; status and validate")

	// The failover flips the fence: right after it, app works on west.
	fo := ft.run(t, 3*time.Minute, nil, "failover", "--to", "west", "--yes")
	if fo.Code != 0 {
		t.Fatalf("failover: exit %d: %s", fo.Code, fo.outcome().Error)
	}
	done := time.Now()
	if err := appProbe(t, "west", orders); err != nil {
		t.Errorf("app writing to the new active west right after the failover: %v", err)
	}
	if err := appReadAndCommit(t, "west", orders, billing); err != nil {
		t.Errorf("app reading %s and committing group %s on the new active west: %v", orders, billing, err)
	}
	if err := appProbe(t, "east", orders); !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Errorf("app writing to the new standby east: %v, want %v", err, sarama.ErrTopicAuthorizationFailed)
	}
	t.Logf("app wrote, read and committed on west %v after the failover finished", time.Since(done).Round(time.Millisecond))
	clock.lap("failover; app on west")
	t.Logf("timings:\n%s", clock.report())
}

// appProbe writes one record to topic on cluster as app.
func appProbe(t testing.TB, cluster, topic string) error {
	cfg := saramaConfig(t, env.AppUser, env.AppPass, mechSCRAM512)
	cfg.Producer.Retry.Max = 0
	p, err := sarama.NewSyncProducer([]string{bootstrap(t, cluster)}, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("probe")})
	return err
}

// appReadAndCommit reads, as app, the first record of a partition of
// topic that holds one and commits the position after it for group: what a
// consumer needs of its ACLs.
func appReadAndCommit(t testing.TB, cluster, topic, group string) error {
	c, err := sarama.NewClient([]string{bootstrap(t, cluster)}, saramaConfig(t, env.AppUser, env.AppPass, mechSCRAM512))
	if err != nil {
		return err
	}
	defer c.Close()
	parts, err := c.Partitions(topic)
	if err != nil {
		return err
	}
	part := int32(-1)
	for _, p := range parts {
		oldest, err1 := c.GetOffset(topic, p, sarama.OffsetOldest)
		newest, err2 := c.GetOffset(topic, p, sarama.OffsetNewest)
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		if newest > oldest {
			part = p
			break
		}
	}
	if part < 0 {
		return fmt.Errorf("%s holds no record on %s", topic, cluster)
	}
	cons, err := sarama.NewConsumerFromClient(c)
	if err != nil {
		return err
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition(topic, part, sarama.OffsetOldest)
	if err != nil {
		return err
	}
	defer pc.Close()
	var next int64
	select {
	case m := <-pc.Messages():
		next = m.Offset + 1
	case err := <-pc.Errors():
		return err
	case <-time.After(20 * time.Second):
		return errors.New("no record within 20s")
	}
	om, err := sarama.NewOffsetManagerFromClient(group, c)
	if err != nil {
		return err
	}
	pom, err := om.ManagePartition(topic, part)
	if err != nil {
		return err
	}
	pom.MarkOffset(next, "")
	om.Commit()
	_ = pom.Close()
	if err := om.Close(); err != nil {
		return err
	}
	for e := range pom.Errors() {
		return e
	}
	admin, err := sarama.NewClusterAdminFromClient(c)
	if err != nil {
		return err
	}
	offs, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: {part}})
	if err != nil {
		return err
	}
	if b := offs.GetBlock(topic, part); b == nil || b.Err != sarama.ErrNoError || b.Offset != next {
		return fmt.Errorf("group %s's committed offset is %+v, want %d", group, b, next)
	}
	return nil
}

// addGroupACL lets principal read (join, commit) group on cluster.
func addGroupACL(t testing.TB, ft *foTopo, cluster, group, principal string) {
	t.Helper()
	admin, err := sarama.NewClusterAdminFromClient(ft.dial(t, cluster))
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.CreateACL(sarama.Resource{ResourceType: sarama.AclResourceGroup, ResourceName: group, ResourcePatternType: sarama.AclPatternLiteral},
		sarama.Acl{Principal: principal, Host: "*", Operation: sarama.AclOperationRead, PermissionType: sarama.AclPermissionAllow}); err != nil {
		t.Fatalf("create group ACL on %s: %v", cluster, err)
	}
}

func deleteTopicACL(t testing.TB, ft *foTopo, cluster, topic, principal string, op sarama.AclOperation, perm sarama.AclPermissionType) {
	t.Helper()
	admin, err := sarama.NewClusterAdminFromClient(ft.dial(t, cluster))
	if err != nil {
		t.Fatal(err)
	}
	host := "*"
	if _, err := admin.DeleteACL(sarama.AclFilter{ResourceType: sarama.AclResourceTopic, ResourceName: &topic, ResourcePatternTypeFilter: sarama.AclPatternLiteral,
		Principal: &principal, Host: &host, Operation: op, PermissionType: perm}, false); err != nil {
		t.Fatalf("delete ACL on %s: %v", cluster, err)
	}
}

// ownedACLs lists the ACLs of cluster that the mirror's ACL sync owns for
// the topology, as strings, sorted.
func ownedACLs(t testing.TB, ft *foTopo, cluster string) []string {
	t.Helper()
	admin, err := sarama.NewClusterAdminFromClient(ft.dial(t, cluster))
	if err != nil {
		t.Fatal(err)
	}
	bs, err := aclsync.List(admin)
	if err != nil {
		t.Fatalf("list ACLs of %s: %v", cluster, err)
	}
	scope := aclsync.NewScope(ft.Topo)
	var out []string
	for _, b := range bs {
		if scope.Owns(b) {
			out = append(out, b.String())
		}
	}
	sort.Strings(out)
	return out
}

// waitACLParity waits until the standby holds exactly the active's owned
// ACLs.
func waitACLParity(t testing.TB, ft *foTopo, active, standby string, timeout time.Duration) {
	t.Helper()
	kfaketest.WaitFor(t, timeout, standby+"'s ACLs in step with "+active+"'s", func() error {
		a, s := ownedACLs(t, ft, active), ownedACLs(t, ft, standby)
		if strings.Join(a, "\n") != strings.Join(s, "\n") {
			return fmt.Errorf("%s %q, %s %q", active, a, standby, s)
		}
		return nil
	})
}

// waitStandbyFenced waits until drctl's fence covers every mirrored topic
// of cluster (the mirror's ACL sync adds it).
func (ft *foTopo) waitStandbyFenced(t testing.TB, cluster string, timeout time.Duration) {
	t.Helper()
	kfaketest.WaitFor(t, timeout, cluster+" fenced against the applications", func() error {
		admin, err := sarama.NewClusterAdminFromClient(ft.dial(t, cluster))
		if err != nil {
			return err
		}
		bs, err := aclsync.List(admin)
		if err != nil {
			return err
		}
		gaps, err := aclsync.FenceGaps(ft.Topo, admin, bs)
		if err != nil {
			return err
		}
		if len(gaps) > 0 {
			return fmt.Errorf("%d fence ACL(s) missing, e.g. %+v", len(gaps), gaps[0])
		}
		return nil
	})
}

// TestACLSyncFencesANewTopicFirst: on real Kafka, an application's grants
// on a new topic (ALLOW WRITE included) reach the standby only after the
// standby's DENY WRITE for it, although the topic does not exist there yet
// (the grants are made before the topic, as operators often do): no
// listing of the standby's ACLs ever shows the ALLOW without the DENY, and
// app is refused on the standby's copy of the topic from the moment the
// mirror creates it.
func TestACLSyncFencesANewTopicFirst(t *testing.T) {
	ft := newFoTopo(t, "aclnew", "10m", `{fence: acl, producer_principals: ["User:app"], drain_timeout: 2m, quiet_period: 1s}`)
	orders, fresh := ft.topic("orders"), ft.topic("fresh")
	createTopic(t, "east", orders, 1, nil)
	allow := sarama.AclPermissionAllow
	ft.addACLs(t, "east", foTopicACL{orders, "User:app", sarama.AclOperationWrite, allow})
	startMirror(t, ft.mirrorTopo(), "mirror")
	waitACLParity(t, ft, "east", "west", time.Minute)
	ft.waitStandbyFenced(t, "west", time.Minute)

	// Watch west's ACLs as fast as it answers, from before the grant.
	westAdmin, err := sarama.NewClusterAdminFromClient(ft.dial(t, "west"))
	if err != nil {
		t.Fatal(err)
	}
	res := "Topic:" + fresh + "(Literal)"
	grant := foACL{Resource: res, Principal: "User:app", Host: "*", Operation: "Write", Permission: "Allow"}
	fence := foACL{Resource: res, Principal: "User:app", Host: "*", Operation: "Write", Permission: "Deny"}
	type look struct {
		grant, fence bool
		err          error
	}
	looks := make(chan look, 1)
	stop := make(chan struct{})
	watched := make(chan []look, 1)
	go func() {
		var seen []look
		defer func() { watched <- seen }()
		pace := time.NewTicker(5 * time.Millisecond) // a look at least every 5 ms, without flooding the broker
		defer pace.Stop()
		for {
			select {
			case <-stop:
				return
			case <-pace.C:
			}
			list, err := westAdmin.ListAcls(foAnyACL())
			l := look{err: err}
			for _, ra := range list {
				for _, a := range ra.Acls {
					got := foACL{Resource: ra.ResourceType.String() + ":" + ra.ResourceName + "(" + ra.ResourcePatternType.String() + ")",
						Principal: a.Principal, Host: a.Host, Operation: a.Operation.String(), Permission: a.PermissionType.String()}
					l.grant = l.grant || got == grant
					l.fence = l.fence || got == fence
				}
			}
			seen = append(seen, l)
			select {
			case looks <- l:
			default:
			}
		}
	}()
	ft.addACLs(t, "east", foTopicACL{fresh, "User:app", sarama.AclOperationWrite, allow})
	kfaketest.WaitFor(t, 30*time.Second, "app's grant on "+fresh+" on west", func() error {
		if l := <-looks; !l.grant {
			return fmt.Errorf("not yet (err %v)", l.err)
		}
		return nil
	})
	// The mirror creates the topic on west; app is refused there at once.
	createTopic(t, "east", fresh, 1, nil)
	westCl := ft.dial(t, "west")
	kfaketest.WaitFor(t, time.Minute, "the mirror created "+fresh+" on west", func() error {
		if err := westCl.RefreshMetadata(fresh); err != nil {
			return err
		}
		_, err := westCl.Partitions(fresh)
		return err
	})
	probe := appProbe(t, "west", fresh)
	close(stop)
	seen := <-watched
	bare := 0
	for _, l := range seen {
		if l.grant && !l.fence {
			bare++
		}
	}
	t.Logf("%d listings of west's ACLs", len(seen))
	if bare > 0 {
		t.Errorf("%d of %d listings of west's ACLs showed app's ALLOW WRITE on %s without drctl's DENY WRITE", bare, len(seen), fresh)
	}
	if !errors.Is(probe, sarama.ErrTopicAuthorizationFailed) {
		t.Errorf("app writing to the standby's new %s right after the mirror created it: %v, want %v", fresh, probe, sarama.ErrTopicAuthorizationFailed)
	}
}

// TestACLSyncFencesATopicAPrefixGrantCovers: on real Kafka, the standby
// holds the application's grant by prefix (copied by the sync's first
// round); a topic created on the active under that prefix is created on
// the standby by the mirror's topic pass, with no ACL sync round between
// (the rounds are ten minutes apart here). The mirror fences the topic
// before it creates it, so app is refused on the standby's copy from the
// moment it exists.
func TestACLSyncFencesATopicAPrefixGrantCovers(t *testing.T) {
	ft := newFoTopo(t, "aclpfx", "10m", `{fence: acl, producer_principals: ["User:app"], drain_timeout: 2m, quiet_period: 1s}`)
	ft.setACLInterval(t, "10m")
	prefix, fresh := ft.topic("app."), ft.topic("app.one")
	createTopic(t, "east", ft.topic("orders"), 1, nil)
	admin, err := sarama.NewClusterAdminFromClient(ft.dial(t, "east"))
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.CreateACL(sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: prefix, ResourcePatternType: sarama.AclPatternPrefixed},
		sarama.Acl{Principal: "User:app", Host: "*", Operation: sarama.AclOperationWrite, PermissionType: sarama.AclPermissionAllow}); err != nil {
		t.Fatal(err)
	}
	startMirror(t, ft.mirrorTopo(), "mirror")
	waitACLParity(t, ft, "east", "west", time.Minute)
	ft.waitStandbyFenced(t, "west", time.Minute)

	createTopic(t, "east", fresh, 1, nil)
	if err := appProbe(t, "east", fresh); err != nil {
		t.Fatalf("app cannot write to the active's %s: %v", fresh, err)
	}
	westCl := ft.dial(t, "west")
	kfaketest.WaitFor(t, time.Minute, "the mirror created "+fresh+" on west", func() error {
		if err := westCl.RefreshMetadata(fresh); err != nil {
			return err
		}
		_, err := westCl.Partitions(fresh)
		return err
	})
	if err := appProbe(t, "west", fresh); !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Errorf("app writing to the standby's new %s right after the mirror created it: %v, want %v (the grant on %q covers it; only drctl's fence refuses it)",
			fresh, err, sarama.ErrTopicAuthorizationFailed, prefix)
	}
}

// setACLInterval rewrites the topology's file and model with the ACL sync
// round every interval.
func (ft *foTopo) setACLInterval(t *testing.T, interval string) {
	t.Helper()
	raw, err := os.ReadFile(ft.Path)
	if err != nil {
		t.Fatal(err)
	}
	yaml := strings.Replace(string(raw), "\nmirror:\n", "\nmirror:\n  acls: {interval: "+interval+"}\n", 1)
	if yaml == string(raw) {
		t.Fatal("no mirror section in the topology")
	}
	if err := os.WriteFile(ft.Path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	topo, err := topology.Parse(ft.Path, []byte(yaml), func(key string) (string, bool) {
		if key == passwordVar {
			return env.Password, true
		}
		return os.LookupEnv(key)
	})
	if err != nil {
		t.Fatalf("load %s: %v", ft.Path, err)
	}
	ft.Topo = topo
}
