package aclfence

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// fencePair is two kfake clusters with an authorizer and a topology that
// fences t0..t3 with ACLs.
func fencePair(t *testing.T) (*kfaketest.Pair, *topology.Topology) {
	t.Helper()
	p := kfaketest.NewPair(t, kfaketest.Options{
		SASL:        true,
		ClusterOpts: []kfake.Opt{kfake.EnableACLs()},
		Mirror:      "  topics: {include: [\"t\\\\d+\"]}",
		Extra:       "failover: {fence: acl, producer_principals: [\"User:app\"]}\n",
	})
	for i := range 4 {
		kfaketest.CreateTopic(t, p.Topology, "east", fmt.Sprintf("t%d", i), 1, nil)
	}
	return p, p.Topology
}

// TestFenceVerifyBacksOff: the fence waits for its ACLs to be listed, and a
// broker busy with other metadata (a standby creating thousands of
// partitions) lists them seconds late. Each look lists every DENY WRITE ACL
// of the cluster, so the looks back off (100 ms doubling to 1 s): looking
// every 100 ms kept such a broker's request handlers a third of their time
// listing ACLs (bench/results/diary.md).
func TestFenceVerifyBacksOff(t *testing.T) {
	p, topo := fencePair(t)
	const hide = 1500 * time.Millisecond
	hidden := kfaketest.HideACLs(p.East, hide)
	began := time.Now()
	rec, err := Fence(kfaketest.Ctx(t, 30*time.Second), kfaketest.Dial(t, topo, "east"), topo, "east")
	if err != nil {
		t.Fatalf("fence: %v", err)
	}
	if len(rec.Added) != 4 {
		t.Errorf("the fence added %d ACLs, want 4", len(rec.Added))
	}
	if took := time.Since(began); took < hide {
		t.Errorf("the fence returned after %v, before its ACLs were listed (%v)", took, hide)
	}
	// 100, 200, 400, 800 ms (±20%): 4-6 looks within 1.5 s; every 100 ms
	// would be 15.
	if n := hidden(); n < 2 || n > 7 {
		t.Errorf("%d looks while the ACLs were not listed, want 2-7 (backing off from 100 ms)", n)
	}
}

// TestFenceVerifyReportsTheListingError: a listing that fails after looks
// that found ACLs missing is reported as the failure it is, not as ACLs
// that never appeared.
func TestFenceVerifyReportsTheListingError(t *testing.T) {
	p, topo := fencePair(t)
	var created atomic.Bool
	p.East.ControlKey(int16(kmsg.CreateACLs), func(kmsg.Request) (kmsg.Response, error, bool) {
		created.Store(true)
		return nil, nil, false
	})
	looks := 0
	p.East.ControlKey(int16(kmsg.DescribeACLs), func(r kmsg.Request) (kmsg.Response, error, bool) {
		p.East.KeepControl()
		if !created.Load() {
			return nil, nil, false // the fence's own look before it adds
		}
		resp := r.(*kmsg.DescribeACLsRequest).ResponseKind().(*kmsg.DescribeACLsResponse)
		resp.Version = r.GetVersion()
		if looks++; looks >= 3 {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		}
		return resp, nil, true // nothing listed, then the failure
	})
	_, err := Fence(kfaketest.Ctx(t, 30*time.Second), kfaketest.Dial(t, topo, "east"), topo, "east")
	if err == nil || !strings.Contains(err.Error(), "fence east: verify:") || strings.Contains(err.Error(), "is not there") ||
		!strings.Contains(err.Error(), "authoriz") {
		t.Errorf("fence: %v, want the listing's authorization error", err)
	}
	if errors.Is(err, ErrNotShown) {
		t.Errorf("fence: %v is ErrNotShown: a refused listing is no ACL shown late", err)
	}
}
