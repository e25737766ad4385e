package failover

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
	"github.com/drctl/drctl/topology"
)

// Plans saved by the drctl before typed step parameters (testdata/compat,
// made from compat/drctl.yaml by that build's buildSteps) still pass the
// verification every apply makes, and this build re-derives them with the
// same digest: the plan format did not change, so FormatVersion did not
// either.
func TestPlansOfTheUntypedBuildStillVerify(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "compat", "drctl.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	topo, err := topology.Parse("drctl.yaml", raw, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"failover", "unplanned", "failback", "reseed"} {
		t.Run(name, func(t *testing.T) {
			saved, err := plans.LoadPlan(filepath.Join("testdata", "compat", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var in Inputs
			if err := saved.DecodeInputs(&in); err != nil {
				t.Fatal(err)
			}
			if in.TopologyDigest != topo.Digest {
				t.Fatalf("the saved plan was made from another topology (%s, want %s)", in.TopologyDigest, topo.Digest)
			}
			if err := verifyPlan(topo, saved, in); err != nil {
				t.Fatalf("a plan of the untyped build no longer verifies: %v", err)
			}
			again := &plans.Plan{FormatVersion: saved.FormatVersion, ID: saved.ID, Kind: saved.Kind, CreatedAt: saved.CreatedAt, CreatedBy: saved.CreatedBy, Inputs: saved.Inputs}
			if err := buildSteps(topo, again, in); err != nil {
				t.Fatal(err)
			}
			// This build marks the point of no return on its step; the saved
			// plan, older, has no mark, and is read by the step's name.
			if i := again.PointOfNoReturn(); i < 0 || i != runrecord.PointOfNoReturn(saved) {
				t.Errorf("this build marks step %d as the point of no return, the saved plan's is step %d by name", i, runrecord.PointOfNoReturn(saved))
			}
			for i := range again.Steps {
				again.Steps[i].PointOfNoReturn = false
			}
			d1, err1 := saved.Digest()
			d2, err2 := again.Digest()
			if err1 != nil || err2 != nil || d1 != d2 {
				t.Errorf("digest of the saved plan %s, of this build's %s (%v %v)", d1, d2, err1, err2)
			}
			if len(again.Steps) < 8 {
				t.Errorf("only %d steps: the fixture does not exercise the builder", len(again.Steps))
			}
		})
	}
}
