package sandbox

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/topology"
)

// TestSandboxDrills: the sandbox schedules a canary drill every minute and
// allows disruptive drills: a canary and a failover drill pass against it
// while its demo traffic runs, and the roles end where they began.
func TestSandboxDrills(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	s := start(t, Options{Rate: 20, Mirror: true})
	topo := s.Topology
	d, ok := topo.Drills.Named["canary-every-minute"]
	if !ok || d.Schedule != "* * * * *" || !topo.Drills.AllowDisruptive {
		t.Fatalf("sandbox drills: %+v", topo.Drills)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// The mirror creates the demo topics on west first (the preflight
	// checks their parity).
	deadline := time.Now().Add(time.Minute)
	for {
		st := inspect.CollectStatus(ctx, topo)
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
	canary := *d
	canary.Params.Rate = 50
	rec, err := runWhenFree(ctx, topo, &canary, drill.Options{})
	if err != nil || rec.Verdict != drill.Pass {
		t.Fatalf("canary in the sandbox: %v %+v", err, rec)
	}
	fo := topology.DefaultDrill(topology.DrillFailover)
	fo.Params.Hold = 2 * time.Second
	rec, err = runWhenFree(ctx, topo, fo, drill.Options{Yes: true})
	if err != nil || rec.Verdict != drill.Pass {
		t.Fatalf("failover drill in the sandbox: %v %+v", err, rec)
	}
	roles, err := inspect.CollectRoles(ctx, topo)
	if err != nil || roles.Active != East || roles.Phase != "steady" {
		t.Errorf("roles after the failover drill: %+v %v", roles, err)
	}
}

// runWhenFree runs d, waiting while the sandbox's scheduled canary holds
// the drill lease (drills never overlap).
func runWhenFree(ctx context.Context, topo *topology.Topology, d *topology.NamedDrill, o drill.Options) (*drill.Record, error) {
	for {
		rec, err := drill.Run(ctx, topo, d, o)
		if !errors.Is(err, drill.ErrBusy) || ctx.Err() != nil {
			return rec, err
		}
		time.Sleep(500 * time.Millisecond)
	}
}
