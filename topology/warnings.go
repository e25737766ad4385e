package topology

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Warning is a finding about a topology that loads: drctl works with it,
// but a person should fix it. Its message names the fix.
type Warning struct {
	File    string
	Line    int
	Cluster string // the cluster it concerns, if one
	Rule    string // a short name: "distinct clusters", "secret file mode"
	Msg     string
}

// Warning rules.
const (
	RuleDistinctClusters = "distinct clusters"
	RuleSecretFileMode   = "secret file mode"
	RuleInsecureTLS      = "insecure tls"
)

func (w Warning) String() string {
	if w.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", w.File, w.Line, w.Msg)
	}
	return fmt.Sprintf("%s: %s", w.File, w.Msg)
}

// sharedBootstrap warns when both clusters list a common bootstrap
// address: a broker belongs to one cluster, so the topology names one
// cluster twice (`validate --online` proves it with the cluster ids).
func sharedBootstrap(t *Topology, root *yaml.Node) []Warning {
	names := t.ClusterNames()
	a, b := t.Clusters[names[0]], t.Clusters[names[1]]
	inA := map[string]bool{}
	for _, addr := range a.Bootstrap {
		inA[addressKey(addr)] = true
	}
	var shared []string
	seen := map[string]bool{}
	for _, addr := range b.Bootstrap {
		if k := addressKey(addr); inA[k] && !seen[k] {
			seen[k] = true
			shared = append(shared, strconv.Quote(addr))
		}
	}
	if len(shared) == 0 {
		return nil
	}
	slices.Sort(shared)
	what := "share the bootstrap address " + strings.Join(shared, ", ")
	if len(seen) == len(inA) && len(seen) == len(uniqueKeys(b.Bootstrap)) {
		what = "have the same bootstrap list"
	}
	return []Warning{{Line: lineOf(root, "clusters", b.Name, "bootstrap"), Rule: RuleDistinctClusters, Msg: fmt.Sprintf(
		"clusters %s and %s %s: that is one cluster under two names; point each cluster at its own brokers (validate --online compares the cluster ids)",
		a.Name, b.Name, what)}}
}

func uniqueKeys(addrs []string) map[string]bool {
	m := map[string]bool{}
	for _, a := range addrs {
		m[addressKey(a)] = true
	}
	return m
}

// readableByOthers reports whether permission bits let the group or others
// read a file. Windows has no such bits.
func readableByOthers(mode fs.FileMode) bool {
	return runtime.GOOS != "windows" && mode.Perm()&0o044 != 0
}

// insecureTLS warns for each cluster whose tls.insecure_skip_verify is
// true: drctl then accepts any certificate, so anyone on the path can pose
// as the cluster (and be handed drctl's SASL password).
func insecureTLS(t *Topology, root *yaml.Node) []Warning {
	var out []Warning
	for _, name := range t.ClusterNames() {
		c := t.Clusters[name]
		if c.TLS == nil || !c.TLS.InsecureSkipVerify {
			continue
		}
		out = append(out, Warning{Line: lineOf(root, "clusters", name, "tls", "insecure_skip_verify"), Cluster: name, Rule: RuleInsecureTLS, Msg: fmt.Sprintf(
			"cluster %s: tls.insecure_skip_verify is true: drctl accepts any certificate, so anyone between drctl and the brokers can pose as the cluster; remove it and set tls.ca_file to the CA that issued the brokers' certificates (and tls.server_name if they are not issued for the bootstrap host)",
			name)})
	}
	return out
}

// passwordFileModes warns for each password_file and TLS key_file (both
// secrets) that the group or others may read.
func passwordFileModes(raw *rawFile, root *yaml.Node, x *expansions) []Warning {
	var out []Warning
	for _, name := range sortedNames(raw.Clusters) {
		rc := raw.Clusters[name]
		if rc == nil {
			continue
		}
		if rc.SASL != nil && rc.SASL.PasswordFile != "" {
			out = append(out, secretFileMode(root, x, name, rc.SASL.PasswordFile, "sasl", "password_file")...)
		}
		if rc.TLS != nil && rc.TLS.KeyFile != "" {
			out = append(out, secretFileMode(root, x, name, rc.TLS.KeyFile, "tls", "key_file")...)
		}
	}
	return out
}

// secretFileMode warns when the group or others may read the secret file
// at clusters.<name>.<section>.<key>.
func secretFileMode(root *yaml.Node, x *expansions, name, path, section, key string) []Warning {
	st, err := os.Stat(path)
	if err != nil || !readableByOthers(st.Mode()) {
		return nil
	}
	// The path as written: it may come from a ${VAR}, which a shell
	// expands again in the chmod.
	written := path
	if n := valueAt(root, "clusters", name, section, key); n != nil {
		written = x.asWritten(n)
	}
	return []Warning{{Line: lineOf(root, "clusters", name, section, key), Cluster: name, Rule: RuleSecretFileMode, Msg: fmt.Sprintf(
		"cluster %s: %s.%s %s is readable by group or others (mode %04o); restrict it: chmod 600 %s",
		name, section, key, written, st.Mode().Perm(), written)}}
}

// literalPasswords returns, per cluster, the line of a sasl.password that
// the file itself holds (any text but ${VAR} references without default).
func literalPasswords(raw *rawFile, root *yaml.Node, x *expansions) map[string]int {
	out := map[string]int{}
	for _, name := range sortedNames(raw.Clusters) {
		n := valueAt(root, "clusters", name, "sasl", "password")
		if n == nil || n.Kind != yaml.ScalarNode {
			continue
		}
		rest := envRE.ReplaceAllStringFunc(x.asWritten(n), func(ref string) string {
			if strings.Contains(ref, ":-") {
				return ref // the default is a password written in the file
			}
			return ""
		})
		if rest != "" {
			out[name] = n.Line
		}
	}
	return out
}

// fileModeWarnings warns when the topology file holds a literal password
// and the group or others may read it.
func (t *Topology) fileModeWarnings(mode fs.FileMode) []Warning {
	if !readableByOthers(mode) {
		return nil
	}
	var out []Warning
	for _, name := range sortedNames(t.literalPasswords) {
		out = append(out, Warning{File: t.Path, Line: t.literalPasswords[name], Cluster: name, Rule: RuleSecretFileMode, Msg: fmt.Sprintf(
			"cluster %s: the file holds a literal sasl.password and is readable by group or others (mode %04o); restrict it: chmod 600 %s, or use password: \"${VAR}\" or password_file",
			name, mode.Perm(), t.Path)})
	}
	return out
}

func sortedNames[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// valueAt returns the value node at a key path (aliases followed), or nil.
func valueAt(root *yaml.Node, path ...string) *yaml.Node {
	n := root
	for _, key := range path {
		if n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
				break
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}
