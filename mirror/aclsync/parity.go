package aclsync

import (
	"fmt"
	"strings"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/aclfence"
	"github.com/drctl/drctl/topology"
)

// Parity is the ACL view of status and validate --online: per principal,
// whether the standby holds the active's bindings, and whether drctl's
// fence keeps the applications off the standby's mirrored topics. It only
// reads.
type Parity struct {
	// Enabled is mirror.acls.enabled: false means the mirror does not
	// keep ACLs in step, and the figures are for information.
	Enabled    bool              `json:"enabled" yaml:"enabled"`
	Active     string            `json:"active" yaml:"active"`
	Standby    string            `json:"standby" yaml:"standby"`
	Principals []PrincipalParity `json:"principals" yaml:"principals"`
	// FenceGaps lists fence ACLs the standby lacks ("DENY WRITE for
	// User:app on Topic:orders"); empty with failover.fence none.
	FenceGaps []string `json:"fence_gaps,omitempty" yaml:"fence_gaps,omitempty"`
	// Error says why the ACLs could not be read (no authorizer, no
	// Describe permission); the rest is then empty.
	Error string `json:"error,omitempty" yaml:"error,omitempty"`
}

// ReadParity lists both clusters' ACLs and compares them.
func ReadParity(topo *topology.Topology, active, standby string, activeAdmin, standbyAdmin sarama.ClusterAdmin) Parity {
	p := Parity{Enabled: topo.Mirror.ACLs.Enabled, Active: active, Standby: standby}
	src, err := List(activeAdmin)
	if err != nil {
		p.Error = fmt.Sprintf("cannot list %s's ACLs: %v", active, err)
		return p
	}
	dst, err := List(standbyAdmin)
	if err != nil {
		p.Error = fmt.Sprintf("cannot list %s's ACLs: %v", standby, err)
		return p
	}
	p.Principals = Compare(NewScope(topo), src, dst)
	var also []string
	if topo.Failover.Fence == topology.FenceACL {
		if also, err = aclfence.MirroredTopicNames(activeAdmin, topo); err != nil {
			p.Error = fmt.Sprintf("cannot list %s's topics: %v", active, err)
			return p
		}
	}
	gaps, err := FenceGaps(topo, standbyAdmin, dst, also...)
	if err != nil {
		p.Error = fmt.Sprintf("cannot check %s's fence: %v", standby, err)
		return p
	}
	for _, g := range gaps {
		p.FenceGaps = append(p.FenceGaps, fmt.Sprintf("DENY WRITE for %s on Topic:%s", g.Principal, g.Topic))
	}
	return p
}

// Drifted lists the principals whose ACLs differ.
func (p Parity) Drifted() []PrincipalParity {
	var out []PrincipalParity
	for _, pp := range p.Principals {
		if !pp.InParity() {
			out = append(out, pp)
		}
	}
	return out
}

// Problems says, in plain words, what needs an operator: drift (the
// mirror's sync closes it within seconds; lasting drift means no mirror
// runs, or sync is off) and gaps in the standby's fence.
func (p Parity) Problems() []string {
	if p.Error != "" {
		return nil // an authorizer-less cluster has no ACLs to keep in step
	}
	var out []string
	fix := "drctl mirror run copies them within seconds; if this lasts, check that it runs"
	if !p.Enabled {
		fix = "mirror.acls.enabled is false: copy them by hand, or turn the sync on"
	}
	for _, pp := range p.Drifted() {
		out = append(out, fmt.Sprintf("ACLs of %s on %s differ from %s: %d missing, %d extra (%s)",
			pp.Principal, p.Standby, p.Active, len(pp.Missing), len(pp.Extra), fix))
	}
	if n := len(p.FenceGaps); n > 0 {
		shown := p.FenceGaps
		if n > 3 {
			shown = append(shown[:3:3], fmt.Sprintf("and %d more", n-3))
		}
		out = append(out, fmt.Sprintf("the standby %s is not fenced against the applications' writes: %s missing (drctl mirror run adds them, or drctl fence %s)",
			p.Standby, strings.Join(shown, ", "), p.Standby))
	}
	return out
}
