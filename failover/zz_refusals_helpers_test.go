package failover

// Helpers of refusals_test.go and fence_test.go. Every name starts with rf
// so that they cannot collide with the helpers of other test files.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/kvstore"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/mirror"
	"github.com/drctl/drctl/topology"
)

// rfCtx returns a context that ends after d or with the test.
func rfCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// rfDial connects to a cluster of topo as drctl; the client is closed
// with the test.
func rfDial(t *testing.T, topo *topology.Topology, cluster string) sarama.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := kafkaconn.Dial(ctx, topo.Clusters[cluster], nil)
	if err != nil {
		t.Fatalf("dial %s: %v", cluster, err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

func rfAdmin(t *testing.T, cl sarama.Client) sarama.ClusterAdmin {
	t.Helper()
	admin, err := sarama.NewClusterAdminFromClient(cl)
	if err != nil {
		t.Fatal(err)
	}
	return admin
}

func rfCreateTopic(t *testing.T, topo *topology.Topology, cluster, topic string, partitions int32) {
	t.Helper()
	admin := rfAdmin(t, rfDial(t, topo, cluster))
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false); err != nil {
		t.Fatalf("create topic %s on %s: %v", topic, cluster, err)
	}
}

// rfProducer opens a plain (not idempotent) producer on c; with retries 0
// it fails fast, so that an authorization error comes back as it is.
func rfProducer(t *testing.T, c *topology.Cluster, retries int) sarama.SyncProducer {
	t.Helper()
	cfg, err := c.SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Retry.Max = retries
	cfg.Producer.Retry.Backoff = 50 * time.Millisecond
	cfg.Metadata.AllowAutoTopicCreation = false
	p, err := sarama.NewSyncProducer(c.Bootstrap, cfg)
	if err != nil {
		t.Fatalf("producer on %s: %v", c.Name, err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// rfProduce writes n keyed records to topic on cluster, as drctl.
func rfProduce(t *testing.T, topo *topology.Topology, cluster, topic string, n int) {
	t.Helper()
	p := rfProducer(t, topo.Clusters[cluster], 10)
	var msgs []*sarama.ProducerMessage
	for i := 0; i < n; i++ {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: sarama.StringEncoder(fmt.Sprintf("v%d", i))})
	}
	if err := p.SendMessages(msgs); err != nil {
		t.Fatalf("produce to %s on %s: %v", topic, cluster, err)
	}
}

// rfCommit commits offsets for group with no member (generation -1), as an
// offset-reset tool does.
func rfCommit(t *testing.T, topo *topology.Topology, cluster, group, topic string, offsets map[int32]int64) {
	t.Helper()
	cl := rfDial(t, topo, cluster)
	coord, err := cl.Coordinator(group)
	if err != nil {
		t.Fatal(err)
	}
	req := &sarama.OffsetCommitRequest{Version: 7, ConsumerGroup: group, ConsumerGroupGeneration: -1}
	for p, o := range offsets {
		req.AddBlock(topic, p, o, 0, "")
	}
	resp, err := coord.CommitOffset(req)
	if err != nil {
		t.Fatal(err)
	}
	for _, parts := range resp.Errors {
		for p, kerr := range parts {
			if kerr != sarama.ErrNoError {
				t.Fatalf("commit %s %s/%d on %s: %v", group, topic, p, cluster, kerr)
			}
		}
	}
}

// rfWait polls cond until it holds, failing the test with cond's last
// explanation when it does not within d.
func rfWait(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %v: %s", what, d, why)
		}
		<-tick.C
	}
}

// rfStartMirror runs the mirror daemon of topo in-process until the test
// ends, and waits until the link from the live active to the standby has a
// worker (the failover preflight asks for one).
func rfStartMirror(t *testing.T, topo *topology.Topology, source, target string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := mirror.NewDaemon(topo, mirror.DaemonOptions{StatePoll: 200 * time.Millisecond,
		Engine: mirror.Options{Shards: 2, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond}})
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("the mirror daemon did not stop within 30s")
		}
	})
	link := mirror.LinkFor(topo, source, target)
	rfWait(t, 30*time.Second, "mirror "+link.String()+" running", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ls := mirror.DescribeLink(ctx, topo, link)
		return ls.Error == "" && ls.Running, fmt.Sprintf("%+v", ls)
	})
}

// rfWaitMirrored waits until every selected partition of source has been
// copied to target up to its end.
func rfWaitMirrored(t *testing.T, topo *topology.Topology, source, target string) {
	t.Helper()
	link := mirror.LinkFor(topo, source, target)
	rfWait(t, 30*time.Second, link.String()+" caught up", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rep, err := mirror.MeasureLag(ctx, topo, link)
		if err != nil {
			return false, err.Error()
		}
		for _, p := range rep.Partitions {
			if p.Mirrored < 0 && p.SourceEnd > 0 {
				return false, fmt.Sprintf("%s/%d never mirrored", p.Topic, p.Partition)
			}
		}
		return rep.Caught() && len(rep.Partitions) > 0, fmt.Sprintf("%+v", rep.Partitions)
	})
}

// rfGroupOffsets returns the committed offsets of group on cluster as
// "topic/partition=offset" lines, sorted.
func rfGroupOffsets(t *testing.T, admin sarama.ClusterAdmin, group string) []string {
	t.Helper()
	resp, err := admin.ListConsumerGroupOffsets(group, nil)
	if errors.Is(err, sarama.ErrGroupIDNotFound) {
		return nil // kfake's answer for a group with no offsets (real Kafka: none)
	}
	if err != nil {
		t.Fatalf("offsets of %s: %v", group, err)
	}
	var out []string
	for topic, parts := range resp.Blocks {
		for p, b := range parts {
			if b.Err == sarama.ErrNoError && b.Offset >= 0 {
				out = append(out, fmt.Sprintf("%s/%d=%d", topic, p, b.Offset))
			}
		}
	}
	sort.Strings(out)
	return out
}

// rfWaitGroupSynced waits until group has an offset committed on cluster
// for each of n partitions.
func rfWaitGroupSynced(t *testing.T, topo *topology.Topology, cluster, group string, n int) {
	t.Helper()
	admin := rfAdmin(t, rfDial(t, topo, cluster))
	rfWait(t, 30*time.Second, "group "+group+" synced to "+cluster, func() (bool, string) {
		got := rfGroupOffsets(t, admin, group)
		return len(got) == n, fmt.Sprint(got)
	})
}

// rfSnap is what a refusal must leave as it found it on one cluster.
type rfSnap struct {
	Roles string
	// State is the decoded role state (zero when none is stored).
	State rolestate.State
	ACLs  []string
	// Topics: every topic but the run records (RunsTopic; a refused run
	// leaves its record there, which is the audit trail of the attempt),
	// with its partition count and, for non-internal topics, the log
	// start and end of each partition (a wipe or a re-create shows).
	Topics map[string]string
	// Groups: the committed offsets of every group but drctl's own.
	Groups map[string]string
}

func rfRoles(s rolestate.State, found bool) string {
	if !found {
		return "no role state stored"
	}
	run := "-"
	if s.Run != nil {
		run = s.Run.ID
	}
	return fmt.Sprintf("epoch=%d active=%s standby=%s phase=%s run=%s updated=%s by %s",
		s.Epoch, s.Active, s.Standby, s.Phase, run, s.UpdatedAt.Format(time.RFC3339Nano), s.UpdatedBy)
}

func rfACLs(t *testing.T, admin sarama.ClusterAdmin) []string {
	t.Helper()
	all, err := admin.ListAcls(sarama.AclFilter{ResourceType: sarama.AclResourceAny, ResourcePatternTypeFilter: sarama.AclPatternAny,
		Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny})
	if err != nil {
		t.Fatalf("list ACLs: %v", err)
	}
	var out []string
	for _, ra := range all {
		for _, a := range ra.Acls {
			out = append(out, rfACLString(ra.Resource, a))
		}
	}
	sort.Strings(out)
	return out
}

// rfACLString renders one ACL as "Topic:orders(Literal) User:app@* Write Deny".
func rfACLString(r sarama.Resource, a *sarama.Acl) string {
	return fmt.Sprintf("%s:%s(%s) %s@%s %s %s", r.ResourceType.String(), r.ResourceName, r.ResourcePatternType.String(),
		a.Principal, a.Host, a.Operation.String(), a.PermissionType.String())
}

func rfSnapshot(t *testing.T, topo *topology.Topology, cluster string) *rfSnap {
	t.Helper()
	ctx := rfCtx(t, 20*time.Second)
	cl := rfDial(t, topo, cluster)
	admin := rfAdmin(t, cl)
	st, found, err := rolestate.Read(ctx, cl, topo.Name)
	if err != nil {
		t.Fatalf("read role state of %s: %v", cluster, err)
	}
	s := &rfSnap{Roles: rfRoles(st, found), State: st, ACLs: rfACLs(t, admin), Topics: map[string]string{}, Groups: map[string]string{}}
	topics, err := admin.ListTopics()
	if err != nil {
		t.Fatalf("list topics of %s: %v", cluster, err)
	}
	for name, d := range topics {
		if name == RunsTopic {
			continue
		}
		desc := fmt.Sprintf("partitions=%d", d.NumPartitions)
		if !topology.IsInternalTopic(name) {
			if err := cl.RefreshMetadata(name); err != nil {
				t.Fatal(err)
			}
			for p := int32(0); p < d.NumPartitions; p++ {
				first, err1 := cl.GetOffset(name, p, sarama.OffsetOldest)
				end, err2 := cl.GetOffset(name, p, sarama.OffsetNewest)
				if err1 != nil || err2 != nil {
					t.Fatalf("offsets of %s/%d on %s: %v %v", name, p, cluster, err1, err2)
				}
				desc += fmt.Sprintf(" %d:[%d,%d)", p, first, end)
			}
		}
		s.Topics[name] = desc
	}
	groups, err := admin.ListConsumerGroups()
	if err != nil {
		t.Fatalf("list groups of %s: %v", cluster, err)
	}
	for g := range groups {
		if topology.IsInternalGroup(g) {
			continue
		}
		s.Groups[g] = strings.Join(rfGroupOffsets(t, admin, g), " ")
	}
	return s
}

// rfSnapshots snapshots each named cluster.
func rfSnapshots(t *testing.T, topo *topology.Topology, clusters ...string) map[string]*rfSnap {
	t.Helper()
	out := map[string]*rfSnap{}
	for _, c := range clusters {
		out[c] = rfSnapshot(t, topo, c)
	}
	return out
}

// rfDiff lists what differs between two snapshots of a cluster.
func rfDiff(before, after *rfSnap) []string {
	var d []string
	if before.Roles != after.Roles {
		d = append(d, fmt.Sprintf("role state: was %q, now %q", before.Roles, after.Roles))
	}
	if !reflect.DeepEqual(before.ACLs, after.ACLs) {
		d = append(d, fmt.Sprintf("ACLs: were %q, now %q", before.ACLs, after.ACLs))
	}
	mapDiff := func(what string, a, b map[string]string) {
		keys := map[string]bool{}
		for k := range a {
			keys[k] = true
		}
		for k := range b {
			keys[k] = true
		}
		var sorted []string
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			va, ina := a[k]
			vb, inb := b[k]
			switch {
			case !ina:
				d = append(d, fmt.Sprintf("%s %s appeared: %s", what, k, vb))
			case !inb:
				d = append(d, fmt.Sprintf("%s %s disappeared (was %s)", what, k, va))
			case va != vb:
				d = append(d, fmt.Sprintf("%s %s: was %s, now %s", what, k, va, vb))
			}
		}
	}
	mapDiff("topic", before.Topics, after.Topics)
	mapDiff("group", before.Groups, after.Groups)
	return d
}

// rfUnchanged fails the test for every difference between before and a
// fresh snapshot of the same clusters.
func rfUnchanged(t *testing.T, topo *topology.Topology, before map[string]*rfSnap) map[string]*rfSnap {
	t.Helper()
	after := map[string]*rfSnap{}
	for c, b := range before {
		after[c] = rfSnapshot(t, topo, c)
		for _, d := range rfDiff(b, after[c]) {
			t.Errorf("%s changed: %s", c, d)
		}
	}
	return after
}

// rfNoStepDone checks that the clusters record no step of run id as done.
func rfNoStepDone(t *testing.T, topo *topology.Topology, id string) {
	t.Helper()
	rec, err := LoadRun(rfCtx(t, 20*time.Second), topo, id)
	if err != nil {
		t.Fatalf("load run %s: %v", id, err)
	}
	if rec == nil {
		return
	}
	t.Logf("the clusters keep a record of the refused run %s: outcome %q, error %q", id, rec.Outcome, rec.Error)
	for i, done := range rec.Done {
		if done {
			t.Errorf("run %s: step %d (%s) is recorded as done; a refused run must do nothing", id, i+1, rec.Plan.Steps[i].Name)
		}
	}
	if rec.Finished {
		t.Errorf("run %s is recorded as finished", id)
	}
}

// rfStateHistory returns every committed role state of topo on cluster, in
// order.
func rfStateHistory(t *testing.T, topo *topology.Topology, cluster string) []rolestate.State {
	t.Helper()
	cl := rfDial(t, topo, cluster)
	var out []rolestate.State
	_, err := kafkaread.ReadCommitted(rfCtx(t, 20*time.Second), cl, rolestate.StateTopic, 0, 0, func(r kafkaread.Record) error {
		if string(r.Key) != topo.Name {
			return nil
		}
		var s rolestate.State
		if err := json.Unmarshal(r.Value, &s); err != nil {
			return fmt.Errorf("offset %d: %w", r.Offset, err)
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		t.Fatalf("read the role state history of %s: %v", cluster, err)
	}
	return out
}

// rfFenceRecord reads cluster's fence record of topo (nil when none).
func rfFenceRecord(t *testing.T, topo *topology.Topology, cluster string) *FenceRecord {
	t.Helper()
	raw, found, err := kvstore.Get(rfCtx(t, 20*time.Second), rfDial(t, topo, cluster), FenceTopic, topo.Name)
	if err != nil {
		t.Fatalf("read the fence record of %s: %v", cluster, err)
	}
	if !found {
		return nil
	}
	var rec FenceRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatalf("fence record of %s: %v (%s)", cluster, err, raw)
	}
	return &rec
}

// rfSetState compare-and-sets next on each named cluster, as another
// drctl would.
func rfSetState(t *testing.T, topo *topology.Topology, expected int64, next rolestate.State, clusters ...string) {
	t.Helper()
	for _, c := range clusters {
		if err := rolestate.CompareAndSet(rfCtx(t, 30*time.Second), rfDial(t, topo, c), nil, expected, next); err != nil {
			t.Fatalf("set the role state of %s: %v", c, err)
		}
	}
}
