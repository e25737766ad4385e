package failover

// What the kfake tests of this package share beyond internal/kfaketest: the
// mirror running in-process, and a snapshot of everything a refused run must
// leave as it found it (roles, ACLs, topics and their offsets, groups).

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

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/aclfence"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/kvstore"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/mirror"
	"github.com/drctl/drctl/mirror/aclsync"
	"github.com/drctl/drctl/topology"
)

// startMirror runs the mirror daemon of topo in-process until the test
// ends, and waits until the link from the live active to the standby has a
// worker (the failover preflight asks for one).
func startMirror(t *testing.T, topo *topology.Topology, source, target string) {
	t.Helper()
	startMirrorPolling(t, topo, source, target, 200*time.Millisecond)
}

// startMirrorPolling is startMirror with a daemon that reads the live
// roles every statePoll (the default of drctl mirror run is 5s): a run's
// role change reaches it that much later.
func startMirrorPolling(t *testing.T, topo *topology.Topology, source, target string, statePoll time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := mirror.NewDaemon(topo, mirror.DaemonOptions{StatePoll: statePoll,
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
	link := topo.Link(source, target)
	kfaketest.Wait(t, 30*time.Second, "mirror "+link.String()+" running", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ls := linkstate.Describe(ctx, kfaketest.Session(t, topo), link)
		return ls.Error == "" && ls.Running, fmt.Sprintf("%+v", ls)
	})
}

// waitMirrored waits until every selected partition of source has been
// copied to target up to its end.
func waitMirrored(t *testing.T, topo *topology.Topology, source, target string) {
	t.Helper()
	link := topo.Link(source, target)
	kfaketest.Wait(t, 30*time.Second, link.String()+" caught up", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rep, err := linkstate.MeasureLag(ctx, kfaketest.Session(t, topo), link)
		if err != nil {
			return false, err.Error()
		}
		for _, p := range rep.Partitions {
			if p.Mirrored < 0 && p.SourceEnd > 0 {
				return false, fmt.Sprintf("%s/%d never mirrored", p.Topic, p.Partition)
			}
		}
		return rep.Caught() && allMirrored(rep) && len(rep.Partitions) > 0, fmt.Sprintf("%+v", rep.Partitions)
	})
	waitStandbyFenced(t, topo, target)
}

// waitStandbyFenced waits, when target is the steady standby of a
// topology that fences with ACLs, until the mirror's ACL sync has fenced
// every mirrored topic of it (what the mirror does on its own, so that
// snapshots taken next hold it).
func waitStandbyFenced(t *testing.T, topo *topology.Topology, target string) {
	t.Helper()
	if topo.Failover.Fence != topology.FenceACL || !topo.Mirror.ACLs.Enabled {
		return
	}
	roles, err := inspect.CollectRoles(kfaketest.Ctx(t, 20*time.Second), kfaketest.Session(t, topo))
	if err != nil || roles.Standby != target || (roles.Phase != rolestate.PhaseSteady && roles.Phase != "") {
		return
	}
	admin := kfaketest.Admin(t, kfaketest.Dial(t, topo, target))
	kfaketest.Wait(t, 30*time.Second, target+" fenced by the mirror's ACL sync", func() (bool, string) {
		bs, err := aclsync.List(admin)
		if errors.Is(err, sarama.ErrSecurityDisabled) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		gaps, err := aclsync.FenceGaps(topo, admin, bs)
		if err != nil {
			return false, err.Error()
		}
		return len(gaps) == 0, fmt.Sprintf("%d fence ACL(s) missing: %+v", len(gaps), gaps)
	})
}

// waitGroupSynced waits until group has an offset committed on cluster
// for each of n partitions.
func waitGroupSynced(t *testing.T, topo *topology.Topology, cluster, group string, n int) {
	t.Helper()
	admin := kfaketest.Admin(t, kfaketest.Dial(t, topo, cluster))
	kfaketest.Wait(t, 30*time.Second, "group "+group+" synced to "+cluster, func() (bool, string) {
		got := kfaketest.GroupOffsets(t, admin, group)
		return len(got) == n, fmt.Sprint(got)
	})
}

// clusterSnap is what a refusal must leave as it found it on one cluster.
type clusterSnap struct {
	Roles string
	// State is the decoded role state (zero when none is stored).
	State rolestate.State
	ACLs  []string
	// Topics: every topic but the run records (topology.RunsTopic; a refused run
	// leaves its record there, which is the audit trail of the attempt),
	// with its partition count and, for non-internal topics, the log
	// start and end of each partition (a wipe or a re-create shows).
	Topics map[string]string
	// Groups: the committed offsets of every group but drctl's own.
	Groups map[string]string
}

func rolesLine(s rolestate.State, found bool) string {
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

func aclsOf(t *testing.T, admin sarama.ClusterAdmin) []string {
	t.Helper()
	all, err := admin.ListAcls(sarama.AclFilter{ResourceType: sarama.AclResourceAny, ResourcePatternTypeFilter: sarama.AclPatternAny,
		Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny})
	if err != nil {
		t.Fatalf("list ACLs: %v", err)
	}
	var out []string
	for _, ra := range all {
		for _, a := range ra.Acls {
			out = append(out, aclString(ra.Resource, a))
		}
	}
	sort.Strings(out)
	return out
}

// aclString renders one ACL as "Topic:orders(Literal) User:app@* Write Deny".
func aclString(r sarama.Resource, a *sarama.Acl) string {
	return fmt.Sprintf("%s:%s(%s) %s@%s %s %s", r.ResourceType.String(), r.ResourceName, r.ResourcePatternType.String(),
		a.Principal, a.Host, a.Operation.String(), a.PermissionType.String())
}

func snapshotOf(t *testing.T, topo *topology.Topology, cluster string) *clusterSnap {
	t.Helper()
	ctx := kfaketest.Ctx(t, 20*time.Second)
	cl := kfaketest.Dial(t, topo, cluster)
	admin := kfaketest.Admin(t, cl)
	st, found, err := rolestate.Read(ctx, cl, topo.Name)
	if err != nil {
		t.Fatalf("read role state of %s: %v", cluster, err)
	}
	s := &clusterSnap{Roles: rolesLine(st, found), State: st, ACLs: aclsOf(t, admin), Topics: map[string]string{}, Groups: map[string]string{}}
	topics, err := admin.ListTopics()
	if err != nil {
		t.Fatalf("list topics of %s: %v", cluster, err)
	}
	for name, d := range topics {
		// The runs topic records runs and the locks topic holds leases
		// (one drctl at a time per run): drctl's bookkeeping, not the
		// roles, data, ACLs or groups a run changes.
		if name == topology.RunsTopic || name == topology.DrillLocksTopic {
			continue
		}
		desc := fmt.Sprintf("partitions=%d", d.NumPartitions)
		if !strings.HasPrefix(name, "__") && !strings.HasPrefix(name, topology.InternalPrefix) { // salvage topics too
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
		if topology.OwnsGroup(g) {
			continue
		}
		s.Groups[g] = strings.Join(kfaketest.GroupOffsets(t, admin, g), " ")
	}
	return s
}

// snapshots snapshots each named cluster.
func snapshots(t *testing.T, topo *topology.Topology, clusters ...string) map[string]*clusterSnap {
	t.Helper()
	out := map[string]*clusterSnap{}
	for _, c := range clusters {
		out[c] = snapshotOf(t, topo, c)
	}
	return out
}

// snapDiff lists what differs between two snapshots of a cluster.
func snapDiff(before, after *clusterSnap) []string {
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

// assertUnchanged fails the test for every difference between before and a
// fresh snapshot of the same clusters.
func assertUnchanged(t *testing.T, topo *topology.Topology, before map[string]*clusterSnap) map[string]*clusterSnap {
	t.Helper()
	after := map[string]*clusterSnap{}
	for c, b := range before {
		after[c] = snapshotOf(t, topo, c)
		for _, d := range snapDiff(b, after[c]) {
			t.Errorf("%s changed: %s", c, d)
		}
	}
	return after
}

// noStepDone checks that the clusters record no step of run id as done.
func noStepDone(t *testing.T, topo *topology.Topology, id string) {
	t.Helper()
	rec, err := loadRun(kfaketest.Ctx(t, 20*time.Second), topo, id)
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

// stateHistory returns every committed role state of topo on cluster, in
// order.
func stateHistory(t *testing.T, topo *topology.Topology, cluster string) []rolestate.State {
	t.Helper()
	cl := kfaketest.Dial(t, topo, cluster)
	var out []rolestate.State
	_, err := kafkaread.ReadCommitted(kfaketest.Ctx(t, 20*time.Second), cl, topology.StateTopic, 0, 0, func(r kafkaread.Record) error {
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

// fenceRecordOf reads cluster's fence record of topo (nil when none).
func fenceRecordOf(t *testing.T, topo *topology.Topology, cluster string) *aclfence.Record {
	t.Helper()
	raw, found, err := kvstore.Get(kfaketest.Ctx(t, 20*time.Second), kfaketest.Dial(t, topo, cluster), topology.FenceTopic, topo.Name)
	if err != nil {
		t.Fatalf("read the fence record of %s: %v", cluster, err)
	}
	if !found {
		return nil
	}
	var rec aclfence.Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatalf("fence record of %s: %v (%s)", cluster, err, raw)
	}
	return &rec
}

// setState compare-and-sets next on each named cluster, as another
// drctl would.
func setState(t *testing.T, topo *topology.Topology, expected int64, next rolestate.State, clusters ...string) {
	t.Helper()
	for _, c := range clusters {
		if err := rolestate.CompareAndSet(kfaketest.Ctx(t, 30*time.Second), kfaketest.Dial(t, topo, c), nil, expected, next); err != nil {
			t.Fatalf("set the role state of %s: %v", c, err)
		}
	}
}
