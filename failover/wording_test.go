package failover

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestForcedUnplannedQuestionSpeaksOfNoDrain: a forced unplanned run with
// fence: none asks whether producers stopped, but has no drain after it:
// its answer says so, and only a planned run's speaks of the drain.
func TestForcedUnplannedQuestionSpeaksOfNoDrain(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: fenceNoneYAML})
	topo := p.Topology
	kfaketest.CreateTopic(t, topo, "east", "orders", 1, nil)
	plan, err := PlanFailover(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, topo), FailoverRequest{To: "west", Mode: Unplanned, ForceUnplanned: true})
	if err != nil {
		t.Fatal(err)
	}
	stepIndex(t, plan, StepConfirmStopped)
	for _, s := range plan.Steps {
		if s.Name == StepDrain {
			t.Fatalf("the forced unplanned plan has a drain step")
		}
	}
	for _, ans := range []answers{{yes: true}, {confirm: func(string) error { return nil }}} {
		res, err := confirmStopped("east", false, ans)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(res.Summary, "the drain waits") || !strings.Contains(res.Summary, "no drain") {
			t.Errorf("an unplanned run's answer says %q; it has no drain", res.Summary)
		}
		res, _ = confirmStopped("east", true, ans)
		if !strings.Contains(res.Summary, "the drain waits") {
			t.Errorf("a planned run's answer says %q; want the drain it waits in", res.Summary)
		}
	}
}

// TestAbortWithNothingInProgressSaysAbort: abort with no run in progress
// speaks of abort, not of resume.
func TestAbortWithNothingInProgressSaysAbort(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: fenceNoneYAML})
	_, err := Abort(kfaketest.Ctx(t, 30*time.Second), kfaketest.Session(t, p.Topology), "", AbortOptions{JournalDir: t.TempDir()})
	if !errors.Is(err, ErrNothingToAbort) || strings.Contains(err.Error(), "resume") {
		t.Errorf("abort with no run: %v; want ErrNothingToAbort, without resume", err)
	}
}
