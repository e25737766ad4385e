package aclsync

import (
	"fmt"
	"slices"
	"strings"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/aclfence"
	"github.com/drctl/drctl/topology"
)

// Binding is one ACL entry on one resource pattern: comparable, so that
// sets of bindings are maps.
type Binding struct {
	ResourceType sarama.AclResourceType        `json:"-"`
	Resource     string                        `json:"resource"`
	Pattern      sarama.AclResourcePatternType `json:"-"`
	Principal    string                        `json:"principal"`
	Host         string                        `json:"host"`
	Operation    sarama.AclOperation           `json:"-"`
	Permission   sarama.AclPermissionType      `json:"-"`
}

// String reads like Kafka's tools: "ALLOW WRITE for User:app from * on
// Topic:orders (literal)".
func (b Binding) String() string {
	return fmt.Sprintf("%s %s for %s from %s on %s", strings.ToUpper(b.Permission.String()), strings.ToUpper(b.Operation.String()),
		b.Principal, b.Host, b.ResourceString())
}

// ResourceString names the resource pattern: "Topic:orders (literal)".
func (b Binding) ResourceString() string {
	return fmt.Sprintf("%s:%s (%s)", b.ResourceType.String(), b.Resource, strings.ToLower(b.Pattern.String()))
}

// Scope decides which bindings the sync owns for a topology.
type Scope struct {
	topo   *topology.Topology
	drctl  map[string]bool
	fences map[string]bool
}

// NewScope returns the scope of topo's ACL sync. drctl's own principals
// are the SASL users of both clusters ("User:<username>"); with client
// certificates, exclude drctl's principal in mirror.acls.principals.
func NewScope(topo *topology.Topology) Scope {
	s := Scope{topo: topo, drctl: map[string]bool{}, fences: map[string]bool{}}
	for _, c := range topo.Clusters {
		if c.SASL != nil && c.SASL.Username != "" {
			s.drctl["User:"+c.SASL.Username] = true
		}
	}
	if topo.Failover.Fence == topology.FenceACL {
		for _, p := range aclfence.Principals(topo) {
			s.fences[p] = true
		}
	}
	return s
}

// Owns reports whether the sync keeps b in step: a selected principal
// (not drctl's), a resource the mirror covers, and not a fence ACL (DENY
// WRITE on a topic for a fence principal: drctl's fence owns those).
func (s Scope) Owns(b Binding) bool {
	if s.drctl[b.Principal] || !s.topo.Mirror.ACLs.Principals.Match(b.Principal) {
		return false
	}
	if s.isFence(b) {
		return false
	}
	switch b.ResourceType {
	case sarama.AclResourceTopic:
		return s.topo.Mirrors(b.Resource)
	case sarama.AclResourceGroup:
		return s.topo.SyncsGroup(b.Resource)
	case sarama.AclResourceTransactionalID:
		return s.topo.Mirror.ACLs.TransactionalIDs.Match(b.Resource)
	case sarama.AclResourceCluster:
		return s.topo.Mirror.ACLs.Cluster
	}
	return false
}

func (s Scope) isFence(b Binding) bool {
	return s.fences[b.Principal] && b.ResourceType == sarama.AclResourceTopic && b.Pattern == sarama.AclPatternLiteral &&
		b.Operation == sarama.AclOperationWrite && b.Permission == sarama.AclPermissionDeny && b.Host == "*"
}

// Plan is what one round changes on the standby.
type Plan struct {
	Add    []Binding `json:"add"`
	Remove []Binding `json:"remove"`
}

// Empty reports whether the plan changes nothing.
func (p Plan) Empty() bool { return len(p.Add) == 0 && len(p.Remove) == 0 }

// Diff returns what makes target's owned bindings equal source's: add
// what only source has, remove what only target has. Bindings outside the
// scope are left out on both sides. Worked example (app selected, drctl
// not): source {ALLOW WRITE app orders, ALLOW ALL drctl *}, target {ALLOW
// READ app orders, DENY WRITE User:* orders (the fence)} gives Add {ALLOW
// WRITE app orders}, Remove {ALLOW READ app orders}.
func Diff(scope Scope, source, target []Binding) Plan {
	src, dst := scope.set(source), scope.set(target)
	var p Plan
	for b := range src {
		if !dst[b] {
			p.Add = append(p.Add, b)
		}
	}
	for b := range dst {
		if !src[b] {
			p.Remove = append(p.Remove, b)
		}
	}
	sortBindings(p.Add)
	sortBindings(p.Remove)
	return p
}

func (s Scope) set(bs []Binding) map[Binding]bool {
	out := map[Binding]bool{}
	for _, b := range bs {
		if s.Owns(b) {
			out[b] = true
		}
	}
	return out
}

// PrincipalParity is one principal's ACL parity between the active and
// the standby.
type PrincipalParity struct {
	Principal string `json:"principal"`
	// InSync counts the bindings both clusters hold.
	InSync int `json:"in_sync"`
	// Missing are bindings the active holds and the standby lacks; Extra
	// the standby holds and the active does not.
	Missing []string `json:"missing,omitempty"`
	Extra   []string `json:"extra,omitempty"`
}

// InParity reports whether the standby holds exactly the active's bindings.
func (p PrincipalParity) InParity() bool { return len(p.Missing) == 0 && len(p.Extra) == 0 }

// Compare returns the parity of every principal that holds an owned
// binding on either cluster, sorted by principal.
func Compare(scope Scope, active, standby []Binding) []PrincipalParity {
	src, dst := scope.set(active), scope.set(standby)
	by := map[string]*PrincipalParity{}
	get := func(p string) *PrincipalParity {
		if by[p] == nil {
			by[p] = &PrincipalParity{Principal: p}
		}
		return by[p]
	}
	for b := range src {
		if dst[b] {
			get(b.Principal).InSync++
		} else {
			get(b.Principal).Missing = append(get(b.Principal).Missing, b.String())
		}
	}
	for b := range dst {
		if !src[b] {
			get(b.Principal).Extra = append(get(b.Principal).Extra, b.String())
		}
	}
	out := make([]PrincipalParity, 0, len(by))
	for _, p := range by {
		slices.Sort(p.Missing)
		slices.Sort(p.Extra)
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b PrincipalParity) int { return strings.Compare(a.Principal, b.Principal) })
	return out
}

func sortBindings(bs []Binding) {
	slices.SortFunc(bs, func(a, b Binding) int { return strings.Compare(a.String(), b.String()) })
}
