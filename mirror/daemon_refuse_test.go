package mirror

import (
	"strings"
	"testing"

	"github.com/drctl/drctl/internal/rolestate"
)

// TestDaemonRefusesUntrustedRoles: the daemon acts on no link while the
// role state is lost, or once it went below an epoch the daemon saw (state
// deleted and the home roles back at epoch 0): a link the wrong way round
// would copy onto, and sync groups onto, the live active.
func TestDaemonRefusesUntrustedRoles(t *testing.T) {
	d := &Daemon{}
	view := func(epoch int64, active string) rolestate.View {
		return rolestate.View{Current: rolestate.State{Topology: "t", Epoch: epoch, Active: active, Phase: rolestate.PhaseSteady}}
	}
	if why := d.refuse(view(0, "east")); why != "" {
		t.Fatalf("a first state at epoch 0 was refused: %s", why)
	}
	if why := d.refuse(view(6, "west")); why != "" {
		t.Fatalf("a failover's epoch 6 was refused: %s", why)
	}
	if why := d.refuse(view(0, "east")); !strings.Contains(why, "went back from epoch 6 to 0") || !strings.Contains(why, "drctl roles restore") {
		t.Errorf("the state back at epoch 0 after 6: %q; want a refusal naming the fix", why)
	}
	lost := view(0, "east")
	lost.Lost = "the role state is missing on both clusters"
	if why := (&Daemon{}).refuse(lost); why != lost.Lost {
		t.Errorf("lost roles: %q; want the refusal the view gives", why)
	}
	if why := d.refuse(view(7, "west")); why != "" {
		t.Errorf("a restored state above the old epochs was refused: %s", why)
	}
}
