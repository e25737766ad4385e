package topology

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/IBM/sarama"
	"gopkg.in/yaml.v3"
)

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,62}$`)

// build validates the raw file and turns it into a Topology.
func build(raw *rawFile, root *yaml.Node, path string) (*Topology, error) {
	at := func(msg string, keys ...string) error {
		return &Error{Line: lineOf(root, keys...), Msg: msg}
	}
	if raw.Name == "" {
		return nil, at(`"name" is missing; give the topology a short name, e.g. name: payments`)
	}
	if !nameRE.MatchString(raw.Name) {
		return nil, at(fmt.Sprintf("name %q may hold only letters, digits, '.', '_' and '-' (at most 63)", raw.Name), "name")
	}
	if len(raw.Clusters) != 2 {
		return nil, at(fmt.Sprintf(`"clusters" must describe exactly two clusters (an active and a standby); found %d`, len(raw.Clusters)), "clusters")
	}
	t := &Topology{Name: raw.Name, Clusters: map[string]*Cluster{}}
	names := slices.Sorted(maps.Keys(raw.Clusters))
	for _, name := range names {
		c, err := buildCluster(name, raw.Clusters[name], root, path)
		if err != nil {
			return nil, err
		}
		t.Clusters[name] = c
	}
	for _, role := range []struct{ key, val string }{{"active", raw.Active}, {"standby", raw.Standby}} {
		if role.val == "" {
			return nil, at(fmt.Sprintf("%q is missing; name one of the clusters: %s", role.key, strings.Join(names, ", ")), role.key)
		}
		if _, ok := t.Clusters[role.val]; !ok {
			return nil, at(fmt.Sprintf("%s names unknown cluster %q; use one of: %s", role.key, role.val, strings.Join(names, ", ")), role.key)
		}
	}
	if raw.Active == raw.Standby {
		return nil, at(fmt.Sprintf("active and standby are both %q; the standby must be the other cluster", raw.Active), "standby")
	}
	t.Active, t.Standby = raw.Active, raw.Standby

	var err error
	if t.Mirror.Topics, err = buildSelection(raw.Mirror.Topics, nil); err != nil {
		return nil, at("mirror.topics: "+err.Error(), "mirror", "topics")
	}
	if raw.Mirror.Topics == nil || len(raw.Mirror.Topics.Include) == 0 {
		return nil, at(`mirror.topics.include is missing; list the topics to mirror as regular expressions, e.g. include: ["orders", "payments\\..*"]`, "mirror", "topics")
	}
	if t.Mirror.Groups, err = buildSelection(raw.Mirror.Groups, []string{".*"}); err != nil {
		return nil, at("mirror.groups: "+err.Error(), "mirror", "groups")
	}
	switch Delivery(raw.Mirror.Delivery) {
	case "":
		t.Mirror.Delivery = ExactlyOnce
	case ExactlyOnce, AtLeastOnce:
		t.Mirror.Delivery = Delivery(raw.Mirror.Delivery)
	default:
		return nil, at(fmt.Sprintf("mirror.delivery %q is not known; use exactly-once or at-least-once", raw.Mirror.Delivery), "mirror", "delivery")
	}
	t.Mirror.GroupSyncInterval = raw.Mirror.GroupSyncInterval.or(DefaultGroupSyncInterval)
	if t.Mirror.GroupSyncInterval < 100e6 {
		return nil, at("mirror.group_sync_interval must be at least 100ms", "mirror", "group_sync_interval")
	}

	if err := buildACLSync(t, raw.Mirror.ACLs, at); err != nil {
		return nil, err
	}
	if err := buildMirrorVerify(t, raw.Mirror.Verify, at); err != nil {
		return nil, err
	}

	f := raw.Failover
	t.Failover = Failover{
		DrainTimeout:       f.DrainTimeout.or(DefaultDrainTimeout),
		QuietPeriod:        f.QuietPeriod.or(DefaultQuietPeriod),
		ProducerPrincipals: f.ProducerPrincipals,
		SalvageTopicSuffix: f.SalvageTopicSuffix,
		HooksBefore:        f.Hooks.Before,
		HooksAfter:         f.Hooks.After,
		ClientsTimeout:     f.Clients.Timeout.or(DefaultClientsTimeout),
	}
	if t.Failover.DrainTimeout == 0 {
		return nil, at("failover.drain_timeout must be greater than zero, e.g. 5m", "failover", "drain_timeout")
	}
	switch FenceMode(f.Fence) {
	case "":
		t.Failover.Fence = FenceACL
	case FenceACL, FenceNone:
		t.Failover.Fence = FenceMode(f.Fence)
	default:
		return nil, at(fmt.Sprintf("failover.fence %q is not known; use acl or none", f.Fence), "failover", "fence")
	}
	for _, p := range f.ProducerPrincipals {
		if !strings.HasPrefix(p, "User:") || len(p) == len("User:") {
			return nil, at(fmt.Sprintf("failover.producer_principals: %q is not a Kafka principal; write it as User:name", p), "failover", "producer_principals")
		}
	}
	if t.Failover.SalvageTopicSuffix == "" {
		t.Failover.SalvageTopicSuffix = DefaultSalvageTopicSuffix
	}
	addCanaryToSelections(t)
	if err := buildDrills(t, raw.Drills, root); err != nil {
		return nil, err
	}
	return t, nil
}

// buildACLSync reads mirror.acls: on by default, every principal but
// drctl's own, no transactional ids, no cluster ACLs.
func buildACLSync(t *Topology, raw *rawACLs, at func(msg string, keys ...string) error) error {
	a := ACLSync{Enabled: true, Interval: DefaultACLSyncInterval}
	if raw == nil {
		raw = &rawACLs{}
	}
	if raw.Enabled != nil {
		a.Enabled = *raw.Enabled
	}
	var err error
	if a.Principals, err = buildSelection(raw.Principals, []string{".*"}); err != nil {
		return at("mirror.acls.principals: "+err.Error(), "mirror", "acls", "principals")
	}
	if a.TransactionalIDs, err = buildSelection(raw.TransactionalIDs, nil); err != nil {
		return at("mirror.acls.transactional_ids: "+err.Error(), "mirror", "acls", "transactional_ids")
	}
	a.Cluster = raw.Cluster
	a.Interval = raw.Interval.or(DefaultACLSyncInterval)
	if a.Interval < 100e6 {
		return at("mirror.acls.interval must be at least 100ms", "mirror", "acls", "interval")
	}
	t.Mirror.ACLs = a
	return nil
}

// buildMirrorVerify reads mirror.verify: sample mode, every
// DefaultVerifySample-th record, a round every DefaultVerifyInterval.
func buildMirrorVerify(t *Topology, raw *rawVerify, at func(msg string, keys ...string) error) error {
	v := MirrorVerify{Mode: DefaultVerifyMode, Sample: DefaultVerifySample, Interval: DefaultVerifyInterval}
	if raw == nil {
		raw = &rawVerify{}
	}
	switch VerifyMode(raw.Mode) {
	case "":
	case VerifyFull, VerifySample, VerifyOff:
		v.Mode = VerifyMode(raw.Mode)
	default:
		return at(fmt.Sprintf("mirror.verify.mode %q is not known; use full, sample (the default) or off", raw.Mode), "mirror", "verify", "mode")
	}
	if raw.Sample != nil {
		if v.Mode != VerifySample {
			return at(fmt.Sprintf("mirror.verify.sample is set but mode is %s; remove sample, or set mode: sample", v.Mode), "mirror", "verify", "sample")
		}
		if *raw.Sample < 2 {
			return at(fmt.Sprintf("mirror.verify.sample %d: use 2 or more (every Nth record), or mode: full to compare every record", *raw.Sample), "mirror", "verify", "sample")
		}
		v.Sample = *raw.Sample
	}
	if v.Mode == VerifyFull {
		v.Sample = 1
	}
	v.Interval = raw.Interval.or(DefaultVerifyInterval)
	if v.Interval < 100e6 {
		return at("mirror.verify.interval must be at least 100ms, e.g. 10s", "mirror", "verify", "interval")
	}
	t.Mirror.Verify = v
	return nil
}

func buildSelection(raw *rawSelection, defInclude []string) (Selection, error) {
	var s Selection
	if raw != nil {
		s.Include, s.Exclude = raw.Include, raw.Exclude
	}
	size := 0
	for _, e := range append(append([]string(nil), s.Include...), s.Exclude...) {
		size += len(e)
	}
	if size > MaxPatternBytes {
		return s, fmt.Errorf("the patterns add up to %d bytes; at most %d are allowed (write fewer, broader expressions)", size, MaxPatternBytes)
	}
	if len(s.Include) == 0 {
		s.Include = defInclude
	}
	var err error
	if s.include, err = compileAll(s.Include); err != nil {
		return s, fmt.Errorf("include: %w; fix the pattern (Go RE2 syntax, anchored at both ends)", err)
	}
	if s.exclude, err = compileAll(s.Exclude); err != nil {
		return s, fmt.Errorf("exclude: %w; fix the pattern (Go RE2 syntax, anchored at both ends)", err)
	}
	return s, nil
}

var mechanisms = map[string]string{
	"PLAIN":         sarama.SASLTypePlaintext,
	"SCRAM-SHA-256": sarama.SASLTypeSCRAMSHA256,
	"SCRAM-SHA-512": sarama.SASLTypeSCRAMSHA512,
}

func buildCluster(name string, rc *rawCluster, root *yaml.Node, path string) (*Cluster, error) {
	at := func(msg string, keys ...string) error {
		return &Error{Line: lineOf(root, append([]string{"clusters", name}, keys...)...), Msg: fmt.Sprintf("cluster %s: %s", name, msg)}
	}
	if !nameRE.MatchString(name) {
		return nil, at("the cluster name may hold only letters, digits, '.', '_' and '-'")
	}
	if rc == nil {
		return nil, at("is empty; give it at least bootstrap: [host:port]")
	}
	c := &Cluster{Name: name, ClientID: rc.ClientID, Version: rc.Version, Timeout: rc.Timeout.or(DefaultTimeout)}
	if len(rc.Bootstrap) == 0 {
		return nil, at("bootstrap is empty; list at least one broker as host:port", "bootstrap")
	}
	for i, b := range rc.Bootstrap {
		if problem := addressProblem(b); problem != "" {
			return nil, &Error{Line: itemLine(root, i, "clusters", name, "bootstrap"), Msg: fmt.Sprintf("cluster %s: bootstrap entry %q %s", name, b, problem)}
		}
	}
	c.Bootstrap = rc.Bootstrap
	if c.ClientID == "" {
		c.ClientID = DefaultClientID
	}
	if c.Version == "" {
		c.Version = DefaultVersion
	}
	v, err := sarama.ParseKafkaVersion(c.Version)
	if err != nil {
		return nil, at(fmt.Sprintf("version %q is not a Kafka version; write it like 3.6.0", c.Version), "version")
	}
	if !v.IsAtLeast(sarama.V3_6_0_0) {
		return nil, at(fmt.Sprintf("version %s is too old; drctl speaks Kafka 3.6.0 or newer (Kafka 4 brokers refuse older protocol versions)", c.Version), "version")
	}
	if c.Timeout <= 0 {
		return nil, at("timeout must be greater than zero, e.g. 10s", "timeout")
	}
	if rt := rc.TLS; rt != nil {
		c.TLS = &TLS{CAFile: rt.CAFile, CertFile: rt.CertFile, KeyFile: rt.KeyFile, ServerName: rt.ServerName, InsecureSkipVerify: rt.InsecureSkipVerify}
		if (rt.CertFile == "") != (rt.KeyFile == "") {
			return nil, at("tls needs both cert_file and key_file for a client certificate, or neither", "tls")
		}
		for key, f := range map[string]string{"ca_file": rt.CAFile, "cert_file": rt.CertFile, "key_file": rt.KeyFile} {
			if f == "" {
				continue
			}
			if _, err := os.Stat(f); err != nil {
				return nil, at(fmt.Sprintf("tls.%s %q cannot be read: %v", key, f, pathCause(err)), "tls", key)
			}
		}
	}
	if rs := rc.SASL; rs != nil {
		if _, ok := mechanisms[rs.Mechanism]; !ok {
			return nil, at(fmt.Sprintf("sasl.mechanism %q is not supported; use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", rs.Mechanism), "sasl", "mechanism")
		}
		if rs.Username == "" {
			return nil, at("sasl.username is missing", "sasl")
		}
		s := &SASL{Mechanism: rs.Mechanism, Username: rs.Username, Password: rs.Password}
		switch {
		case rs.Password != "" && rs.PasswordFile != "":
			return nil, at("sasl has both password and password_file; keep one", "sasl", "password_file")
		case rs.PasswordFile != "":
			b, err := readSmall(rs.PasswordFile, maxPasswordFile)
			if err != nil {
				return nil, at(fmt.Sprintf("sasl.password_file %q cannot be read: %v", rs.PasswordFile, pathCause(err)), "sasl", "password_file")
			}
			s.Password = strings.TrimRight(string(b), "\r\n")
		}
		if s.Password == "" {
			return nil, at("sasl has no password; set password: ${VAR} or password_file: PATH", "sasl")
		}
		c.SASL = s
	}
	return c, nil
}

// pathCause is the cause of a failed file operation without the path it
// names (a path from a ${VAR} is shown as written by the caller).
func pathCause(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}

// itemLine returns the line of the i-th item of the list at a key path, or
// the line of the key when the items cannot be found.
func itemLine(root *yaml.Node, i int, path ...string) int {
	if n := valueAt(root, path...); n != nil && n.Kind == yaml.SequenceNode && i < len(n.Content) {
		return n.Content[i].Line
	}
	return lineOf(root, path...)
}
