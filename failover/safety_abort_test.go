package failover

// drctl abort on kfake: before the flip it restores the state the run
// started from and records why; after it, it refuses and points to
// resume. status names a stuck run, its real step, and both commands.

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/kvstore"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
	"github.com/drctl/drctl/topology"
)

// TestAbortBeforeFlip: a failover interrupted in its drain (fence acl
// added, phase failing-over) is shown by status as stuck at the drain,
// naming resume and abort; abort removes the fence, restores steady roles
// with east active, records why in the run record and the journal, and
// the run can no longer be resumed.
func TestAbortBeforeFlip(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: "failover: {fence: acl, drain_timeout: 2m, quiet_period: 1m}\n"})
	topo := p.Topology
	seedOrders(t, topo)
	startMirror(t, topo, "east", "west")
	waitMirrored(t, topo, "east", "west")
	before := snapshots(t, topo, "east", "west")
	plan := planTo(t, topo, "west")
	drainAt := stepIndex(t, plan, StepDrain)

	journal := t.TempDir()
	in := &plans.Interrupts{}
	done := make(chan error, 1)
	go func() {
		done <- Execute(kfaketest.Ctx(t, 2*time.Minute), kfaketest.Session(t, topo), plan, RunOptions{JournalDir: journal, Interrupts: in})
	}()
	kfaketest.Wait(t, 60*time.Second, "the run is draining", func() (bool, string) {
		st, err := plans.ReadJournal(filepath.Join(journal, plan.ID+".jsonl"))
		if err != nil {
			return false, err.Error()
		}
		return st.Next == drainAt && st.Rerun, st.LastError
	})
	in.Interrupt()
	select {
	case err := <-done:
		if !errors.Is(err, plans.ErrInterrupted) {
			t.Fatalf("the interrupted run returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the drain did not stop at the interrupt")
	}
	if acls := aclsOf(t, kfaketest.Admin(t, kfaketest.Dial(t, topo, "east"))); len(acls) == 0 {
		t.Fatal("east is not fenced: the test did not stop where it meant to")
	}

	st, _ := inspect.CollectStatus(kfaketest.Ctx(t, 20*time.Second), kfaketest.Session(t, topo))
	if st.Roles.Run == nil || st.Roles.Run.Step != drainAt {
		t.Errorf("status shows run %+v; want it at step index %d (the drain)", st.Roles.Run, drainAt)
	}
	problems := strings.Join(st.Problems, "\n")
	for _, want := range []string{plan.ID, "drctl resume " + plan.ID, "drctl abort " + plan.ID, "drain"} {
		if !strings.Contains(problems, want) {
			t.Errorf("status problems do not name %q:\n%s", want, problems)
		}
	}

	rep, err := Abort(kfaketest.Ctx(t, 60*time.Second), kfaketest.Session(t, topo), "", AbortOptions{Reason: "drill called off", JournalDir: journal})
	if err != nil {
		t.Fatalf("abort: %v", err)
	}
	t.Logf("aborted: %+v", rep)
	if rep.RunID != plan.ID {
		t.Errorf("aborted run %s, want %s", rep.RunID, plan.ID)
	}
	after := snapshots(t, topo, "east", "west")
	for _, c := range []string{"east", "west"} {
		s := after[c].State
		if s.Active != "east" || s.Standby != "west" || s.Phase != rolestate.PhaseSteady || s.Run != nil {
			t.Errorf("%s holds %s after the abort; want east active, steady, no run", c, after[c].Roles)
		}
		if got, want := after[c].ACLs, before[c].ACLs; strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s ACLs after the abort: %v, before the run: %v", c, got, want)
		}
		for topic, desc := range before[c].Topics {
			if topology := after[c].Topics[topic]; topology != desc && !strings.HasPrefix(topic, "__") {
				t.Errorf("%s topic %s was %s, now %s", c, topic, desc, topology)
			}
		}
	}
	raw, found, err := kvstore.Get(kfaketest.Ctx(t, 20*time.Second), kfaketest.Dial(t, topo, "west"), topology.RunsTopic, plan.ID)
	if err != nil || !found {
		t.Fatalf("run record: %v %v", found, err)
	}
	var rec runrecord.Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Aborted == nil || !strings.Contains(rec.Aborted.Reason, "drill called off") || rec.Outcome != plans.OutcomeAborted {
		t.Errorf("the run record does not say it was aborted and why: %+v", rec.Aborted)
	}
	js, err := plans.ReadJournal(filepath.Join(journal, plan.ID+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if js.Outcome != plans.OutcomeAborted || !strings.Contains(js.LastError, "drill called off") {
		t.Errorf("the journal ends %q %q; want aborted with the reason", js.Outcome, js.LastError)
	}
	st, _ = inspect.CollectStatus(kfaketest.Ctx(t, 20*time.Second), kfaketest.Session(t, topo))
	if strings.Contains(strings.Join(st.Problems, "\n"), plan.ID) {
		t.Errorf("status still lists the aborted run: %q", st.Problems)
	}
	err = Resume(kfaketest.Ctx(t, 60*time.Second), kfaketest.Session(t, topo), plan.ID, RunOptions{JournalDir: journal, Yes: true})
	if err == nil || !strings.Contains(err.Error(), "aborted") {
		t.Errorf("resume of the aborted run: %v; want a refusal saying it was aborted", err)
	}
}

// TestAbortAfterFlip: once the roles flipped, abort refuses, says to run
// drctl resume, and changes nothing.
func TestAbortAfterFlip(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: "failover: {fence: none, drain_timeout: 30s}\n"})
	topo := p.Topology
	seedOrders(t, topo)
	kfaketest.CreateTopic(t, topo, "west", "orders", 3, nil)
	plan := planTo(t, topo, "west")
	flip := stepIndex(t, plan, runrecord.StepFlip)
	var sp stateParams
	if err := plan.Steps[flip].DecodeParams(&sp); err != nil {
		t.Fatal(err)
	}
	rec := runrecord.Record{Plan: plan, Done: make([]bool, len(plan.Steps)), Outputs: map[int]json.RawMessage{}, Started: flip}
	for i := 0; i <= flip; i++ {
		rec.Done[i] = true
	}
	raw, _ := json.Marshal(rec)
	for _, c := range []string{"east", "west"} {
		if err := kvstore.Put(kfaketest.Ctx(t, 20*time.Second), kfaketest.Dial(t, topo, c), topology.RunsTopic, plan.ID, raw); err != nil {
			t.Fatal(err)
		}
	}
	setState(t, topo, 0, sp.State, "west", "east")
	before := snapshots(t, topo, "east", "west")
	_, err := Abort(kfaketest.Ctx(t, 60*time.Second), kfaketest.Session(t, topo), plan.ID, AbortOptions{Reason: "too late", JournalDir: t.TempDir()})
	if !errors.Is(err, ErrPastPointOfNoReturn) || !strings.Contains(err.Error(), "drctl resume "+plan.ID) {
		t.Fatalf("abort after the flip: got %v, want a refusal naming drctl resume", err)
	}
	assertUnchanged(t, topo, before)
}
