package drill

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestKilledDrillIsAProblem: an unplanned drill killed while its pause
// holds the mirror (before its failover) leaves the pause and a started
// record. Status names both as problems with drctl resume as the fix, the
// verdict is NOT READY, and the history shows the drill unfinished rather
// than a negative duration; drctl resume's clean-up then releases the
// pause and status is clear.
func TestKilledDrillIsAProblem(t *testing.T) {
	p := newPair(t, "drills: {allow_disruptive: true}\n")
	topo := p.Topology
	startMirror(t, topo)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	child := startDrillChild(t, topo, dir, "unplanned", time.Minute)
	kfaketest.Wait(t, time.Minute, "the drill's pause of the mirror", func() (bool, string) {
		ps, err := pausesOf(ctx, topo)
		return len(ps) == 1 && !ps[0].Released, fmt.Sprintf("%+v %v", ps, err)
	})
	sigkill(t, child)

	st, _ := inspect.CollectStatus(ctx, kfaketest.Session(t, topo))
	problems := strings.Join(st.Problems, "\n")
	for _, want := range []string{"is paused by drill-unplanned-", "recorded no result", "drctl resume"} {
		if !strings.Contains(problems, want) {
			t.Errorf("status problems do not say %q:\n%s", want, problems)
		}
	}
	if st.Pause == nil || st.LastDrill == nil || !st.LastDrill.Unfinished {
		t.Errorf("status pause %+v, last drill %+v; want the held pause and the unfinished drill", st.Pause, st.LastDrill)
	}
	if v := st.Readiness; v.Level != inspect.NotReady || !slices.ContainsFunc(v.Reasons, func(r string) bool { return strings.Contains(r, "the mirror is paused") }) {
		t.Errorf("readiness %+v; want NOT READY for the held pause", v)
	}
	hist, err := History(ctx, kfaketest.Session(t, topo), HistoryOptions{JournalDir: dir})
	if err != nil || len(hist) == 0 {
		t.Fatalf("history: %v %v", hist, err)
	}
	if s := hist[0].Summary(); !s.Unfinished || s.Duration != "unfinished" {
		t.Errorf("history's newest line %+v; want it unfinished, with no duration", s)
	}

	if did, err := Cleanup(ctx, kfaketest.Session(t, topo), CleanupOptions{JournalDir: dir}); err != nil || len(did) == 0 {
		t.Fatalf("clean-up after the killed drill: %q %v", did, err)
	}
	st, _ = inspect.CollectStatus(ctx, kfaketest.Session(t, topo))
	if st.Pause != nil || (st.LastDrill != nil && st.LastDrill.Unfinished) {
		t.Errorf("after the clean-up: pause %+v, last drill %+v; want neither", st.Pause, st.LastDrill)
	}
}
