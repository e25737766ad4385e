package failover

import (
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/runrecord"
)

// TestPreviewWipe: the plan of a failover says, before anyone types a
// name, what its wipe would delete on the old active now: every selected
// topic with its partitions and records, and the groups; with the old
// active down it says that is unknown, never an empty list. A fence: none
// plan names no principals.
func TestPreviewWipe(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: ordersBillingYAML, Extra: fenceNoneYAML})
	topo := p.Topology
	seedOrders(t, topo) // orders: 3 partitions, 30 records; group billing
	startMirror(t, topo, "east", "west")
	waitMirrored(t, topo, "east", "west")
	plan := planTo(t, topo, "west")
	if text := plan.Text(); strings.Contains(text, "principals") {
		t.Errorf("a fence: none plan names principals:\n%s", text)
	}
	pv := PreviewWipe(kfaketest.Ctx(t, 20*time.Second), kfaketest.Session(t, topo), plan)
	if pv == nil || pv.Cluster != "east" || pv.Step != stepIndex(t, plan, runrecord.StepWipe)+1 || pv.Error != "" {
		t.Fatalf("preview %+v; want east's, at the wipe step", pv)
	}
	var orders *WipeTopic
	for i := range pv.Topics {
		if pv.Topics[i].Name == "orders" {
			orders = &pv.Topics[i]
		}
	}
	if orders == nil || orders.Partitions != 3 || orders.Records != 30 {
		t.Errorf("topics %+v; want orders with 3 partitions and 30 records", pv.Topics)
	}
	if !strings.Contains(strings.Join(pv.Groups, ","), "billing") {
		t.Errorf("groups %v; want billing", pv.Groups)
	}
	lines := strings.Join(pv.Lines(), "\n")
	for _, want := range []string{"deletes on east", "topic orders: 3 partition(s), up to 30 record(s)", "groups: ", "billing"} {
		if !strings.Contains(lines, want) {
			t.Errorf("the preview says:\n%s\nwant %q", lines, want)
		}
	}

	p.Stop("east")
	pv = PreviewWipe(kfaketest.Ctx(t, 20*time.Second), kfaketest.Session(t, topo), plan)
	if pv == nil || pv.Error == "" || len(pv.Topics) != 0 || !strings.Contains(strings.Join(pv.Lines(), "\n"), "unknown now, east did not answer") {
		t.Errorf("preview with east down: %+v; want it unknown", pv)
	}
}
