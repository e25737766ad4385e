package sandbox

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// TestSandboxDrills: the sandbox schedules a canary drill every minute and
// allows disruptive drills: every kind it offers (canary, failover,
// unplanned) passes against it, one after another, while its demo traffic
// runs (its consumers leave the old active before the unplanned drill's
// wipe), and afterwards the roles are where they began, steady, with no
// problem but what the demo traffic's pace explains.
func TestSandboxDrills(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	s := start(t, Options{Rate: 20, Mirror: true, MirrorListen: "127.0.0.1:0"})
	topo := s.Topology
	d, ok := topo.Drills.Named["canary-every-minute"]
	if !ok || d.Schedule != "* * * * *" || !topo.Drills.AllowDisruptive {
		t.Fatalf("sandbox drills: %+v", topo.Drills)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	// The mirror creates the demo topics on west first (the preflight
	// checks their parity).
	deadline := time.Now().Add(time.Minute)
	for {
		st, _ := inspect.CollectStatus(ctx, kfaketest.Session(t, topo))
		parity := len(st.Topics) > 0
		for _, tp := range st.Topics {
			parity = parity && tp.InParity
		}
		if parity && st.Mirror != nil && st.Mirror.Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sandbox mirror never reached parity: %+v", st.Problems)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// As drctl drill run does, each waits while the sandbox's scheduled
	// canary holds the drill lease (drills never overlap).
	wait := drill.Options{WaitBusy: 2 * time.Minute}
	canary := *d
	canary.Params.Rate = 50
	rec, err := drill.Run(ctx, kfaketest.Session(t, topo), &canary, wait)
	if err != nil || rec.Verdict != drill.Pass {
		t.Fatalf("canary in the sandbox: %v %+v", err, rec)
	}
	for _, kind := range []topology.DrillKind{topology.DrillFailover, topology.DrillUnplanned} {
		dd := topology.DefaultDrill(kind)
		dd.Params.Hold = 2 * time.Second
		o := wait
		o.Yes = true
		rec, err = drill.Run(ctx, kfaketest.Session(t, topo), dd, o)
		if err != nil || rec.Verdict != drill.Pass {
			t.Fatalf("%s drill in the sandbox: %v %+v", kind, err, rec)
		}
	}
	roles, err := inspect.CollectRoles(ctx, kfaketest.Session(t, topo))
	if err != nil || roles.Active != East || roles.Phase != "steady" || roles.Run != nil {
		t.Errorf("roles after the drills: %+v %v", roles, err)
	}
	// The mirror's /metrics carries the drill gauges, as drctl mirror run
	// does, up to the last drill.
	kfaketest.Wait(t, time.Minute, "the drill gauges of the unplanned drill on the sandbox's /metrics", func() (bool, string) {
		resp, err := http.Get("http://" + s.mirrorAddr + "/metrics")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(string(body), `drctl_drill_last_success_timestamp_seconds{drill="unplanned"`), "no such series yet"
	})
	// Steady after: the demo traffic runs on east again and the mirror
	// catches up.
	deadline = time.Now().Add(time.Minute)
	for {
		st, _ := inspect.CollectStatus(ctx, kfaketest.Session(t, topo))
		if st.Readiness.Level == inspect.Ready && s.Stats().Active == East && len(st.Problems) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sandbox is not steady after its drills: traffic on %q, readiness %+v, problems %q", s.Stats().Active, st.Readiness, st.Problems)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
