//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
	"github.com/drctl/drctl/topology"
)

// On real Kafka: a plan runs only as shown and nothing is wiped without
// salvage. Four requests that would destroy or
// strand data are refused, and each leaves both clusters as they were
// (the test's topics with every record, the role state steady, no
// quarantine topic, no ACL).

// sfState is what a refusal must leave alone on one cluster.
type sfState struct {
	Roles  string
	Topics map[string]string // topic -> "p:[start,end) ..." and a digest of the records
	ACLs   int
}

func sfSnapshot(t *testing.T, ft *foTopo, cluster string) sfState {
	t.Helper()
	cl := ft.dial(t, cluster)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, found, err := rolestate.Read(ctx, cl, ft.Name)
	if err != nil {
		t.Fatalf("role state of %s: %v", cluster, err)
	}
	s := sfState{Roles: "none", Topics: map[string]string{}}
	if found {
		s.Roles = fmt.Sprintf("epoch %d active %s standby %s %s run=%v", st.Epoch, st.Active, st.Standby, st.Phase, st.Run != nil)
	}
	admin, err := sarama.NewClusterAdminFromClient(cl)
	if err != nil {
		t.Fatal(err)
	}
	all, err := admin.ListTopics()
	if err != nil {
		t.Fatal(err)
	}
	for name, d := range all {
		if !strings.HasPrefix(name, ft.Name+".") {
			continue
		}
		var b strings.Builder
		for p := int32(0); p < d.NumPartitions; p++ {
			n := 0
			var last string
			_, err := kafkaread.ReadCommitted(ctx, cl, name, p, 0, func(r kafkaread.Record) error {
				n++
				last = fmt.Sprintf("%d=%s", r.Offset, r.Value)
				return nil
			})
			if err != nil {
				t.Fatalf("read %s/%d on %s: %v", name, p, cluster, err)
			}
			fmt.Fprintf(&b, "%d:%d records, last %s; ", p, n, last)
		}
		s.Topics[name] = b.String()
	}
	acls := ft.acls(t, cluster)
	s.ACLs = len(acls)
	return s
}

func sfSnapshots(t *testing.T, ft *foTopo) map[string]sfState {
	out := map[string]sfState{}
	for _, c := range []string{"east", "west"} {
		out[c] = sfSnapshot(t, ft, c)
	}
	return out
}

func sfUnchanged(t *testing.T, ft *foTopo, before map[string]sfState) {
	t.Helper()
	after := sfSnapshots(t, ft)
	for c, b := range before {
		a := after[c]
		if a.Roles != b.Roles {
			t.Errorf("%s: role state was %q, now %q", c, b.Roles, a.Roles)
		}
		if a.ACLs != b.ACLs {
			t.Errorf("%s: %d ACL(s) before, %d now", c, b.ACLs, a.ACLs)
		}
		var names []string
		for n := range b.Topics {
			names = append(names, n)
		}
		for n := range a.Topics {
			if _, ok := b.Topics[n]; !ok {
				t.Errorf("%s: topic %s appeared (%s)", c, n, a.Topics[n])
			}
		}
		sort.Strings(names)
		for _, n := range names {
			if a.Topics[n] != b.Topics[n] {
				t.Errorf("%s: topic %s was %q, now %q", c, n, b.Topics[n], a.Topics[n])
			}
		}
	}
}

// sfRefused checks a drctl run that must be refused with exit 2 and a
// message holding every want.
func sfRefused(t *testing.T, r *foRun, want ...string) {
	t.Helper()
	if r.Code != 2 {
		t.Errorf("exit %d, want 2 (refused); stderr: %s", r.Code, r.Stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.Stderr, w) {
			t.Errorf("stderr %q does not say %q", r.Stderr, w)
		}
	}
	for _, e := range r.Events {
		if e.Type == plans.EventStepDone {
			t.Errorf("step %d (%s) ran", e.Index+1, e.Name)
		}
	}
}

// TestFailoverSafetyRefusals: with east active and west an in-sync
// standby (the mirror running), each of these is refused, and changes
// nothing: (1) a saved plan whose wipe step was edited to wipe west,
// (2) a failover (planned, unplanned, forced unplanned) or a forced
// reseed in a topology that names east twice, (3) a reseed of the
// healthy standby west, (4) an unplanned failover while east answers.
func TestFailoverSafetyRefusals(t *testing.T) {
	ft := newFoTopo(t, "safety", "1s", "{fence: acl, drain_timeout: 30s, quiet_period: 1s}")
	orders := ft.topic("orders")
	createTopic(t, "east", orders, 3, nil)
	p, err := newSyncProducer(ft.Topo.Clusters["east"], "")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: orders, Key: sarama.StringEncoder(fmt.Sprint(i)), Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	_ = p.Close()
	startMirror(t, ft.mirrorTopo(), "mirror")
	ft.waitLinkCaught(t, "east", "west", 60*time.Second)
	// The mirror's ACL sync fences the standby's new topic: wait for it,
	// so that the snapshot holds what the mirror does on its own.
	ft.waitStandbyFenced(t, "west", 60*time.Second)
	before := sfSnapshots(t, ft)
	if !strings.Contains(before["west"].Topics[orders], "records") {
		t.Fatalf("west has no copy of %s: %+v", orders, before["west"])
	}

	t.Run("tampered plan", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "p.json")
		if r := ft.run(t, time.Minute, nil, "plan", "failover", "--to", "west", "--out", path); r.Code != 0 {
			t.Fatalf("plan failover: exit %d: %s", r.Code, r.Stderr)
		}
		plan, err := plans.LoadPlan(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range plan.Steps {
			if s.Name == runrecord.StepWipe {
				plan.Steps[i].Params = json.RawMessage(`{"stale":"west","active":"east"}`)
			}
		}
		if err := plans.SavePlan(path, plan); err != nil {
			t.Fatal(err)
		}
		r := ft.run(t, time.Minute, nil, "apply", "--yes", path)
		sfRefused(t, r, "the plan was changed after it was made", "wipe", "drctl plan failover")
		sfUnchanged(t, ft, before)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		clusters := kafkaconn.Open(ctx, ft.Topo)
		rec := runrecord.Load(ctx, clusters, plan.ID)
		clusters.Close()
		if rec != nil {
			t.Errorf("the clusters keep a record of the refused run %s", plan.ID)
		}
	})

	t.Run("one cluster under two names", func(t *testing.T) {
		raw, err := os.ReadFile(ft.Path)
		if err != nil {
			t.Fatal(err)
		}
		twice := strings.Replace(string(raw), env.West, env.East, 1)
		twice = strings.Replace(twice, "mechanism: PLAIN", "mechanism: SCRAM-SHA-512", 1)
		path := filepath.Join(t.TempDir(), "twice.yaml")
		if err := os.WriteFile(path, []byte(twice), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := topology.Parse(path, []byte(twice), func(k string) (string, bool) { return env.Password, true }); err != nil {
			t.Fatalf("the two-name topology does not load: %v", err)
		}
		twoNames := &foTopo{Name: ft.Name, Path: path, Topo: ft.Topo, State: ft.State}
		for _, args := range [][]string{
			{"failover", "--to", "west", "--yes"},
			{"failover", "--to", "west", "--unplanned", "--yes"},
			{"failover", "--to", "west", "--force-unplanned", "--yes"},
			{"reseed", "west", "--yes", "--force"},
		} {
			r := twoNames.run(t, time.Minute, nil, args...)
			sfRefused(t, r, "one cluster", "east", "west")
		}
		sfUnchanged(t, ft, before)
	})

	t.Run("reseed of the healthy standby", func(t *testing.T) {
		r := ft.run(t, time.Minute, nil, "reseed", "west", "--yes")
		sfRefused(t, r, "not stale", "--force")
		sfUnchanged(t, ft, before)
	})

	t.Run("unplanned failover of a live active", func(t *testing.T) {
		r := ft.run(t, time.Minute, nil, "failover", "--to", "west", "--unplanned", "--yes")
		sfRefused(t, r, "answers", "--force-unplanned")
		sfUnchanged(t, ft, before)
	})
}

// TestForcedReseedOfHealthyStandbyRealKafka: `drctl reseed west --force
// --yes` on the in-sync standby while `drctl mirror run` (reading the roles
// every 5s, its default) copies into it runs to the end: the forced plan
// says why it overrode the refusal, the wipe waits for the mirror that the
// run's phase stops (it used to fail at once, leaving phase wiping and no
// mirror copying), nothing is salvaged (every record on west came from
// east), and west holds east's records again, record by record, with the
// roles steady as before.
func TestForcedReseedOfHealthyStandbyRealKafka(t *testing.T) {
	ft := newFoTopo(t, "forcedreseed", "1s", "{fence: acl, drain_timeout: 30s, quiet_period: 1s}")
	orders := ft.topic("orders")
	createTopic(t, "east", orders, 3, nil)
	p, err := newSyncProducer(ft.Topo.Clusters["east"], "")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 90 {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: orders, Key: sarama.StringEncoder(fmt.Sprint(i)), Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	_ = p.Close()
	startMirror(t, ft.mirrorTopo(), "mirror")
	ft.waitLinkCaught(t, "east", "west", 60*time.Second)
	ft.waitStandbyFenced(t, "west", 60*time.Second)
	before := sfSnapshots(t, ft)

	r := ft.run(t, 5*time.Minute, nil, "reseed", "west", "--force", "--yes")
	if r.Code != 0 {
		t.Fatalf("forced reseed of the healthy standby: exit %d after %v; stderr: %s", r.Code, r.Took.Round(time.Millisecond), r.Stderr)
	}
	t.Logf("forced reseed of west took %v; the wipe waited: %q", r.Took.Round(time.Millisecond), r.Progress["wipe"])
	if !strings.Contains(r.Stderr, "forced") || !strings.Contains(r.Stderr, "not stale") {
		t.Errorf("the forced run does not say what it overrode; stderr: %s", r.Stderr)
	}
	salvage, ok := r.stepDone(failover.StepSalvage)
	if !ok {
		t.Fatal("no salvage step done")
	}
	var rep failover.SalvageReport
	if err := json.Unmarshal(salvage.Outputs, &rep); err != nil {
		t.Fatalf("salvage outputs %s: %v", salvage.Outputs, err)
	}
	if rep.Records != 0 || rep.FromActive != 90 {
		t.Errorf("salvaged %d record(s), skipped %d as east's; want 0 and all 90: %s", rep.Records, rep.FromActive, salvage.Summary)
	}
	after := sfSnapshots(t, ft)
	for _, c := range []string{"east", "west"} {
		if !strings.Contains(after[c].Roles, "active east standby west steady run=false") {
			t.Errorf("%s: roles after the reseed %q, want east active, west standby, steady", c, after[c].Roles)
		}
	}
	if a, b := after["east"].Topics[orders], before["east"].Topics[orders]; a != b {
		t.Errorf("east's %s was %q, now %q", orders, b, a)
	}
	if s, ok := after["east"].Topics[orders+ft.Topo.Failover.SalvageTopicSuffix]; ok && strings.Contains(strings.ReplaceAll(s, ":0 records", ""), " records") {
		t.Errorf("east's quarantine topic holds records: %s", s)
	}
	src, dst := ft.dial(t, "east"), ft.dial(t, "west")
	eastID, err := kafkaconn.ClusterID(src)
	if err != nil {
		t.Fatal(err)
	}
	kfaketest.WaitFor(t, 60*time.Second, orders+" on west re-seeded record by record", func() error {
		_, err := compareTopic(src, dst, orders, 3, eastID, false)
		return err
	})
}
