package topology

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestExpandedValuesNeverShown puts a ${VAR} whose value fails validation
// into each kind of field: the error names the line and shows the value as
// written (${VAR}), never what it expanded to.
func TestExpandedValuesNeverShown(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-dir-x7")
	cases := []struct {
		name  string
		value string // the variable's value; must not appear
		edit  func(string) string
		line  int
		want  string
	}{
		{"bootstrap entry without port", "secret-host-q1", func(s string) string {
			return strings.Replace(s, "kafka-east-2:9092", `"${V}"`, 1)
		}, 4, `bootstrap entry "${V}" has no port`},
		{"bootstrap entry with a bad port", "kafka-east-2:secret-port", func(s string) string {
			return strings.Replace(s, "kafka-east-2:9092", `"${V}"`, 1)
		}, 4, `bootstrap entry "${V}" has no valid port`},
		{"part of a bootstrap entry", "secret-host-q1 x", func(s string) string {
			return strings.Replace(s, "kafka-east-2:9092", `"${V}:9092"`, 1)
		}, 4, `bootstrap entry "${V}:9092" has a host name with characters`},
		{"short value", "q1", func(s string) string {
			return strings.Replace(s, "kafka-east-2:9092", `"${V}"`, 1)
		}, 4, `bootstrap entry "${V}" has no port`},
		{"name", "bad name!", func(s string) string { return strings.Replace(s, "name: payments", "name: ${V}", 1) }, 1, `name "${V}" may hold only`},
		{"role", "secret-cluster", func(s string) string { return strings.Replace(s, "standby: west", "standby: ${V}", 1) }, 10, `standby names unknown cluster "${V}"`},
		{"version", "secret-version", func(s string) string { return strings.Replace(s, "version: 3.7.0", "version: ${V}", 1) }, 8, `version "${V}" is not a Kafka version`},
		{"duration", "secret-duration", func(s string) string { return strings.Replace(s, "drain_timeout: 2m", "drain_timeout: ${V}", 1) }, 15, `"${V}" is not a duration`},
		{"fence", "secret-fence", func(s string) string { return strings.Replace(s, "fence: acl", "fence: ${V}", 1) }, 16, `failover.fence "${V}" is not known`},
		{"mechanism", "secret-mech", func(s string) string { return strings.Replace(s, "SCRAM-SHA-512", `"${V}"`, 1) }, 5, `sasl.mechanism "${V}" is not supported`},
		{"regular expression", "secret-re(", func(s string) string { return strings.Replace(s, `"orders", `, `"${V}", `, 1) }, 12, `bad regular expression "${V}": missing closing )`},
		{"principal", "secret-principal", func(s string) string {
			return strings.Replace(s, "fence: acl", "fence: acl\n  producer_principals: [\"${V}\"]", 1)
		}, 17, `failover.producer_principals: "${V}" is not a Kafka principal`},
		{"tls file", missing + "/ca.pem", func(s string) string {
			return strings.Replace(s, "    version: 3.7.0", "    version: 3.7.0\n    tls: {ca_file: \"${V}\"}", 1)
		}, 9, `tls.ca_file "${V}" cannot be read: no such file or directory`},
		{"password file", missing + "/pw", func(s string) string {
			return strings.Replace(s, `password: "${EAST_PASSWORD}"`, `password_file: "${V}"`, 1)
		}, 5, `sasl.password_file "${V}" cannot be read: no such file or directory`},
		{"wrong type, short", "maybe", func(s string) string {
			return strings.Replace(s, "    version: 3.7.0", "    version: 3.7.0\n    tls: {insecure_skip_verify: \"${V}\"}", 1)
		}, 9, "wrong type"},
		{"wrong type, long", "secret-skip-verify", func(s string) string {
			return strings.Replace(s, "    version: 3.7.0", "    version: 3.7.0\n    tls: {insecure_skip_verify: \"${V}\"}", 1)
		}, 9, "wrong type"},
		{"wrong type, list", "secret-host-q1:9092", func(s string) string {
			return strings.Replace(s, `["${WEST_HOST:-kafka-west-1}:9092"]`, `"${V}"`, 1)
		}, 7, "wrong type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vars := env(map[string]string{"EAST_PASSWORD": "s3cret-pw", "V": c.value})
			_, err := Parse("s.yaml", []byte(c.edit(good)), vars)
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("error %v: want an *Error", err)
			}
			msg := err.Error()
			if te.Line != c.line || !strings.Contains(msg, c.want) {
				t.Errorf("error %q: want line %d and %q", msg, c.line, c.want)
			}
			for _, secret := range []string{c.value, "s3cret-pw"} {
				if strings.Contains(msg, secret) {
					t.Errorf("error %q shows the expanded value %q", msg, secret)
				}
			}
		})
	}
}

// TestScrubLeavesLiterals: a quoted value the file writes out itself is
// shown as it is, even when a variable happens to hold the same text.
func TestScrubLeavesLiterals(t *testing.T) {
	doc := strings.Replace(good, "fence: acl", "fence: acl\n  producer_principals: [x]", 1)
	_, err := Parse("s.yaml", []byte(doc), env(map[string]string{"EAST_PASSWORD": "x"}))
	if err == nil || !strings.Contains(err.Error(), `failover.producer_principals: "x" is not a Kafka principal`) {
		t.Errorf("error %v: want the literal x shown", err)
	}
}

// TestExpandedSecretsNeverInWarnings: warnings follow the same rule.
func TestExpandedSecretsNeverInWarnings(t *testing.T) {
	doc := strings.Replace(good, `["${WEST_HOST:-kafka-west-1}:9092"]`, `["${EAST_BROKERS}"]`, 1)
	doc = strings.Replace(doc, "[kafka-east-1:9092, kafka-east-2:9092]", `["${EAST_BROKERS}"]`, 1)
	topo, err := Parse("s.yaml", []byte(doc), env(map[string]string{"EAST_PASSWORD": "pw", "EAST_BROKERS": "secret-broker-7:9092"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.Warnings) != 1 || strings.Contains(topo.Warnings[0].Msg, "secret-broker-7") || !strings.Contains(topo.Warnings[0].Msg, "same bootstrap list") {
		t.Errorf("warnings %v: want one about the same bootstrap list, without the expanded address", topo.Warnings)
	}
}
