package topology

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/drctl/drctl/internal/testkit/fuzzseed"
)

// fuzzSecret is what every ${VAR} expands to in FuzzParse (but ${UNSET...}).
const fuzzSecret = "s3cr3t-fuzz-value"

func fuzzLookup(name string) (string, bool) {
	if strings.HasPrefix(name, "UNSET") {
		return "", false
	}
	return fuzzSecret, true
}

// FuzzParse: no input panics or takes unbounded memory; an input that
// fails gets one *Error line naming the file, which never shows what a
// ${VAR} expanded to; an input that loads is a consistent topology.
func FuzzParse(f *testing.F) {
	fuzzseed.Add(f,
		[]byte(good),
		[]byte(strings.Replace(good, `["${WEST_HOST:-kafka-west-1}:9092"]`, "\n      - kafka-west-1:9092\n      - \"[::1]:9093\"", 1)),
		[]byte(strings.Replace(good, `password: "${EAST_PASSWORD}"`, "password_file: ${UNSET_PW:-/nonexistent}", 1)),
		[]byte(strings.Replace(good, "kafka-east-2:9092", `"${HOST}"`, 1)),
		[]byte(strings.Replace(good, "version: 3.7.0", "version: 3.7.0\n    tls: {ca_file: /nonexistent, insecure_skip_verify: true}\n    timeout: 3s", 1)),
		[]byte("name: t\nclusters:\n  east: &c {bootstrap: [\"k:1\"]}\n  west: *c\nactive: east\nstandby: west\nmirror: {topics: {include: [\".*\"]}, delivery: at-least-once}\nfailover: {fence: none, producer_principals: [\"User:app\"]}\n"),
		[]byte(laughs(5, "")+good),
		[]byte("x: "+strings.Repeat("[", 200)),
		[]byte("name: [\n"),
		[]byte("- a\n- b\n"),
		[]byte("name: \"${X\"\n"),
		[]byte(""),
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		topo, err := Parse("f.yaml", data, fuzzLookup)
		if err != nil {
			if _, ok := errors.AsType[*Error](err); !ok {
				t.Fatalf("error %T %v is not an *Error", err, err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "f.yaml") {
				t.Fatalf("error %q does not name the file", msg)
			}
			if strings.Contains(msg, fuzzSecret) && !bytes.Contains(data, []byte(fuzzSecret)) {
				t.Fatalf("error %q shows an expanded value", msg)
			}
			return
		}
		if len(topo.Clusters) != 2 || topo.Active == topo.Standby || topo.Clusters[topo.Active] == nil || topo.Clusters[topo.Standby] == nil {
			t.Fatalf("inconsistent roles: %v %s %s", topo.ClusterNames(), topo.Active, topo.Standby)
		}
		for _, c := range topo.Clusters {
			for _, b := range c.Bootstrap {
				if p := addressProblem(b); p != "" {
					t.Fatalf("loaded bootstrap entry %q %s", b, p)
				}
			}
			if c.SASL != nil && c.SASL.Password == "" {
				t.Fatalf("cluster %s: sasl without a password", c.Name)
			}
		}
		for _, w := range topo.Warnings {
			if strings.Contains(w.String(), fuzzSecret) && !bytes.Contains(data, []byte(fuzzSecret)) {
				t.Fatalf("warning %q shows an expanded value", w)
			}
		}
		if len(topo.Digest) != 64 || topo.Failover.DrainTimeout <= 0 || topo.Mirror.GroupSyncInterval <= 0 {
			t.Fatalf("defaults not applied: %+v", topo)
		}
	})
}
