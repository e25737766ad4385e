package kfaketest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/drctl/drctl/topology"
)

// Credentials of the superuser every harness cluster has when SASL is on.
const (
	User     = "drctl"
	Password = "drctl-secret"
)

// Pair is two kfake clusters named east (home active) and west (home standby).
type Pair struct {
	East, West *kfake.Cluster
	opts       map[string][]kfake.Opt
	// Path is the topology file written for the pair.
	Path     string
	Topology *topology.Topology
}

// Options tune a Pair.
type Options struct {
	// SASL turns on SCRAM-SHA-512 authentication with User/Password as
	// super user on both clusters.
	SASL bool
	// ClusterOpts are passed to both clusters.
	ClusterOpts []kfake.Opt
	// Mirror is the mirror: section of the topology (YAML, indented two
	// spaces); empty selects every topic.
	Mirror string
	// Extra is appended to the topology file verbatim.
	Extra string
	// Persist keeps each cluster's data in a directory and on a fixed
	// port, so that Stop and Restart simulate an outage.
	Persist bool
}

// NewPair starts two single-broker clusters and writes their topology into
// t.TempDir().
func NewPair(t testing.TB, o Options) *Pair {
	t.Helper()
	p := &Pair{opts: map[string][]kfake.Opt{}}
	start := func(name, id string) *kfake.Cluster {
		opts := []kfake.Opt{kfake.NumBrokers(1), kfake.ClusterID(id)}
		if o.SASL {
			opts = append(opts, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", User, Password))
		}
		if o.Persist {
			opts = append(opts, kfake.DataDir(filepath.Join(t.TempDir(), name)), kfake.Ports(freePort(t)))
		}
		opts = append(opts, o.ClusterOpts...)
		p.opts[name] = opts
		c, err := kfake.NewCluster(opts...)
		if err != nil {
			t.Fatalf("start kfake cluster %s: %v", id, err)
		}
		t.Cleanup(func() { p.cluster(name).Close() })
		return c
	}
	p.East, p.West = start("east", "kfake-east"), start("west", "kfake-west")
	p.Path = filepath.Join(t.TempDir(), "drctl.yaml")
	if err := os.WriteFile(p.Path, []byte(TopologyYAML("test", p.East.ListenAddrs(), p.West.ListenAddrs(), o)), 0o600); err != nil {
		t.Fatal(err)
	}
	topo, err := topology.Load(p.Path)
	if err != nil {
		t.Fatalf("load harness topology: %v", err)
	}
	p.Topology = topo
	return p
}

// TopologyYAML renders a topology file for two clusters.
func TopologyYAML(name string, east, west []string, o Options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\nclusters:\n", name)
	for _, c := range []struct {
		name  string
		addrs []string
	}{{"east", east}, {"west", west}} {
		fmt.Fprintf(&b, "  %s:\n    bootstrap: [%s]\n    timeout: 5s\n", c.name, strings.Join(c.addrs, ", "))
		if o.SASL {
			fmt.Fprintf(&b, "    sasl: {mechanism: SCRAM-SHA-512, username: %s, password: %s}\n", User, Password)
		}
	}
	b.WriteString("active: east\nstandby: west\nmirror:\n")
	if o.Mirror != "" {
		b.WriteString(o.Mirror)
		if !strings.HasSuffix(o.Mirror, "\n") {
			b.WriteString("\n")
		}
	} else {
		b.WriteString("  topics: {include: [\".*\"]}\n")
	}
	b.WriteString(o.Extra)
	return b.String()
}

func (p *Pair) cluster(name string) *kfake.Cluster {
	if name == "east" {
		return p.East
	}
	return p.West
}

// Stop closes cluster name ("east" or "west"): an outage. The tests'
// sessions of the pair's topology forget their client of it, so the next
// use dials it (and finds it unreachable), as a new command would.
func (p *Pair) Stop(name string) {
	p.cluster(name).Close()
	forget(p.Topology, name)
}

// Restart starts cluster name again on the same port with the same data
// (Options.Persist).
func (p *Pair) Restart(t testing.TB, name string) {
	t.Helper()
	c, err := kfake.NewCluster(p.opts[name]...)
	if err != nil {
		t.Fatalf("restart kfake cluster %s: %v", name, err)
	}
	if name == "east" {
		p.East = c
	} else {
		p.West = c
	}
	forget(p.Topology, name)
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
