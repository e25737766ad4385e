package failover

// On kfake: a plan runs only as it was made, and no plan runs on a topology
// that names one cluster twice.

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/kvstore"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
	"github.com/drctl/drctl/topology"
)

// stepIndex returns the index of the first step named name.
func stepIndex(t *testing.T, p *plans.Plan, name string) int {
	t.Helper()
	for i, s := range p.Steps {
		if s.Name == name {
			return i
		}
	}
	t.Fatalf("plan %s has no step %s", p.ID, name)
	return -1
}

// roundTrip saves p, lets edit change the saved JSON, and loads it again
// as drctl apply would.
func roundTrip(t *testing.T, p *plans.Plan, edit func(p *plans.Plan)) *plans.Plan {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := plans.SavePlan(path, p); err != nil {
		t.Fatal(err)
	}
	q, err := plans.LoadPlan(path)
	if err != nil {
		t.Fatal(err)
	}
	edit(q)
	if err := plans.SavePlan(path, q); err != nil {
		t.Fatal(err)
	}
	if q, err = plans.LoadPlan(path); err != nil {
		t.Fatal(err)
	}
	return q
}

func setParams(t *testing.T, p *plans.Plan, i int, v any) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	p.Steps[i].Params = raw
}

// noTrace checks that a refused run left nothing: no journal, no run
// record in either cluster.
func noTrace(t *testing.T, topo *topology.Topology, journal, id string) {
	t.Helper()
	if entries, _ := os.ReadDir(journal); len(entries) > 0 {
		t.Errorf("the refused run wrote %d journal file(s) in %s (first %s)", len(entries), journal, entries[0].Name())
	}
	for _, c := range topo.ClusterNames() {
		_, found, err := kvstore.Get(kfaketest.Ctx(t, 20*time.Second), kfaketest.Dial(t, topo, c), topology.RunsTopic, id)
		if err != nil {
			t.Fatalf("read the run record of %s on %s: %v", id, c, err)
		}
		if found {
			t.Errorf("%s keeps a run record of the refused run %s", c, id)
		}
	}
}

// TestTamperedPlanRefused: a saved failover plan edited by hand (a step's
// params, its title, a flag, the inputs, a step removed) is refused before
// anything runs, naming the step and the fix, and nothing changes: no
// role state, topic, group or ACL moves and no trace of the run is left.
func TestTamperedPlanRefused(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: "failover: {fence: none, drain_timeout: 30s, quiet_period: 300ms}\n"})
	topo := p.Topology
	seedOrders(t, topo)
	kfaketest.CreateTopic(t, topo, "west", "orders", 3, nil)
	plan := planTo(t, topo, "west")
	wipe := stepIndex(t, plan, runrecord.StepWipe)

	cases := []struct {
		name string
		edit func(q *plans.Plan)
		want string
	}{
		{"wipe params swapped", func(q *plans.Plan) {
			setParams(t, q, wipe, reseedParams{Stale: "west", Active: "east"})
		}, "step " + strconv.Itoa(wipe+1)},
		{"title of the wipe changed", func(q *plans.Plan) {
			q.Steps[wipe].Title = "Tidy up a little"
		}, "step " + strconv.Itoa(wipe+1)},
		{"destructive flag dropped", func(q *plans.Plan) {
			q.Steps[wipe].Destructive = false
		}, "step " + strconv.Itoa(wipe+1)},
		{"a step removed", func(q *plans.Plan) {
			q.Steps = append(q.Steps[:1], q.Steps[2:]...)
			for i := range q.Steps {
				q.Steps[i].Index = i
			}
		}, "step 2"},
		{"inputs swapped", func(q *plans.Plan) {
			var in Inputs
			if err := q.DecodeInputs(&in); err != nil {
				t.Fatal(err)
			}
			in.From, in.To = in.To, in.From
			if err := q.SetInputs(in); err != nil {
				t.Fatal(err)
			}
		}, "inputs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := roundTrip(t, plan, tc.edit)
			// apply checks the plan before it prints it: its titles need
			// not be what would run.
			if err := CheckFresh(kfaketest.Ctx(t, 20*time.Second), kfaketest.Session(t, topo), q); !errors.Is(err, ErrPlanChanged) {
				t.Errorf("CheckFresh of the edited plan: got %v, want ErrPlanChanged", err)
			}
			before := snapshots(t, topo, "east", "west")
			journal := t.TempDir()
			var c confirmCounter
			err := execute(t, topo, q, journal, &c)
			if err == nil {
				t.Fatal("the edited plan ran")
			}
			msg := err.Error()
			for _, want := range []string{"the plan was changed after it was made", tc.want, "drctl plan failover"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not contain %q", msg, want)
				}
			}
			if c.n.Load() != 0 {
				t.Errorf("the refused run asked the operator %d time(s)", c.n.Load())
			}
			assertUnchanged(t, topo, before)
			noTrace(t, topo, journal, q.ID)
		})
	}

	// The same holds for a resume: the clusters name the run as in
	// progress, and the plan they keep (or the journal) was edited.
	t.Run("resume of an edited run record", func(t *testing.T) {
		q := roundTrip(t, plan, func(q *plans.Plan) {
			setParams(t, q, wipe, reseedParams{Stale: "west", Active: "east"})
		})
		var in Inputs
		if err := plan.DecodeInputs(&in); err != nil {
			t.Fatal(err)
		}
		rec := runrecord.Record{Plan: q, Done: make([]bool, len(q.Steps)), Outputs: map[int]json.RawMessage{}, Started: 1}
		rec.Done[0] = true
		raw, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{"east", "west"} {
			if err := kvstore.Put(kfaketest.Ctx(t, 20*time.Second), kfaketest.Dial(t, topo, c), topology.RunsTopic, q.ID, raw); err != nil {
				t.Fatal(err)
			}
		}
		s := rolestate.State{Topology: topo.Name, Epoch: in.Epoch + 1, Active: "east", Standby: "west", Phase: rolestate.PhaseFailingOver,
			Run: &rolestate.Run{ID: q.ID, Kind: rolestate.RunFailover, StartedAt: q.CreatedAt}}
		setState(t, topo, in.Epoch, s, "west", "east")
		before := snapshots(t, topo, "east", "west")
		var c confirmCounter
		ctx := kfaketest.Ctx(t, 60*time.Second)
		err = Resume(ctx, kfaketest.Session(t, topo), q.ID, RunOptions{JournalDir: t.TempDir(), Confirm: c.confirm})
		if err == nil || !strings.Contains(err.Error(), "the plan was changed after it was made") {
			t.Fatalf("resume of an edited run: got %v, want a refusal", err)
		}
		assertUnchanged(t, topo, before)
	})
}

// sameClusterPair returns a topology whose east and west both name the
// one cluster of a kfake pair's east.
func sameClusterPair(t *testing.T, extra string) (*kfaketest.Pair, *topology.Topology) {
	t.Helper()
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: extra})
	o := kfaketest.Options{Mirror: ordersBillingYAML, Extra: extra}
	path := filepath.Join(t.TempDir(), "drctl.yaml")
	if err := os.WriteFile(path, []byte(kfaketest.TopologyYAML("test", p.East.ListenAddrs(), p.East.ListenAddrs(), o)), 0o600); err != nil {
		t.Fatal(err)
	}
	topo, err := topology.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return p, topo
}

// TestOneClusterTwoNamesRefused: with east and west pointing at the same
// brokers, every plan (planned and unplanned failover, failback, reseed)
// is refused naming the cluster id, and nothing changes.
func TestOneClusterTwoNamesRefused(t *testing.T) {
	_, topo := sameClusterPair(t, "failover: {fence: none, drain_timeout: 30s}\n")
	seedOrders(t, topo)
	before := snapshots(t, topo, "east")
	for _, tc := range []struct {
		name string
		plan func() (*plans.Plan, error)
	}{
		{"planned", func() (*plans.Plan, error) {
			return PlanFailover(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), FailoverRequest{To: "west"})
		}},
		{"unplanned", func() (*plans.Plan, error) {
			return PlanFailover(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), FailoverRequest{To: "west", Mode: Unplanned})
		}},
		{"reseed", func() (*plans.Plan, error) {
			return PlanReseed(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), "west")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.plan()
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("got %v, want a refusal", err)
			}
			for _, want := range []string{"one cluster", "kfake-east", "east", "west", "bootstrap"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message %q does not contain %q", err, want)
				}
			}
		})
	}
	assertUnchanged(t, topo, before)
}

// TestOneClusterTwoNamesRecorded: the old active does not answer, and the
// role state recorded for it the cluster id the new active answers with:
// an unplanned failover is refused, and so is a saved plan whose preflight
// finds it so, with nothing changed.
func TestOneClusterTwoNamesRecorded(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: "failover: {fence: none, drain_timeout: 30s}\n"})
	topo := p.Topology
	kfaketest.CreateTopic(t, topo, "west", "orders", 3, nil)
	s := rolestate.State{Topology: topo.Name, Epoch: 1, Active: "east", Standby: "west", Phase: rolestate.PhaseSteady,
		ClusterIDs: map[string]string{"east": "kfake-west", "west": "kfake-west"}}
	setState(t, topo, 0, s, "west")
	p.Stop("east")
	before := snapshots(t, topo, "west")
	_, err := PlanFailover(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), FailoverRequest{To: "west", Mode: Unplanned})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "one cluster") || !strings.Contains(err.Error(), "recorded") {
		t.Fatalf("got %v, want a refusal naming one cluster under two names, as recorded", err)
	}
	assertUnchanged(t, topo, before)

	// The preflight of a plan made from other recorded ids finds it too.
	plan := plans.New("failover-recorded", string(rolestate.RunFailover))
	in := Inputs{Topology: topo.Name, TopologyDigest: topo.Digest, Epoch: 1, Active: "east", Standby: "west", Phase: rolestate.PhaseSteady,
		From: "east", To: "west", Unplanned: true, ClusterIDs: map[string]string{"east": "kfake-west", "west": "kfake-west"}}
	if err := plan.SetInputs(in); err != nil {
		t.Fatal(err)
	}
	if err := buildSteps(topo, plan, in); err != nil {
		t.Fatal(err)
	}
	journal := t.TempDir()
	var c confirmCounter
	err = execute(t, topo, plan, journal, &c)
	var serr *plans.StepError
	if !errors.As(err, &serr) || serr.Name != StepPreflight || !strings.Contains(err.Error(), "one cluster") {
		t.Fatalf("got %v, want the preflight to refuse one cluster under two names", err)
	}
	assertUnchanged(t, topo, before)
}
