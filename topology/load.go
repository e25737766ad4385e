package topology

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Error is a problem in a topology file, positioned at the line that causes
// it. Its message names the fix.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// The raw schema mirrors the YAML exactly; yaml tags are the public key names.
type rawFile struct {
	Name     string                 `yaml:"name"`
	Clusters map[string]*rawCluster `yaml:"clusters"`
	Active   string                 `yaml:"active"`
	Standby  string                 `yaml:"standby"`
	Mirror   rawMirror              `yaml:"mirror"`
	Failover rawFailover            `yaml:"failover"`
	Drills   *rawDrills             `yaml:"drills"`
}

type rawCluster struct {
	Bootstrap []string  `yaml:"bootstrap"`
	ClientID  string    `yaml:"client_id"`
	Version   string    `yaml:"version"`
	Timeout   *duration `yaml:"timeout"`
	TLS       *rawTLS   `yaml:"tls"`
	SASL      *rawSASL  `yaml:"sasl"`
}

type rawTLS struct {
	CAFile             string `yaml:"ca_file"`
	CertFile           string `yaml:"cert_file"`
	KeyFile            string `yaml:"key_file"`
	ServerName         string `yaml:"server_name"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

type rawSASL struct {
	Mechanism    string `yaml:"mechanism"`
	Username     string `yaml:"username"`
	Password     string `yaml:"password"`
	PasswordFile string `yaml:"password_file"`
}

type rawSelection struct {
	Include []string `yaml:"include"`
	Exclude []string `yaml:"exclude"`
}

type rawMirror struct {
	Topics            *rawSelection `yaml:"topics"`
	Groups            *rawSelection `yaml:"groups"`
	Delivery          string        `yaml:"delivery"`
	GroupSyncInterval *duration     `yaml:"group_sync_interval"`
	ACLs              *rawACLs      `yaml:"acls"`
	Verify            *rawVerify    `yaml:"verify"`
}

type rawVerify struct {
	Mode     string    `yaml:"mode"`
	Sample   *int      `yaml:"sample"`
	Interval *duration `yaml:"interval"`
}

type rawACLs struct {
	Enabled          *bool         `yaml:"enabled"`
	Principals       *rawSelection `yaml:"principals"`
	TransactionalIDs *rawSelection `yaml:"transactional_ids"`
	Cluster          bool          `yaml:"cluster"`
	Interval         *duration     `yaml:"interval"`
}

type rawHooks struct {
	Before []string `yaml:"before"`
	After  []string `yaml:"after"`
}

type rawFailover struct {
	DrainTimeout       *duration  `yaml:"drain_timeout"`
	QuietPeriod        *duration  `yaml:"quiet_period"`
	Fence              string     `yaml:"fence"`
	ProducerPrincipals []string   `yaml:"producer_principals"`
	SalvageTopicSuffix string     `yaml:"salvage_topic_suffix"`
	Hooks              rawHooks   `yaml:"hooks"`
	Clients            rawClients `yaml:"clients"`
}

type rawClients struct {
	Timeout *duration `yaml:"timeout"`
}

// duration accepts Go duration strings ("90s", "5m").
type duration struct {
	d    time.Duration
	line int
}

func (d *duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil || n.Kind != yaml.ScalarNode {
		return &Error{Line: n.Line, Msg: fmt.Sprintf("%q is not a duration; write it like 30s, 5m or 1h", n.Value)}
	}
	if v < 0 {
		return &Error{Line: n.Line, Msg: fmt.Sprintf("duration %q is negative; use a positive value", n.Value)}
	}
	d.d, d.line = v, n.Line
	return nil
}

func (d *duration) or(def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return d.d
}

// Defaults applied when the file leaves a setting out.
const (
	DefaultVersion           = "3.6.0"
	DefaultTimeout           = 10 * time.Second
	DefaultGroupSyncInterval = 5 * time.Second
	DefaultACLSyncInterval   = 2 * time.Second
	DefaultVerifyMode        = VerifySample
	DefaultVerifySample      = 10000
	DefaultVerifyInterval    = 10 * time.Second
	DefaultDrainTimeout      = 5 * time.Minute
	DefaultQuietPeriod       = 5 * time.Second
	DefaultClientsTimeout    = time.Minute
	DefaultClientID          = "drctl"
)

// Load reads, expands and validates the topology file at path. Every error
// is an *Error naming file:line and the fix; a file over MaxFileSize is
// refused before it is read. Load opens no connection.
func Load(path string) (*Topology, error) {
	data, mode, err := readFile(path)
	if err != nil {
		return nil, err
	}
	t, err := Parse(path, data, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	t.Warnings = append(t.Warnings, t.fileModeWarnings(mode)...)
	return t, nil
}

// Parse is Load for bytes already read; lookup resolves ${VAR} references.
// No error or warning shows a value that a ${VAR} expanded to.
func Parse(path string, data []byte, lookup func(string) (string, bool)) (*Topology, error) {
	if len(data) > MaxFileSize {
		return nil, tooLarge(path, int64(len(data)))
	}
	x := newExpansions(data)
	wrap := func(err error) error {
		if pe, ok := errors.AsType[*Error](err); ok {
			pe.File, pe.Msg = path, x.scrub(pe.Msg)
			return pe
		}
		return &Error{File: path, Msg: x.scrub(err.Error())}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, wrap(yamlSyntaxError(err))
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, &Error{File: path, Msg: "the file is empty; see docs/topology.md for the schema"}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: path, Line: root.Line, Msg: "the top level must be a mapping (name:, clusters:, active:, standby: ...)"}
	}
	if err := checkKeys(root, reflect.TypeFor[rawFile](), "", map[keyCheck]bool{}); err != nil {
		return nil, wrap(err)
	}
	if err := x.expandEnv(root, lookup); err != nil {
		return nil, wrap(err)
	}
	var raw rawFile
	if err := root.Decode(&raw); err != nil {
		return nil, wrap(decodeError(err))
	}
	sum := sha256.Sum256(data)
	t, err := build(&raw, root, path)
	if err != nil {
		return nil, wrap(err)
	}
	t.Path, t.Digest = path, hex.EncodeToString(sum[:])
	if err := buildEvidence(t, raw.Drills, root, x); err != nil {
		return nil, wrap(err)
	}
	t.literalPasswords = literalPasswords(&raw, root, x)
	warnings := append(sharedBootstrap(t, root), passwordFileModes(&raw, root, x)...)
	warnings = append(warnings, signingKeyFileMode(&raw, root, x)...)
	for _, w := range append(warnings, insecureTLS(t, root)...) {
		w.File, w.Msg = path, x.scrub(w.Msg)
		t.Warnings = append(t.Warnings, w)
	}
	return t, nil
}

var lineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

func yamlSyntaxError(err error) error {
	if m := lineRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		msg := "not valid YAML: " + m[2]
		if strings.HasPrefix(m[2], "did not find expected") {
			// yaml.v3 counts these from zero and points at the opening of
			// the flow collection; name the line a person would look at.
			n++
			msg += " (quote a value that holds ${VAR}, ':' or '#' inside { } or [ ])"
		}
		return &Error{Line: n, Msg: msg}
	}
	return &Error{Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
}

// decodeError turns yaml.v3's type errors into one positioned line.
func decodeError(err error) error {
	if pe, ok := errors.AsType[*Error](err); ok {
		return pe
	}
	if strings.Contains(err.Error(), "excessive aliasing") {
		return &Error{Msg: "the aliases (*name) expand to too much; write the values out, or use fewer aliases"}
	}
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		if m := lineRE.FindStringSubmatch(te.Errors[0]); m != nil {
			n, _ := strconv.Atoi(m[1])
			msg := strings.Replace(m[2], "cannot unmarshal", "wrong type: cannot read", 1)
			msg = strings.NewReplacer("!!str", "a string", "!!seq", "a list", "!!map", "a mapping",
				"!!int", "a number", "!!bool", "a boolean", "[]string", "a list of strings",
				"bool", "true/false").Replace(msg)
			if i := strings.Index(msg, " into topology."); i >= 0 {
				msg = msg[:i] + " here (see docs/topology.md)"
			}
			return &Error{Line: n, Msg: msg}
		}
	}
	return err
}

// keyCheck is a node checked against a schema type.
type keyCheck struct {
	n *yaml.Node
	t reflect.Type
}

// checkKeys rejects keys that the schema type t does not know, recursively.
// Each node is checked once per type (done), so that aliases to one node
// cost nothing more however often they are used.
func checkKeys(n *yaml.Node, t reflect.Type, where string, done map[keyCheck]bool) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if done[keyCheck{n, t}] {
		return nil
	}
	done[keyCheck{n, t}] = true
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return nil // a type error; Decode reports it with its line
		}
		if t == reflect.TypeFor[duration]() {
			return nil
		}
		fields := map[string]reflect.Type{}
		var known []string
		for field := range t.Fields() {
			tag, _, _ := strings.Cut(field.Tag.Get("yaml"), ",")
			if tag == "" || tag == "-" {
				continue
			}
			fields[tag] = field.Type
			known = append(known, tag)
		}
		slices.Sort(known)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				in := "at the top level"
				if where != "" {
					in = "in " + where
				}
				return &Error{Line: k.Line, Msg: fmt.Sprintf("unknown key %q %s; known keys are: %s", k.Value, in, strings.Join(known, ", "))}
			}
			if err := checkKeys(v, ft, join(where, k.Value), done); err != nil {
				return err
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := checkKeys(n.Content[i+1], t.Elem(), join(where, n.Content[i].Value), done); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return nil
		}
		if len(n.Content) > MaxListItems {
			return &Error{Line: n.Line, Msg: fmt.Sprintf("%s lists %d items; at most %d are allowed (use a regular expression that covers many names)", where, len(n.Content), MaxListItems)}
		}
		for _, c := range n.Content {
			if err := checkKeys(c, t.Elem(), where, done); err != nil {
				return err
			}
		}
	}
	return nil
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// lineOf returns the line of the value at the given key path, or of the
// deepest ancestor that exists.
func lineOf(root *yaml.Node, path ...string) int {
	n, line := root, root.Line
	for _, key := range path {
		if n.Kind != yaml.MappingNode {
			return line
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				n, line, found = n.Content[i+1], n.Content[i].Line, true
				break
			}
		}
		if !found {
			return line
		}
	}
	return line
}
