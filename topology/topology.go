package topology

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"regexp/syntax"
	"slices"
	"time"
)

// Delivery is the mirror's delivery guarantee.
type Delivery string

const (
	ExactlyOnce Delivery = "exactly-once"
	AtLeastOnce Delivery = "at-least-once"
)

// FenceMode says how a failover stops writes on the old active cluster.
type FenceMode string

const (
	FenceACL  FenceMode = "acl"
	FenceNone FenceMode = "none"
)

// Topology is a loaded, expanded and validated topology file.
type Topology struct {
	Name     string
	Clusters map[string]*Cluster
	// Active and Standby are the home roles. The live roles are kept in the
	// clusters themselves (see internal/rolestate); these are only the
	// initial state and the target of a failback.
	Active   string
	Standby  string
	Mirror   Mirror
	Failover Failover
	Drills   Drills

	// Path is the file the topology was read from; Digest is the hex SHA-256
	// of its bytes before expansion (so secrets do not influence it), used to
	// recognise a plan built against another topology.
	Path   string
	Digest string

	// Warnings are what loading found worth fixing but not fatal: a
	// cluster named twice, secrets readable by others. `drctl validate`
	// reports them.
	Warnings []Warning

	// literalPasswords holds, per cluster, the line of a password written
	// in the file itself; Load warns when others may read the file.
	literalPasswords map[string]int
}

// Cluster is one Kafka cluster of the topology.
type Cluster struct {
	Name      string
	Bootstrap []string
	ClientID  string
	// Version is the Kafka protocol version drctl speaks to this cluster.
	Version string
	TLS     *TLS
	SASL    *SASL
	// Timeout bounds every single request and the dial to this cluster.
	Timeout time.Duration
}

// TLS configures an encrypted connection. A zero CAFile uses the system roots.
type TLS struct {
	CAFile             string
	CertFile           string
	KeyFile            string
	ServerName         string
	InsecureSkipVerify bool
}

// SASL configures authentication. Password is never printed: use
// Cluster.Redacted for anything a person or a log may see.
type SASL struct {
	Mechanism string // PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
	Username  string
	Password  string
}

// Mirror is what the mirror copies and how.
type Mirror struct {
	Topics   Selection
	Groups   Selection
	Delivery Delivery
	// GroupSyncInterval is how often translated group positions are
	// committed on the standby.
	GroupSyncInterval time.Duration
	// ACLs is what the mirror's ACL sync keeps in step on the standby.
	ACLs ACLSync
	// Verify is how `drctl mirror run` proves what it copied.
	Verify MirrorVerify
}

// VerifyMode says how the mirror's verifier compares what the link wrote.
type VerifyMode string

const (
	// VerifyFull compares every record the link copied with its source
	// record, and looks for standby records no source record maps to.
	VerifyFull VerifyMode = "full"
	// VerifySample compares every Sample-th copied record only.
	VerifySample VerifyMode = "sample"
	// VerifyOff runs no verifier.
	VerifyOff VerifyMode = "off"
)

// MirrorVerify is the continuous proof `drctl mirror run` keeps beside the
// link it runs: a verifier that follows what the link wrote, compares it
// with the source through the offset map (reading both clusters) and keeps
// a per-partition watermark on the standby.
type MirrorVerify struct {
	Mode VerifyMode
	// Sample is N of sample mode: every Nth copied record is compared.
	Sample int
	// Interval is the pause between two rounds of the verifier.
	Interval time.Duration
}

// ACLSync selects the ACLs the mirror copies from the active to the
// standby: those of the selected principals on the mirrored topics and
// groups, and, when selected, on transactional ids and the cluster.
// drctl's own principal and drctl's fence ACLs are never copied.
type ACLSync struct {
	Enabled bool
	// Principals are matched against the whole principal ("User:app").
	Principals Selection
	// TransactionalIDs selects transactional-id ACLs (none by default).
	TransactionalIDs Selection
	// Cluster copies cluster-level ACLs (IdempotentWrite, ...).
	Cluster  bool
	Interval time.Duration
}

// Failover holds the settings of failover, failback and reseed.
type Failover struct {
	DrainTimeout time.Duration
	// QuietPeriod is how long the source end offsets must stay still before
	// the drain counts as complete.
	QuietPeriod time.Duration
	Fence       FenceMode
	// ProducerPrincipals are denied writes by an acl fence. Empty means every
	// principal but drctl's own ("User:*", drctl must be a super user).
	ProducerPrincipals []string
	// SalvageTopicSuffix names the quarantine topic on the new active.
	SalvageTopicSuffix string
	HooksBefore        []string
	HooksAfter         []string
	// ClientsTimeout is how long a wipe waits for application consumers
	// (members of selected groups) to leave the cluster it wipes before it
	// refuses, naming them.
	ClientsTimeout time.Duration
}

// Selection is an include/exclude pair of anchored regular expressions.
// A name is selected when it matches an include and no exclude.
type Selection struct {
	Include []string
	Exclude []string

	include []*regexp.Regexp
	exclude []*regexp.Regexp
}

// Match reports whether name is selected.
func (s Selection) Match(name string) bool {
	for _, re := range s.exclude {
		if re.MatchString(name) {
			return false
		}
	}
	for _, re := range s.include {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

// Filter returns the selected names, sorted.
func (s Selection) Filter(names []string) []string {
	var out []string
	for _, n := range names {
		if s.Match(n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func compileAll(exprs []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(exprs))
	for _, e := range exprs {
		re, err := regexp.Compile("^(?:" + e + ")$")
		if err != nil {
			// The parser's message repeats the expression; keep only its
			// code, since the expression may come from a ${VAR}.
			if se, ok := errors.AsType[*syntax.Error](err); ok {
				return nil, fmt.Errorf("bad regular expression %q: %s", e, se.Code)
			}
			return nil, fmt.Errorf("bad regular expression %q: %v", e, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// ClusterNames returns the cluster names, sorted.
func (t *Topology) ClusterNames() []string {
	return slices.Sorted(maps.Keys(t.Clusters))
}

// Other returns the name of the cluster that is not name (a topology has
// exactly two clusters).
func (t *Topology) Other(name string) string {
	for n := range t.Clusters {
		if n != name {
			return n
		}
	}
	return ""
}
