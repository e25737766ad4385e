package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnreachableSaidOnce: an unreachable cluster's error names the
// cluster and its address once, not "cluster east ... cluster east ...
// cluster unreachable: 127.0.0.1:1: ...".
func TestUnreachableSaidOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	path := filepath.Join(t.TempDir(), "drctl.yaml")
	yaml := "name: t\nclusters:\n  east:\n    bootstrap: [" + addr + "]\n    timeout: 2s\n  west:\n    bootstrap: [" + addr + "]\n    timeout: 2s\n" +
		"active: east\nstandby: west\nmirror:\n  topics: {include: [orders]}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"fence", "east"}, {"unfence", "east"}, {"status", "--timeout", "5s"}} {
		out, stderr, code := drctl(t, append(args, "-c", path)...)
		if code != exitUnreachable {
			t.Errorf("%v: exit %d, want %d (a cluster could not be reached)", args, code, exitUnreachable)
		}
		if args[0] == "status" && !strings.Contains(out, "active unknown, standby unknown, epoch unknown, phase unknown") {
			// With nothing answering, no role and no epoch is shown as if known.
			t.Errorf("status with no cluster answering:\n%s", out)
		}
		for line := range strings.SplitSeq(out+stderr, "\n") {
			if !strings.Contains(line, "unreachable") || !strings.Contains(line, "cluster east") {
				continue
			}
			if strings.Contains(line, "east: cluster east") {
				t.Errorf("%v: %q says the cluster's name twice in a row", args, line)
			}
			if n := strings.Count(line, "cluster east"); n != 1 {
				t.Errorf("%v: %q names the cluster %d times", args, line, n)
			}
			if n := strings.Count(line, addr); n > 2 { // once as the bootstrap, once in the dial error
				t.Errorf("%v: %q names %s %d times", args, line, addr, n)
			}
			if strings.Contains(line, "cluster unreachable") {
				t.Errorf("%v: %q", args, line)
			}
		}
	}
}
