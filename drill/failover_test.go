package drill

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// TestFailoverDrill: a real planned failover and failback with the canary
// application following the roles; every acknowledged canary record is read
// exactly once, each direction has its RTO and its proof that the new
// active holds the canary topic as the link copied it, and the roles end
// as they began.
func TestFailoverDrill(t *testing.T) {
	p := newPair(t, "drills: {allow_disruptive: true}\n")
	topo := p.Topology
	startMirror(t, topo)
	d := topology.DefaultDrill(topology.DrillFailover)
	d.Params.Rate, d.Params.Hold = 20, time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rec, err := Run(ctx, kfaketest.Session(t, topo), d, Options{JournalDir: t.TempDir(), Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Verdict != Pass {
		t.Fatalf("verdict %s: %v\nsteps: %+v", rec.Verdict, rec.Reasons, rec.Steps)
	}
	if len(rec.Directions) != 2 || rec.Directions[0].To != "west" || rec.Directions[1].To != "east" {
		t.Fatalf("directions: %+v", rec.Directions)
	}
	for _, dir := range rec.Directions {
		if dir.RTOWriteSeconds <= 0 || dir.RTOConsumeSeconds <= 0 || dir.Lost != 0 || dir.Duplicated != 0 || dir.ReRead != 0 || dir.RunID == "" {
			t.Errorf("direction %+v", dir)
		}
		// Counted of how many; fence: none is nothing verified; the run's
		// steps as evidence.
		if !dir.Tallied || dir.Records <= 0 || dir.FenceVerified || dir.FenceSkip == "" || dir.FenceNote != "" || len(dir.RunSteps) == 0 {
			t.Errorf("direction %+v", dir)
		}
		for _, s := range dir.RunSteps {
			if s.Status != "done" || s.StartedAt.IsZero() {
				t.Errorf("run %s step %+v", dir.RunID, s)
			}
		}
		// Right after the flip the canary topic on the new active was
		// proven identical to what the link copied, every record of it.
		if pr := dir.Proof; !pr.Proven() || pr.Compared == 0 || pr.Compared != pr.SourceRecords || len(pr.Ranges) != 1 || pr.Link != dir.From+"->"+dir.To {
			t.Errorf("%s -> %s: proof %+v", dir.From, dir.To, pr)
		}
	}
	roles, err := inspect.CollectRoles(ctx, kfaketest.Session(t, topo))
	if err != nil || roles.Active != "east" || roles.Phase != "steady" || roles.Run != nil || roles.Epoch < 4 {
		t.Errorf("roles after the drill: %+v %v", roles, err)
	}
	if rto, ok := rec.MeasuredRTO(); !ok || rto <= 0 {
		t.Errorf("measured RTO %v %v", rto, ok)
	}
	t.Logf("directions: %+v", rec.Directions)
	// The next canary estimates the RTO from this drill.
	c := runDrill(t, topo, smallCanary(), t.TempDir())
	if c.Verdict != Pass || c.RTO == nil || c.RTO.From != rec.ID || c.RTO.Seconds != max(rec.Directions[0].RTOWriteSeconds, rec.Directions[1].RTOWriteSeconds) {
		t.Errorf("canary after the failover drill: %s %v, RTO %+v", c.Verdict, c.Reasons, c.RTO)
	}
	if s := c.Summary(); s.RTOSeconds == nil || !s.RTOEstimated {
		t.Errorf("the canary's summary does not mark its RTO as estimated: %+v", s)
	}
}

func TestDisruptiveDrillRefused(t *testing.T) {
	p := newPair(t, "")
	for _, k := range []topology.DrillKind{topology.DrillFailover, topology.DrillUnplanned} {
		_, err := Run(context.Background(), kfaketest.Session(t, p.Topology), topology.DefaultDrill(k), Options{JournalDir: t.TempDir(), Yes: true})
		if !errors.Is(err, ErrBadInput) {
			t.Errorf("%s without allow_disruptive: %v", k, err)
		}
	}
}
