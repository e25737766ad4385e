package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// drctl runs one command line in-process.
func drctl(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"drctl"}, args...), Streams{Out: &out, Err: &errb})
	return out.String(), errb.String(), code
}

// TestBrokenTopologies proves that each broken file gets a one-line error
// with file:line, exit code 2, and that no cluster is contacted.
func TestBrokenTopologies(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var contacted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			contacted.Add(1)
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	base := "name: t\nclusters:\n  east:\n    bootstrap: [" + addr + "]\n  west:\n    bootstrap: [" + addr + "]\n" +
		"active: east\nstandby: west\nmirror:\n  topics: {include: [orders]}\n"
	cases := map[string]struct {
		yaml string
		line string
	}{
		"unknown key":     {strings.Replace(base, "active: east", "actve: east", 1), ":7:"},
		"bad regex":       {strings.Replace(base, "[orders]", "[\"orders[\"]", 1), ":10:"},
		"unknown cluster": {strings.Replace(base, "standby: west", "standby: north", 1), ":8:"},
		"active==standby": {strings.Replace(base, "standby: west", "standby: east", 1), ":8:"},
		"unset variable":  {strings.Replace(base, "name: t", "name: ${DRCTL_TEST_UNSET_VAR}", 1), ":1:"},
		"wrong type":      {strings.Replace(base, "active: east", "active: [east]", 1), ":7:"},
	}
	dir := t.TempDir()
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".yaml")
			if err := os.WriteFile(path, []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"-c", path, "validate"}, {"-c", path, "validate", "--online"}, {"-c", path, "status"}} {
				_, stderr, code := drctl(t, args...)
				if code != exitBadInput {
					t.Errorf("%v: exit %d, want %d (stderr %q)", args, code, exitBadInput, stderr)
				}
				lines := strings.Split(strings.TrimSpace(stderr), "\n")
				if len(lines) != 1 || !strings.Contains(lines[0], path+c.line) {
					t.Errorf("%v: stderr %q: want one line naming %s%s", args, stderr, path, c.line)
				}
			}
		})
	}
	if n := contacted.Load(); n != 0 {
		t.Errorf("a broken topology contacted the cluster %d times", n)
	}
}

func TestValidateOfflineGood(t *testing.T) {
	path := filepath.Join(t.TempDir(), "drctl.yaml")
	yaml := "name: t\nclusters:\n  east:\n    bootstrap: [127.0.0.1:1]\n    sasl: {mechanism: PLAIN, username: u, password: \"${DRCTL_TEST_PW}\"}\n" +
		"  west:\n    bootstrap: [127.0.0.1:2]\nactive: east\nstandby: west\nmirror:\n  topics: {include: [orders]}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DRCTL_TEST_PW", "hunter2-secret")
	for _, format := range []string{"table", "json", "yaml"} {
		out, stderr, code := drctl(t, "-c", path, "-o", format, "validate")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", format, code, stderr)
		}
		if strings.Contains(out+stderr, "hunter2-secret") {
			t.Errorf("%s: the password was printed", format)
		}
		if !strings.Contains(out, "east") || !strings.Contains(out, "user=u") {
			t.Errorf("%s: output lacks the cluster: %s", format, out)
		}
	}
}

func TestBadOutputFormat(t *testing.T) {
	_, stderr, code := drctl(t, "-o", "xml", "validate")
	if code != exitBadInput || !strings.Contains(stderr, "use table, wide, json or yaml") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

func TestNoTopology(t *testing.T) {
	t.Setenv("DRCTL_CONFIG", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	_, stderr, code := drctl(t, "status")
	if code != exitBadInput || !strings.Contains(stderr, "pass -c FILE") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
