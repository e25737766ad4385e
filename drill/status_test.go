package drill

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

func drillProblem(st *inspect.Status) string {
	for _, p := range st.Problems {
		if strings.Contains(p, "drill") {
			return p
		}
	}
	return ""
}

// TestStatusShowsLastDrill: with drills.stale_after set, status reports a
// problem until a drill passes, then shows the drill and no problem.
func TestStatusShowsLastDrill(t *testing.T) {
	p := newPair(t, "drills: {stale_after: 1h}\n")
	topo := p.Topology
	startMirror(t, topo)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, _ := inspect.CollectStatus(ctx, kfaketest.Session(t, topo))
	if st.LastDrill == nil || !st.LastDrill.Stale || !strings.Contains(drillProblem(st), "no drill passed within drills.stale_after (1h0m0s): no drill has passed yet") {
		t.Fatalf("before any drill: %+v %v", st.LastDrill, st.Problems)
	}
	rec := runDrill(t, topo, smallCanary(), t.TempDir())
	if rec.Verdict != Pass {
		t.Fatalf("canary: %v", rec.Reasons)
	}
	st, _ = inspect.CollectStatus(ctx, kfaketest.Session(t, topo))
	if d := st.LastDrill; d == nil || d.ID != rec.ID || d.Verdict != "pass" || d.Stale || d.LastPassAt == nil {
		t.Fatalf("after a pass: %+v", st.LastDrill)
	}
	if pr := drillProblem(st); pr != "" {
		t.Errorf("problem after a pass: %s", pr)
	}
}
