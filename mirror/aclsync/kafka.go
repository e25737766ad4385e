package aclsync

import (
	"context"
	"errors"
	"fmt"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/aclfence"
	"github.com/drctl/drctl/topology"
)

// List returns every ACL binding of a cluster. It needs Describe on the
// cluster (drctl is a super user where ACLs are used).
func List(admin sarama.ClusterAdmin) ([]Binding, error) {
	ras, err := admin.ListAcls(sarama.AclFilter{ResourceType: sarama.AclResourceAny, ResourcePatternTypeFilter: sarama.AclPatternAny,
		Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny})
	if err != nil {
		return nil, err
	}
	var out []Binding
	for _, ra := range ras {
		for _, a := range ra.Acls {
			out = append(out, Binding{ResourceType: ra.ResourceType, Resource: ra.ResourceName, Pattern: ra.ResourcePatternType,
				Principal: a.Principal, Host: a.Host, Operation: a.Operation, Permission: a.PermissionType})
		}
	}
	return out, nil
}

// Apply makes the plan's changes on the standby: first the additions, so
// that a principal never has fewer rights than on the active for longer
// than a round, then the removals, each by its exact binding, in as few
// DeleteAcls requests as the controller takes (aclfence.DeleteFilters; one
// request per binding waited for the controller each time). admin and
// client are the standby's.
func Apply(ctx context.Context, admin sarama.ClusterAdmin, client sarama.Client, p Plan) error {
	if len(p.Add) > 0 {
		req := make([]*sarama.ResourceAcls, 0, len(p.Add))
		for _, b := range p.Add {
			req = append(req, &sarama.ResourceAcls{
				Resource: sarama.Resource{ResourceType: b.ResourceType, ResourceName: b.Resource, ResourcePatternType: b.Pattern},
				Acls:     []*sarama.Acl{{Principal: b.Principal, Host: b.Host, Operation: b.Operation, PermissionType: b.Permission}},
			})
		}
		if err := admin.CreateACLs(req); err != nil {
			return fmt.Errorf("create %d ACL(s): %w (drctl needs Alter on the cluster)", len(p.Add), err)
		}
	}
	if len(p.Remove) == 0 {
		return nil
	}
	filters := make([]*sarama.AclFilter, len(p.Remove))
	for i, b := range p.Remove {
		name, principal, host := b.Resource, b.Principal, b.Host
		filters[i] = &sarama.AclFilter{ResourceType: b.ResourceType, ResourceName: &name, ResourcePatternTypeFilter: b.Pattern,
			Principal: &principal, Host: &host, Operation: b.Operation, PermissionType: b.Permission}
	}
	if err := aclfence.DeleteFilters(ctx, client, filters, func(i int) string { return p.Remove[i].String() }); err != nil {
		return fmt.Errorf("%w (drctl needs Alter on the cluster)", err)
	}
	return nil
}

// FenceGaps lists the fence ACLs the standby lacks: DENY WRITE for each
// fence principal on each mirrored topic it holds, and on each mirrored
// topic named in also (the active's topics, the topics of grants about to
// be copied), which the standby need not hold yet. Empty when the topology
// does not fence with ACLs.
func FenceGaps(topo *topology.Topology, admin sarama.ClusterAdmin, standby []Binding, also ...string) ([]aclfence.ACL, error) {
	if topo.Failover.Fence != topology.FenceACL {
		return nil, nil
	}
	topics, err := aclfence.MirroredTopicNames(admin, topo)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	topics = aclfence.WithMirrored(topo, topics, also)
	have := map[aclfence.ACL]bool{}
	for _, b := range standby {
		if b.ResourceType == sarama.AclResourceTopic && b.Pattern == sarama.AclPatternLiteral &&
			b.Operation == sarama.AclOperationWrite && b.Permission == sarama.AclPermissionDeny {
			have[aclfence.ACL{Topic: b.Resource, Principal: b.Principal, Host: b.Host}] = true
		}
	}
	var gaps []aclfence.ACL
	for _, t := range topics {
		for _, p := range aclfence.Principals(topo) {
			if a := (aclfence.ACL{Topic: t, Principal: p, Host: "*"}); !have[a] {
				gaps = append(gaps, a)
			}
		}
	}
	return gaps, nil
}

// ErrNoAuthorizer says a cluster has no authorizer (Kafka answers
// SECURITY_DISABLED): there are no ACLs to keep in step.
var ErrNoAuthorizer = errors.New("the cluster has no authorizer (no ACLs)")

func listing(admin sarama.ClusterAdmin, which string) ([]Binding, error) {
	bs, err := List(admin)
	switch {
	case errors.Is(err, sarama.ErrSecurityDisabled):
		return nil, fmt.Errorf("list the %s's ACLs: %w", which, ErrNoAuthorizer)
	case err != nil:
		return nil, fmt.Errorf("list the %s's ACLs: %w", which, err)
	}
	return bs, nil
}

// ErrNotSteady says a round did nothing because the live roles are not
// steady with this link's direction.
var ErrNotSteady = errors.New("the roles are not steady in this direction")

// Round is what one round did.
type Round struct {
	Applied Plan
	// Fenced counts fence ACLs added on the standby (new topics).
	Fenced int
}

// SyncOnce runs one round from the source (active) to the target
// (standby) through the given clients: it checks the roles (allowed),
// closes the standby fence's gaps through aclfence.FenceTopics, then
// applies the ACL diff. allowed is asked right before each change.
//
// The fence comes first and is verified before any grant is copied: it
// covers the standby's mirrored topics, the active's (a topic the mirror
// is about to create on the standby) and every topic a copied grant names
// (literal ACLs need no topic), so a grant such as ALLOW WRITE never
// reaches the standby ahead of the DENY WRITE that guards it. A round
// whose fence fails copies no grant.
func SyncOnce(ctx context.Context, topo *topology.Topology, target string, srcCl, dstCl sarama.Client, allowed func(context.Context) error) (Round, error) {
	var r Round
	if err := allowed(ctx); err != nil {
		return r, err
	}
	source, err := sarama.NewClusterAdminFromClient(srcCl)
	if err != nil {
		return r, err
	}
	dest, err := sarama.NewClusterAdminFromClient(dstCl)
	if err != nil {
		return r, err
	}
	src, err := listing(source, "active")
	if err != nil {
		return r, err
	}
	dst, err := listing(dest, "standby")
	if err != nil {
		return r, err
	}
	p := Diff(NewScope(topo), src, dst)
	var guard []string
	if topo.Failover.Fence == topology.FenceACL {
		if guard, err = aclfence.MirroredTopicNames(source, topo); err != nil {
			return r, fmt.Errorf("standby fence: list the active's topics: %w", err)
		}
		guard = append(guard, grantedTopics(p.Add)...)
	}
	gaps, err := FenceGaps(topo, dest, dst, guard...)
	if err != nil {
		return r, fmt.Errorf("standby fence: %w", err)
	}
	if len(gaps) > 0 {
		if err := allowed(ctx); err != nil {
			return r, err
		}
		if _, err := aclfence.FenceTopics(ctx, dstCl, topo, target, guard); err != nil {
			return r, fmt.Errorf("standby fence (no ACL copied until it holds): %w", err)
		}
		r.Fenced = len(gaps)
	}
	if p.Empty() {
		return r, nil
	}
	if err := allowed(ctx); err != nil {
		return r, err
	}
	if err := Apply(ctx, dest, dstCl, p); err != nil {
		return r, err
	}
	r.Applied = p
	return r, nil
}

// grantedTopics lists the topics that literal topic bindings of bs name.
func grantedTopics(bs []Binding) []string {
	var out []string
	for _, b := range bs {
		if b.ResourceType == sarama.AclResourceTopic && b.Pattern == sarama.AclPatternLiteral {
			out = append(out, b.Resource)
		}
	}
	return out
}
