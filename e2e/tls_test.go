//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/plans"
)

// The TLS tests use the listeners kafka.sh opens beside SASL_PLAINTEXT on
// each cluster (see kafka.sh's header): SASL_SSL (TLS + SCRAM-SHA-512),
// SSL with client certificates required (mTLS, the principal is the
// certificate's common name), and an SSL listener whose certificate
// expired. The CA and certificates come from e2e/tlscerts.

// tlsListeners is what `kafka.sh env` exports about the TLS listeners.
type tlsListeners struct {
	dir                    string // the CA and certificates
	east, west             string // SASL_SSL
	eastMTLS, westMTLS     string // SSL, client certificate required
	eastExpired, westExpir string // SSL, expired broker certificate
}

func tlsEnv(t testing.TB) tlsListeners {
	t.Helper()
	l := tlsListeners{
		dir:  os.Getenv("DRCTL_E2E_TLS_DIR"),
		east: os.Getenv("DRCTL_E2E_EAST_TLS"), west: os.Getenv("DRCTL_E2E_WEST_TLS"),
		eastMTLS: os.Getenv("DRCTL_E2E_EAST_MTLS"), westMTLS: os.Getenv("DRCTL_E2E_WEST_MTLS"),
		eastExpired: os.Getenv("DRCTL_E2E_EAST_TLS_EXPIRED"), westExpir: os.Getenv("DRCTL_E2E_WEST_TLS_EXPIRED"),
	}
	if l.dir == "" || l.east == "" || l.west == "" || l.eastMTLS == "" || l.westMTLS == "" || l.eastExpired == "" {
		t.Fatal(`the TLS listeners are not in the environment: restart the clusters with this kafka.sh (e2e/kafka.sh restart all) and eval "$(e2e/kafka.sh env)"`)
	}
	return l
}

func (l tlsListeners) file(name string) string { return filepath.Join(l.dir, name) }

// tlsMode is how drctl connects to both clusters in a TLS test.
type tlsMode struct {
	name string
	// cluster renders one cluster's connection lines (bootstrap, sasl, tls).
	cluster func(l tlsListeners, cluster string) string
}

var (
	// tlsSCRAM: SASL_SSL, the brokers' certificate verified against the
	// test CA (hostname verification on: the certificate names 127.0.0.1),
	// SCRAM-SHA-512 as drctl.
	tlsSCRAM = tlsMode{"sasl-ssl", func(l tlsListeners, c string) string {
		addr := map[string]string{"east": l.east, "west": l.west}[c]
		return fmt.Sprintf("    bootstrap: [%s]\n    timeout: 5s\n    sasl: {mechanism: SCRAM-SHA-512, username: %s, password: \"${%s}\"}\n    tls: {ca_file: %s}\n",
			addr, env.User, passwordVar, l.file("ca.pem"))
	}}
	// tlsMutual: SSL with drctl's client certificate (CN=drctl, the
	// principal User:drctl); no password at all.
	tlsMutual = tlsMode{"mtls", func(l tlsListeners, c string) string {
		addr := map[string]string{"east": l.eastMTLS, "west": l.westMTLS}[c]
		return fmt.Sprintf("    bootstrap: [%s]\n    timeout: 5s\n    tls: {ca_file: %s, cert_file: %s, key_file: %s}\n",
			addr, l.file("ca.pem"), l.file("drctl.pem"), l.file("drctl-key.pem"))
	}}
)

// head renders the clusters and home roles of a topology over mode.
func (m tlsMode) head(l tlsListeners) func(name string) string {
	return func(name string) string {
		return "name: " + name + "\nclusters:\n  east:\n" + m.cluster(l, "east") + "  west:\n" + m.cluster(l, "west") +
			"active: east\nstandby: west\n"
	}
}

// TestTLSRoundTripRealKafka runs the mirror, status, a planned failover
// and a failback over TLS + SCRAM-SHA-512 and over mutual TLS, every
// connection drctl makes (the mirror daemon, the failover's steps, the
// test's own producers and readers) going through the TLS listeners with
// hostname verification on. After each move, the new standby holds
// exactly the new active's records, record by record.
func TestTLSRoundTripRealKafka(t *testing.T) {
	l := tlsEnv(t)
	for _, mode := range []tlsMode{tlsSCRAM, tlsMutual} {
		t.Run(mode.name, func(t *testing.T) { tlsRoundTrip(t, l, mode) })
	}
}

func tlsRoundTrip(t *testing.T, l tlsListeners, mode tlsMode) {
	clock := newFoClock()
	ft := newFoTopoOver(t, "tls-"+mode.name, mode.head(l), "2s", `{fence: acl, producer_principals: ["User:app"], drain_timeout: 2m, quiet_period: 1s}`)
	for _, c := range env.clusterNames {
		if cl := ft.Topo.Clusters[c]; cl.TLS == nil || cl.TLS.InsecureSkipVerify || cl.TLS.CAFile == "" {
			t.Fatalf("cluster %s is not verified TLS: %s", c, cl.Redacted())
		}
	}
	orders := ft.topic("orders")
	createTopic(t, "east", orders, 3, nil)
	eastCl, westCl := ft.dial(t, "east"), ft.dial(t, "west") // over TLS
	eastID, err := kafkaconn.ClusterID(eastCl)
	if err != nil {
		t.Fatal(err)
	}
	westID, err := kafkaconn.ClusterID(westCl)
	if err != nil {
		t.Fatal(err)
	}
	produce := func(cluster string, from, n int) {
		t.Helper()
		p := ft.mirrorTopo().producer(t, cluster, "") // over TLS
		for i := from; i < from+n; i++ {
			msg := &sarama.ProducerMessage{Topic: orders, Partition: int32(i % 3), Key: sarama.StringEncoder("k" + strconv.Itoa(i)),
				Value: sarama.StringEncoder(fmt.Sprintf("%s-order-%d", cluster, i)), Headers: []sarama.RecordHeader{{Key: []byte("via"), Value: []byte(mode.name)}}}
			if _, _, err := p.SendMessage(msg); err != nil {
				t.Fatalf("produce to %s over %s: %v", cluster, mode.name, err)
			}
		}
	}
	same := func(from, to sarama.Client, fromID, what string, want int) {
		t.Helper()
		kfaketest.WaitFor(t, time.Minute, what, func() error {
			n, err := sameTopic(from, to, orders, fromID)
			if err == nil && n != want {
				err = fmt.Errorf("%d records, want %d", n, want)
			}
			if err == nil {
				t.Logf("%s: %d records, record by record", what, n)
			}
			return err
		})
	}

	produce("east", 0, 300)
	startMirror(t, ft.mirrorTopo(), "mirror-"+mode.name, "--session-timeout", "6s")
	ft.waitLinkCaught(t, "east", "west", 2*time.Minute)
	same(eastCl, westCl, eastID, "west holds east's records (mirror over "+mode.name+")", 300)
	clock.lap("mirror east->west over " + mode.name)

	st := runDrctl(t, ft.env(), "-c", ft.Path, "-o", "json", "status")
	var sj statusJSON
	if st.code != 0 || json.Unmarshal([]byte(st.stdout), &sj) != nil {
		t.Fatalf("status over %s: exit %d\n%s\n%s", mode.name, st.code, st.stdout, st.stderr)
	}
	if sj.Roles.Active != "east" || len(sj.Clusters) != 2 {
		t.Errorf("status over %s: roles %+v, clusters %+v", mode.name, sj.Roles, sj.Clusters)
	}
	for _, c := range sj.Clusters {
		if !c.Reachable || c.ClusterID == "" {
			t.Errorf("status over %s: %+v, want reachable with an id", mode.name, c)
		}
	}
	clock.lap("status")

	fo := ft.run(t, 4*time.Minute, nil, "failover", "--to", "west", "--yes")
	if fo.Code != 0 || fo.outcome().Outcome != plans.OutcomeSucceeded {
		t.Fatalf("failover over %s: exit %d, outcome %q: %s", mode.name, fo.Code, fo.outcome().Outcome, fo.outcome().Error)
	}
	if r := foRoles(t, ft); r.Active != "west" || r.Phase != "steady" {
		t.Fatalf("roles after the failover: %+v", r)
	}
	clock.lap("failover --to west")
	produce("west", 300, 120)
	ft.waitLinkCaught(t, "west", "east", 2*time.Minute)
	same(westCl, eastCl, westID, "east re-seeded with west's records (over "+mode.name+")", 420)
	clock.lap("traffic on west, east re-seeded")

	// The failback's preflight wants a mirror process on west->east: the
	// daemon starts the steady link a poll after the reseed finished.
	kfaketest.WaitFor(t, time.Minute, "a mirror process runs west->east", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if ls := linkstate.Describe(ctx, session(t, ft.Topo), ft.Topo.Link("west", "east")); !ls.Running {
			return fmt.Errorf("%+v", ls)
		}
		return nil
	})
	fb := ft.run(t, 4*time.Minute, nil, "failback", "--yes")
	if fb.Code != 0 || fb.outcome().Outcome != plans.OutcomeSucceeded {
		t.Fatalf("failback over %s: exit %d, outcome %q: %s", mode.name, fb.Code, fb.outcome().Outcome, fb.outcome().Error)
	}
	if r := foRoles(t, ft); r.Active != "east" || r.Phase != "steady" || r.Epoch < 4 {
		t.Fatalf("roles after the failback: %+v", r)
	}
	clock.lap("failback")
	produce("east", 420, 60)
	ft.waitLinkCaught(t, "east", "west", 2*time.Minute)
	same(eastCl, westCl, eastID, "west re-seeded with east's records (over "+mode.name+")", 480)
	clock.lap("traffic on east, west re-seeded")
	t.Logf("timings over %s:\n%s\n  failover %v, failback %v", mode.name, clock.report(), fo.Took.Round(time.Millisecond), fb.Took.Round(time.Millisecond))
}

// TestTLSErrorsRealKafka: a wrong CA, an expired broker certificate, an
// expired client certificate, a client certificate from a CA the brokers
// do not trust, no client certificate where one is required, and a server
// name the certificate does not hold: `validate --online`, `status` and
// `failover` each exit 3 with a message that names the cause and the fix,
// print no secret, and change nothing on either cluster.
func TestTLSErrorsRealKafka(t *testing.T) {
	l := tlsEnv(t)
	// The topology's good form (east and west over SASL_SSL): a role state
	// and a topic exist, so that "nothing changed" has something to keep.
	good := newFoTopoOver(t, "tls-err", tlsSCRAM.head(l), "10m", `{fence: acl, producer_principals: ["User:app"]}`)
	createTopic(t, "east", good.topic("orders"), 2, nil)
	if r := runDrctl(t, good.env(), "-c", good.Path, "-o", "json", "status"); r.code != 0 {
		t.Fatalf("status over good TLS: exit %d: %s", r.code, r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before, err := inspect.CollectRoles(ctx, session(t, good.Topo))
	if err != nil {
		t.Fatal(err)
	}
	aclsBefore := map[string]map[foACL]bool{"east": good.acls(t, "east"), "west": good.acls(t, "west")}
	topicsBefore := map[string][]string{"east": tlsTopics(t, "east", good.Name), "west": tlsTopics(t, "west", good.Name)}

	sasl := fmt.Sprintf("    sasl: {mechanism: SCRAM-SHA-512, username: %s, password: \"${%s}\"}\n", env.User, passwordVar)
	cases := []struct {
		name string
		east string // east's connection lines; west stays good
		want []string
	}{
		{"wrong CA", fmt.Sprintf("    bootstrap: [%s]\n%s    tls: {ca_file: %s}\n", l.east, sasl, l.file("other-ca.pem")),
			[]string{"certificate signed by unknown authority", "point tls.ca_file at the CA that issued the brokers' certificates", l.file("other-ca.pem")}},
		{"expired broker certificate", fmt.Sprintf("    bootstrap: [%s]\n    tls: {ca_file: %s, cert_file: %s, key_file: %s}\n", l.eastExpired, l.file("ca.pem"), l.file("drctl.pem"), l.file("drctl-key.pem")),
			[]string{"certificate has expired", "renew the listener's certificate"}},
		{"expired client certificate", fmt.Sprintf("    bootstrap: [%s]\n    tls: {ca_file: %s, cert_file: %s, key_file: %s}\n", l.eastMTLS, l.file("ca.pem"), l.file("drctl-expired.pem"), l.file("drctl-expired-key.pem")),
			[]string{"refused drctl's client certificate", l.file("drctl-expired.pem") + " expired on", "issue a new one"}},
		{"client certificate from another CA", fmt.Sprintf("    bootstrap: [%s]\n    tls: {ca_file: %s, cert_file: %s, key_file: %s}\n", l.eastMTLS, l.file("ca.pem"), l.file("other-drctl.pem"), l.file("other-drctl-key.pem")),
			[]string{"refused drctl's client certificate", "issued by a CA in the listener's trust store"}},
		{"no client certificate", fmt.Sprintf("    bootstrap: [%s]\n    tls: {ca_file: %s}\n", l.eastMTLS, l.file("ca.pem")),
			[]string{"requires a client certificate", "set tls.cert_file and tls.key_file"}},
		{"server name not in the certificate", fmt.Sprintf("    bootstrap: [%s]\n%s    tls: {ca_file: %s, server_name: kafka.example.com}\n", l.east, sasl, l.file("ca.pem")),
			[]string{"not kafka.example.com", "set tls.server_name to a name it holds"}},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			yaml := "name: " + good.Name + "\nclusters:\n  east:\n    timeout: 5s\n" + c.east + "  west:\n" + tlsSCRAM.cluster(l, "west") +
				"active: east\nstandby: west\nmirror:\n  topics: {include: [" + strconv.Quote(good.topic(".*")) + "]}\nfailover: {fence: acl, producer_principals: [\"User:app\"]}\n"
			path := filepath.Join(t.TempDir(), "drctl.yaml")
			if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"validate", "--online"}, {"status"}, {"failover", "--to", "west", "--yes"}} {
				r := runDrctl(t, good.env(), append([]string{"-c", path}, args...)...)
				all := r.stdout + r.stderr
				if r.code != 3 {
					t.Errorf("%s: exit %d, want 3 (unreachable)\n%s", args[0], r.code, all)
				}
				for _, w := range c.want {
					if !strings.Contains(all, w) {
						t.Errorf("%s: output does not say %q:\n%s", args[0], w, all)
					}
				}
				if !strings.Contains(all, "cluster east") {
					t.Errorf("%s: the cluster is not named:\n%s", args[0], all)
				}
				if strings.Contains(all, env.Password) || strings.Contains(all, "PRIVATE KEY") {
					t.Errorf("%s: a secret reached the output", args[0])
				}
			}
		})
	}

	after, err := inspect.CollectRoles(ctx, session(t, good.Topo))
	if err != nil {
		t.Fatal(err)
	}
	if after.Epoch != before.Epoch || after.Active != before.Active || after.Phase != before.Phase || after.Run != nil {
		t.Errorf("the roles changed: before %+v, after %+v", before, after)
	}
	for _, c := range env.clusterNames {
		if d := diffACLs(good.acls(t, c), aclsBefore[c]); d != "" {
			t.Errorf("%s's ACLs changed: %s", c, d)
		}
		if got := tlsTopics(t, c, good.Name); strings.Join(got, ",") != strings.Join(topicsBefore[c], ",") {
			t.Errorf("%s's topics of the topology changed: before %v, after %v", c, topicsBefore[c], got)
		}
	}
}

// tlsTopics lists the topics on cluster whose name holds the topology's
// name (its own and drctl's internal ones), sorted.
func tlsTopics(t testing.TB, cluster, name string) []string {
	t.Helper()
	c := newClient(t, cluster, adminConfig(t))
	admin, err := sarama.NewClusterAdminFromClient(c)
	if err != nil {
		t.Fatal(err)
	}
	all, err := admin.ListTopics()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for tp := range all {
		if strings.Contains(tp, name) {
			out = append(out, tp)
		}
	}
	sort.Strings(out)
	return out
}
