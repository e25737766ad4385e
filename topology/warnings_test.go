package topology

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestSharedBootstrapWarning(t *testing.T) {
	withWest := func(list string) string {
		return strings.Replace(good, `["${WEST_HOST:-kafka-west-1}:9092"]`, list, 1)
	}
	cases := []struct {
		name, doc string
		want      string // "" means no warning
	}{
		{"distinct clusters", good, ""},
		{"identical lists", withWest("[kafka-east-1:9092, kafka-east-2:9092]"), "clusters east and west have the same bootstrap list: that is one cluster under two names; point each cluster at its own brokers"},
		{"same brokers in another order and spelling", withWest("[KAFKA-EAST-2:9092, kafka-east-1.:09092]"), "have the same bootstrap list"},
		{"one broker shared", withWest("[kafka-east-2:9092, kafka-west-1:9092]"), `clusters east and west share the bootstrap address "kafka-east-2:9092": that is one cluster under two names`},
		{"same host, other port", withWest("[kafka-east-1:9093]"), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topo, err := Parse("w.yaml", []byte(c.doc), env(map[string]string{"EAST_PASSWORD": "s3cret"}))
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" {
				if len(topo.Warnings) != 0 {
					t.Errorf("warnings %v, want none", topo.Warnings)
				}
				return
			}
			if len(topo.Warnings) != 1 {
				t.Fatalf("warnings %v, want one", topo.Warnings)
			}
			w := topo.Warnings[0]
			if w.Rule != RuleDistinctClusters || w.Line != 7 || !strings.HasPrefix(w.String(), "w.yaml:7: ") || !strings.Contains(w.Msg, c.want) {
				t.Errorf("warning %+v: want rule %q at w.yaml:7 containing %q", w, RuleDistinctClusters, c.want)
			}
		})
	}
}

func TestSecretFileModeWarnings(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no permission bits")
	}
	t.Setenv("DRCTL_TEST_EAST_PASSWORD", "from-env")
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	withPassword := func(sasl string) string {
		return strings.Replace(good, `password: "${EAST_PASSWORD}"`, sasl, 1)
	}
	cases := []struct {
		name     string
		doc      string
		fileMode fs.FileMode // of the topology file
		pwMode   fs.FileMode // of the password file, when used
		want     []string    // substrings, one per warning
	}{
		{"variable, file readable by all", withPassword(`password: "${DRCTL_TEST_EAST_PASSWORD}"`), 0o644, 0, nil},
		{"literal, private file", withPassword("password: hunter2"), 0o600, 0, nil},
		{"literal, group may read", withPassword("password: hunter2"), 0o640,
			0, []string{"w.yaml:5: cluster east: the file holds a literal sasl.password and is readable by group or others (mode 0640); restrict it: chmod 600 "}},
		{"literal, others may read", withPassword("password: hunter2"), 0o604, 0, []string{"(mode 0604); restrict it: chmod 600 "}},
		{"default written in the file", withPassword(`password: "${DRCTL_TEST_UNSET:-hunter2}"`), 0o644, 0, []string{"holds a literal sasl.password"}},
		{"password file private", withPassword("password_file: " + pwFile), 0o644, 0o600, nil},
		{"password file readable by all", withPassword("password_file: " + pwFile), 0o600, 0o644,
			[]string{"w.yaml:5: cluster east: sasl.password_file " + pwFile + " is readable by group or others (mode 0644); restrict it: chmod 600 " + pwFile}},
		{"password file named by a variable", withPassword(`password_file: "${DRCTL_TEST_PW_FILE}"`), 0o600, 0o440,
			[]string{"sasl.password_file ${DRCTL_TEST_PW_FILE} is readable by group or others (mode 0440); restrict it: chmod 600 ${DRCTL_TEST_PW_FILE}"}},
		{"tls key file readable by all", withPassword(`password: "${DRCTL_TEST_EAST_PASSWORD}"}` + "\n    tls: {cert_file: " + pwFile + ", key_file: " + pwFile), 0o600, 0o644,
			[]string{"w.yaml:6: cluster east: tls.key_file " + pwFile + " is readable by group or others (mode 0644); restrict it: chmod 600 " + pwFile}},
		{"tls key file private", withPassword(`password: "${DRCTL_TEST_EAST_PASSWORD}"}` + "\n    tls: {cert_file: " + pwFile + ", key_file: " + pwFile), 0o644, 0o600, nil},
	}
	t.Setenv("DRCTL_TEST_PW_FILE", pwFile)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "w.yaml")
			if err := os.WriteFile(path, []byte(c.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(pwFile, []byte("pw-from-file\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, c.fileMode); err != nil {
				t.Fatal(err)
			}
			if c.pwMode != 0 {
				if err := os.Chmod(pwFile, c.pwMode); err != nil {
					t.Fatal(err)
				}
			}
			t.Chdir(dir)
			topo, err := Load("w.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if len(topo.Warnings) != len(c.want) {
				t.Fatalf("warnings %v, want %d", topo.Warnings, len(c.want))
			}
			for i, w := range topo.Warnings {
				if w.Rule != RuleSecretFileMode || w.Cluster != "east" || !strings.Contains(w.String(), c.want[i]) {
					t.Errorf("warning %q (rule %q, cluster %q): want %q", w, w.Rule, w.Cluster, c.want[i])
				}
				for _, secret := range []string{"hunter2", "pw-from-file", "from-env"} {
					if strings.Contains(w.String(), secret) {
						t.Errorf("warning shows the password: %q", w)
					}
				}
			}
		})
	}
}

// TestInsecureTLSWarning: an explicit insecure_skip_verify is a warning at
// its line, naming the fix; verification on (the default) is not.
func TestInsecureTLSWarning(t *testing.T) {
	cases := []struct {
		name, tls string
		warn      bool
	}{
		{"no tls", "", false},
		{"tls verifying (default)", "\n    tls: {server_name: kafka-west-1}", false},
		{"explicitly verifying", "\n    tls: {insecure_skip_verify: false}", false},
		{"skip verify", "\n    tls:\n      server_name: x\n      insecure_skip_verify: true", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := strings.Replace(good, "    version: 3.7.0", "    version: 3.7.0"+c.tls, 1)
			topo, err := Parse("w.yaml", []byte(doc), env(map[string]string{"EAST_PASSWORD": "s3cret"}))
			if err != nil {
				t.Fatal(err)
			}
			var got []Warning
			for _, w := range topo.Warnings {
				if w.Rule == RuleInsecureTLS {
					got = append(got, w)
				}
			}
			if !c.warn {
				if len(got) != 0 {
					t.Errorf("warnings %v, want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("warnings %v, want one %q", topo.Warnings, RuleInsecureTLS)
			}
			w := got[0]
			if w.Cluster != "west" || w.Line != 11 || !strings.HasPrefix(w.String(), "w.yaml:11: ") ||
				!strings.Contains(w.Msg, "insecure_skip_verify is true") || !strings.Contains(w.Msg, "remove it and set tls.ca_file") {
				t.Errorf("warning %+v (%s): want west at w.yaml:11 (the insecure_skip_verify line) naming the fix", w, w)
			}
		})
	}
}
