package topology

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const good = `name: payments
clusters:
  east:
    bootstrap: [kafka-east-1:9092, kafka-east-2:9092]
    sasl: {mechanism: SCRAM-SHA-512, username: drctl, password: "${EAST_PASSWORD}"}
  west:
    bootstrap: ["${WEST_HOST:-kafka-west-1}:9092"]
    version: 3.7.0
active: east
standby: west
mirror:
  topics: {include: ["orders", "payments\\..*"], exclude: ["payments\\.tmp"]}
  groups: {exclude: ["console-consumer-.*"]}
failover:
  drain_timeout: 2m
  fence: acl
  hooks: {after: ["./switch-dns.sh {{.Active}}"]}
`

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestParseGood(t *testing.T) {
	topo, err := Parse("drctl.yaml", []byte(good), env(map[string]string{"EAST_PASSWORD": "s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	east, west := topo.Clusters["east"], topo.Clusters["west"]
	if east.SASL.Password != "s3cret" || east.SASL.Mechanism != "SCRAM-SHA-512" {
		t.Errorf("east sasl = %+v", east.SASL)
	}
	if west.Bootstrap[0] != "kafka-west-1:9092" {
		t.Errorf("default not applied: %v", west.Bootstrap)
	}
	if east.Version != DefaultVersion || west.Version != "3.7.0" || east.Timeout != DefaultTimeout {
		t.Errorf("versions/timeouts: %s %s %s", east.Version, west.Version, east.Timeout)
	}
	if topo.Mirror.Delivery != ExactlyOnce || topo.Failover.DrainTimeout != 2*time.Minute || topo.Failover.Fence != FenceACL {
		t.Errorf("mirror/failover defaults: %+v %+v", topo.Mirror, topo.Failover)
	}
	if topo.Other("east") != "west" || topo.Active != "east" || topo.Standby != "west" {
		t.Errorf("roles: %s %s", topo.Active, topo.Standby)
	}
	for name, want := range map[string]bool{"orders": true, "orders2": false, "payments.eu": true, "payments.tmp": false, "xorders": false} {
		if got := topo.Mirror.Topics.Match(name); got != want {
			t.Errorf("topics.Match(%q) = %v, want %v", name, got, want)
		}
	}
	if !topo.Mirror.Groups.Match("billing") || topo.Mirror.Groups.Match("console-consumer-42") {
		t.Error("default group include .* with exclude not applied")
	}
	if v := topo.Mirror.Verify; v.Mode != VerifySample || v.Sample != DefaultVerifySample || v.Interval != DefaultVerifyInterval {
		t.Errorf("mirror.verify defaults: %+v", v)
	}
	for yaml, want := range map[string]MirrorVerify{
		"{mode: full}":               {Mode: VerifyFull, Sample: 1, Interval: DefaultVerifyInterval},
		"{mode: off}":                {Mode: VerifyOff, Sample: DefaultVerifySample, Interval: DefaultVerifyInterval},
		"{sample: 50, interval: 2s}": {Mode: VerifySample, Sample: 50, Interval: 2 * time.Second},
		"{mode: sample, sample: 7}":  {Mode: VerifySample, Sample: 7, Interval: DefaultVerifyInterval},
	} {
		v, err := Parse("drctl.yaml", []byte(strings.Replace(good, "  groups:", "  verify: "+yaml+"\n  groups:", 1)), env(map[string]string{"EAST_PASSWORD": "s3cret"}))
		if err != nil {
			t.Fatalf("verify: %s: %v", yaml, err)
		}
		if v.Mirror.Verify != want {
			t.Errorf("verify: %s = %+v, want %+v", yaml, v.Mirror.Verify, want)
		}
	}
	// The digest ignores expanded secrets: it hashes the file as written.
	other, _ := Parse("drctl.yaml", []byte(good), env(map[string]string{"EAST_PASSWORD": "other"}))
	if other.Digest != topo.Digest || len(topo.Digest) != 64 {
		t.Errorf("digest depends on secrets or is malformed: %s vs %s", topo.Digest, other.Digest)
	}
}

func TestParseErrors(t *testing.T) {
	vars := env(map[string]string{"EAST_PASSWORD": "s3cret"})
	cases := []struct {
		name     string
		edit     func(string) string
		line     int
		contains string
	}{
		{"unknown top-level key", func(s string) string { return s + "mirorr: {}\n" }, 18, `unknown key "mirorr" at the top level`},
		{"unknown nested key", func(s string) string {
			return strings.Replace(s, "    version: 3.7.0", "    verison: 3.7.0", 1) //nolint:misspell // the misspelled key is the input
		}, 8, `unknown key "verison" in clusters.west`}, //nolint:misspell // and the error names it
		{"bad regex", func(s string) string { return strings.Replace(s, `"orders", `, `"orders(", `, 1) }, 12, "bad regular expression"},
		{"unknown cluster in role", func(s string) string { return strings.Replace(s, "standby: west", "standby: north", 1) }, 10, `standby names unknown cluster "north"; use one of: east, west`},
		{"active == standby", func(s string) string { return strings.Replace(s, "standby: west", "standby: east", 1) }, 10, "active and standby are both"},
		{"unset variable", func(s string) string { return strings.Replace(s, "${EAST_PASSWORD}", "${NOPE_PASSWORD}", 1) }, 5, "environment variable NOPE_PASSWORD is not set"},
		{"wrong type", func(s string) string {
			return strings.Replace(s, "[kafka-east-1:9092, kafka-east-2:9092]", "kafka-east-1:9092", 1)
		}, 4, "wrong type"},
		{"empty bootstrap", func(s string) string { return strings.Replace(s, "[kafka-east-1:9092, kafka-east-2:9092]", "[]", 1) }, 4, "bootstrap is empty"},
		{"bad duration", func(s string) string { return strings.Replace(s, "2m", "2 minutes", 1) }, 15, "is not a duration"},
		{"bad delivery", func(s string) string {
			return strings.Replace(s, "  groups:", "  delivery: maybe-once\n  groups:", 1)
		}, 13, `mirror.delivery "maybe-once" is not known`},
		{"bad mechanism", func(s string) string { return strings.Replace(s, "SCRAM-SHA-512", "GSSAPI", 1) }, 5, "not supported"},
		{"old version", func(s string) string { return strings.Replace(s, "3.7.0", "2.8.0", 1) }, 8, "too old"},
		{"syntax", func(s string) string { return strings.Replace(s, "active: east", "active: [east", 1) }, 9, "not valid YAML"},
		{"unquoted env in flow mapping", func(s string) string { return strings.Replace(s, `"${EAST_PASSWORD}"`, "${EAST_PASSWORD}", 1) }, 5, "quote a value that holds ${VAR}"},
		{"three clusters", func(s string) string {
			return strings.Replace(s, "active: east", "  north:\n    bootstrap: [n:1]\nactive: east", 1)
		}, 2, "exactly two clusters"},
		{"bad port", func(s string) string { return strings.Replace(s, "kafka-east-2:9092", "kafka-east-2", 1) }, 4, "has no port"},
		{"bad verify mode", func(s string) string {
			return strings.Replace(s, "  groups:", "  verify: {mode: always}\n  groups:", 1)
		}, 13, `mirror.verify.mode "always" is not known; use full, sample (the default) or off`},
		{"verify sample of 1", func(s string) string {
			return strings.Replace(s, "  groups:", "  verify: {sample: 1}\n  groups:", 1)
		}, 13, "mirror.verify.sample 1: use 2 or more"},
		{"verify sample without sample mode", func(s string) string {
			return strings.Replace(s, "  groups:", "  verify: {mode: full, sample: 10}\n  groups:", 1)
		}, 13, "mirror.verify.sample is set but mode is full; remove sample, or set mode: sample"},
		{"verify interval too short", func(s string) string {
			return strings.Replace(s, "  groups:", "  verify: {interval: 1ms}\n  groups:", 1)
		}, 13, "mirror.verify.interval must be at least 100ms"},
		{"unknown verify key", func(s string) string {
			return strings.Replace(s, "  groups:", "  verify: {rate: 3}\n  groups:", 1)
		}, 13, `unknown key "rate" in mirror.verify`},
		{"missing topics", func(s string) string {
			return strings.Replace(s, `  topics: {include: ["orders", "payments\\..*"], exclude: ["payments\\.tmp"]}`+"\n", "", 1)
		}, 11, "mirror.topics.include is missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("topo.yaml", []byte(c.edit(good)), vars)
			if err == nil {
				t.Fatal("no error")
			}
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("not a positioned error: %T %v", err, err)
			}
			if c.line > 0 && te.Line != c.line {
				t.Errorf("line = %d, want %d (%v)", te.Line, c.line, err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "topo.yaml:") || !strings.Contains(msg, c.contains) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line starting with topo.yaml: and containing %q", msg, c.contains)
			}
			if strings.Contains(msg, "s3cret") {
				t.Errorf("secret leaked: %q", msg)
			}
		})
	}
}

func TestPasswordFile(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(good, `password: "${EAST_PASSWORD}"`, "password_file: "+pw, 1)
	topo, err := Parse("t.yaml", []byte(src), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if topo.Clusters["east"].SASL.Password != "from-file" {
		t.Errorf("password = %q", topo.Clusters["east"].SASL.Password)
	}
	both := strings.Replace(good, `password: "${EAST_PASSWORD}"`, "password: x, password_file: "+pw, 1)
	if _, err := Parse("t.yaml", []byte(both), env(nil)); err == nil || !strings.Contains(err.Error(), "keep one") {
		t.Errorf("both password and password_file: %v", err)
	}
}

func TestSaramaConfig(t *testing.T) {
	topo, err := Parse("t.yaml", []byte(good), env(map[string]string{"EAST_PASSWORD": "s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := topo.Clusters["east"].SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Net.SASL.Enable || cfg.Net.SASL.Mechanism != "SCRAM-SHA-512" || cfg.Net.SASL.SCRAMClientGeneratorFunc == nil {
		t.Errorf("sasl not configured: %+v", cfg.Net.SASL)
	}
	if cfg.Net.DialTimeout != DefaultTimeout || cfg.Version.String() != "3.6.0" {
		t.Errorf("timeout/version: %v %v", cfg.Net.DialTimeout, cfg.Version)
	}
	if r := topo.Clusters["east"].Redacted(); strings.Contains(r, "s3cret") || !strings.Contains(r, "user=drctl") {
		t.Errorf("Redacted = %q", r)
	}
}

func TestDiscover(t *testing.T) {
	t.Setenv("DRCTL_CONFIG", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	if got, _ := Discover("flag.yaml"); got != "flag.yaml" {
		t.Errorf("flag: %q", got)
	}
	if _, err := Discover(""); !errors.Is(err, ErrNoTopology) {
		t.Errorf("nothing: %v", err)
	}
	if err := os.WriteFile("drctl.yaml", []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := Discover(""); got != "drctl.yaml" {
		t.Errorf("cwd: %q", got)
	}
	t.Setenv("DRCTL_CONFIG", "/etc/x.yaml")
	if got, _ := Discover(""); got != "/etc/x.yaml" {
		t.Errorf("env: %q", got)
	}
}
