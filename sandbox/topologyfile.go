package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// marker is the first line of every topology file the sandbox writes. A file
// without it belongs to someone else and is never overwritten.
const marker = "# written by drctl sandbox"

// checkOverwrite returns nil if path does not exist or was written by a
// sandbox, and an error naming the file and the fix otherwise.
func checkOverwrite(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sandbox: check %s: %w", path, err)
	}
	defer f.Close()
	// A read error leaves first short of the marker: the file is kept.
	first, _ := bufio.NewReader(f).ReadString('\n')
	if strings.HasPrefix(first, marker) {
		return nil
	}
	return fmt.Errorf("sandbox: %s: %w; move it away, or run drctl sandbox in another directory", path, ErrTopologyExists)
}

// topologyYAML renders the sandbox's topology. The mirror selection leaves
// out the scratch topic on purpose, to show selection at work.
func topologyYAML(east, west []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s; it rewrites this file each time it starts.\n", marker)
	b.WriteString("# Delete the first line to keep your own edits.\n")
	b.WriteString("name: sandbox\n")
	b.WriteString("clusters:\n")
	for _, c := range []struct {
		name  string
		addrs []string
	}{{East, east}, {West, west}} {
		fmt.Fprintf(&b, "  %s:\n    bootstrap: [%s]\n    timeout: 5s\n", c.name, strings.Join(c.addrs, ", "))
	}
	b.WriteString(`active: east
standby: west
mirror:
  topics:
    include: ["orders", "payments\\..*", "customers"]   # scratch stays behind
  groups:
    include: [".*"]
    exclude: ["console-consumer-.*"]
  delivery: exactly-once
  group_sync_interval: 1s
failover:
  drain_timeout: 1m
  quiet_period: 2s
  fence: none     # the sandbox clusters have no SASL, so no ACL fence
`)
	b.WriteString(drillsYAML)
	return b.String()
}

// writeTopology writes the topology file atomically: a reader never sees
// half a file.
func writeTopology(path string, east, west []string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".drctl-sandbox-*.yaml")
	if err != nil {
		return fmt.Errorf("sandbox: write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(topologyYAML(east, west)); err != nil {
		tmp.Close()
		return fmt.Errorf("sandbox: write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("sandbox: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("sandbox: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("sandbox: write %s: %w", path, err)
	}
	return nil
}
