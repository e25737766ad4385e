package drill

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// TestCanaryFencePermission: with fence: acl and a drctl principal that may
// do everything a canary needs but not Alter the cluster (create or delete
// ACLs), the canary's failover preflight is not ready and says which
// permission is missing and how to grant it; the drill fails.
func TestCanaryFencePermission(t *testing.T) {
	const user, pass = "drctl-limited", "limited-secret"
	var acls []kfake.ACL
	allow := func(r kmsg.ACLResourceType, name string, op kmsg.ACLOperation) {
		acls = append(acls, kfake.ACL{Resource: r, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true})
	}
	for _, r := range []kmsg.ACLResourceType{kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeTransactionalId} {
		allow(r, "*", kmsg.ACLOperationAll)
	}
	for _, op := range []kmsg.ACLOperation{kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationCreate, kmsg.ACLOperationIdempotentWrite, kmsg.ACLOperationClusterAction} {
		allow(kmsg.ACLResourceTypeCluster, "kafka-cluster", op)
	}
	p := kfaketest.NewPair(t, kfaketest.Options{SASL: true, Mirror: testMirror,
		ClusterOpts: []kfake.Opt{kfake.EnableACLs(), kfake.User("SCRAM-SHA-512", user, pass, acls...)},
		Extra:       "failover: {fence: acl, drain_timeout: 30s, quiet_period: 300ms}\n"})
	startMirror(t, p.Topology) // the mirror runs as the super user
	raw, err := os.ReadFile(p.Path)
	if err != nil {
		t.Fatal(err)
	}
	limited := strings.ReplaceAll(string(raw), "username: "+kfaketest.User+", password: "+kfaketest.Password, "username: "+user+", password: "+pass)
	path := filepath.Join(t.TempDir(), "limited.yaml")
	if err := os.WriteFile(path, []byte(limited), 0o600); err != nil {
		t.Fatal(err)
	}
	topo, err := topology.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := runDrill(t, topo, smallCanary(), t.TempDir())
	if rec.Verdict == Pass || rec.Preflight == nil || rec.Preflight.Ready {
		t.Fatalf("verdict %s, preflight %+v: the missing Alter permission went unnoticed", rec.Verdict, rec.Preflight)
	}
	found := false
	for _, pr := range rec.Preflight.Problems {
		if strings.Contains(pr, "may not Alter the cluster east") && strings.Contains(pr, "grant it Alter") {
			found = true
		}
	}
	if !found || !hasReason(rec, "Alter") {
		t.Errorf("preflight problems %q, reasons %q: neither names the missing Alter permission", rec.Preflight.Problems, rec.Reasons)
	}
	// The drill's preflight says the verdict status and the TUI show.
	if v := rec.Preflight.Readiness; v == nil || v.Level != inspect.NotReady {
		t.Errorf("preflight readiness %+v, want %s (the active may not be fenced)", v, inspect.NotReady)
	}
	// The canary itself worked: only the fence permission is missing.
	if len(rec.Preflight.Problems) != 2 {
		t.Errorf("preflight problems %q: want exactly the missing Alter on east and west", rec.Preflight.Problems)
	}
}
