package failover

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// A request that names no valid failover is refused before anything is
// read from the clusters, with the fix in the message.
func TestPlanFailoverRefusesBadRequests(t *testing.T) {
	topo := kfaketest.NewPair(t, kfaketest.Options{}).Topology
	for _, tc := range []struct {
		req  FailoverRequest
		want string
	}{
		{FailoverRequest{To: "west", Kind: rolestate.RunFailback}, "failback is a planned failover to the home active east"},
		{FailoverRequest{To: "east", Kind: rolestate.RunFailback, Mode: Unplanned}, "failback is a planned failover"},
		{FailoverRequest{To: "west", Mode: "sideways"}, `mode "sideways" is not known`},
		{FailoverRequest{To: "west", ForceUnplanned: true}, "add --unplanned"},
		{FailoverRequest{To: "west", Kind: rolestate.RunReseed}, "failover or a failback"},
		{FailoverRequest{To: "north"}, `no cluster "north"`},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		p, err := PlanFailover(ctx, kfaketest.Session(t, topo), tc.req)
		cancel()
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.want) || p != nil {
			t.Errorf("%+v: plan %v, err %v; want a refusal containing %q", tc.req, p != nil, err, tc.want)
		}
	}
}
