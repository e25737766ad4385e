package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateInputLimits: warnings about a topology keep exit code 0 and
// show as WARN checks; bad input (a bad address, a file over the size
// limit, an expanded value that fails) is exit 2 with one line naming
// file:line and the fix, never the expanded value.
func TestValidateInputLimits(t *testing.T) {
	const head = "name: t\nclusters:\n  east:\n    bootstrap: [127.0.0.1:1]\n"
	const tail = "active: east\nstandby: west\nmirror:\n  topics: {include: [orders]}\n"
	t.Setenv("DRCTL_TEST_HOST", "secret-host-9")
	cases := []struct {
		name  string
		yaml  string
		mode  os.FileMode
		code  int
		check string // the WARN check's name, or the error's text
		fix   string
	}{
		{"same brokers twice", head + "  west:\n    bootstrap: [127.0.0.1:1]\n" + tail, 0o600,
			exitOK, "distinct clusters", "clusters east and west have the same bootstrap list: that is one cluster under two names"},
		{"literal password readable by others", strings.Replace(head, "[127.0.0.1:1]\n", "[127.0.0.1:1]\n    sasl: {mechanism: PLAIN, username: u, password: hunter2-secret}\n", 1) +
			"  west:\n    bootstrap: [127.0.0.1:2]\n" + tail, 0o644, exitOK, "secret file mode", "chmod 600"},
		{"bootstrap without a port", head + "  west:\n    bootstrap: [127.0.0.1]\n" + tail, 0o600,
			exitBadInput, ":6: cluster west: bootstrap entry \"127.0.0.1\" has no port", "write it as host:port"},
		{"expanded address that fails", head + "  west:\n    bootstrap: [\"${DRCTL_TEST_HOST}\"]\n" + tail, 0o600,
			exitBadInput, ":6: cluster west: bootstrap entry \"${DRCTL_TEST_HOST}\" has no port", "write it as host:port"},
		{"file over the limit", head + "  west:\n    bootstrap: [127.0.0.1:2]\n" + tail + strings.Repeat("#", 1<<20), 0o600,
			exitBadInput, ": the file is 1.0 MiB; a topology file may be at most 1 MiB", "check that -c or DRCTL_CONFIG names the topology YAML"},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".yaml")
			if err := os.WriteFile(path, []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, c.mode); err != nil {
				t.Fatal(err)
			}
			out, stderr, code := drctl(t, "-c", path, "validate")
			if code != c.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, c.code, stderr)
			}
			if strings.Contains(out+stderr, "hunter2-secret") || strings.Contains(out+stderr, "secret-host-9") {
				t.Errorf("a secret or an expanded value was printed: %s%s", out, stderr)
			}
			if c.code != exitOK {
				lines := strings.Split(strings.TrimSpace(stderr), "\n")
				if len(lines) != 1 || !strings.Contains(lines[0], path+c.check) || !strings.Contains(lines[0], c.fix) {
					t.Errorf("stderr %q: want one line with %s%s and %q", stderr, path, c.check, c.fix)
				}
				return
			}
			if !strings.Contains(out, "WARN") || !strings.Contains(out, c.check) || !strings.Contains(out, c.fix) || !strings.Contains(out, "is valid") {
				t.Errorf("table output lacks the %s warning or the verdict:\n%s", c.check, out)
			}
			out, stderr, code = drctl(t, "-c", path, "-o", "json", "validate")
			var v struct {
				Checks []struct{ Check, Result, Detail string }
			}
			if code != exitOK || json.Unmarshal([]byte(out), &v) != nil {
				t.Fatalf("json: exit %d, %q %q", code, out, stderr)
			}
			found := false
			for _, ch := range v.Checks {
				found = found || ch.Check == c.check && ch.Result == "WARN" && strings.Contains(ch.Detail, c.fix)
			}
			if !found {
				t.Errorf("json checks %+v lack a WARN %q", v.Checks, c.check)
			}
		})
	}
}
