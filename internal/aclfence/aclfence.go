package aclfence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/cenkalti/backoff/v5"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/kvstore"
	"github.com/drctl/drctl/topology"
)

// ACL is one DENY WRITE ACL drctl added on a topic.
type ACL struct {
	Topic     string `json:"topic"`
	Principal string `json:"principal"`
	Host      string `json:"host"`
}

// Record is what a cluster remembers of its fence.
type Record struct {
	Cluster string `json:"cluster"`
	Added   []ACL  `json:"added"`
	// Existing lists ACLs that were there before drctl fenced: they are
	// part of the fence but unfence leaves them alone.
	Existing []ACL `json:"existing,omitempty"`
}

// Principals returns the principals an acl fence denies: the configured
// producer principals, or everyone ("User:*"; drctl itself must then be a
// super user, as Kafka ACLs have no "except").
func Principals(topo *topology.Topology) []string {
	if len(topo.Failover.ProducerPrincipals) > 0 {
		return topo.Failover.ProducerPrincipals
	}
	return []string{"User:*"}
}

// Fence adds DENY WRITE ACLs for the fence principals on every selected
// topic of cluster, reads them back to verify, and records what it added
// on the cluster. It is idempotent: ACLs already there are not added twice,
// and the record keeps what an earlier call added. client is a client of
// cluster that the caller owns (its session's).
func Fence(ctx context.Context, client sarama.Client, topo *topology.Topology, cluster string) (*Record, error) {
	return FenceTopics(ctx, client, topo, cluster, nil)
}

// FenceTopics is Fence over the cluster's mirrored topics and, in
// addition, the mirrored topics named in also, which need not exist on the
// cluster: a literal ACL names a topic without needing it. A standby is so
// fenced for a topic before the mirror creates it there and before any
// grant on it arrives, so there is no moment in which an application may
// write to it. Names in also that topo does not mirror are ignored.
func FenceTopics(ctx context.Context, client sarama.Client, topo *topology.Topology, cluster string, also []string) (*Record, error) {
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return nil, fmt.Errorf("fence %s: %w", cluster, err)
	}
	rec, err := readFence(ctx, client, topo.Name)
	if err != nil {
		return nil, fmt.Errorf("fence %s: %w", cluster, err)
	}
	rec.Cluster = cluster
	topics, err := MirroredTopicNames(admin, topo)
	if err != nil {
		return nil, fmt.Errorf("fence %s: list topics: %w", cluster, err)
	}
	topics = WithMirrored(topo, topics, also)
	have, err := denyWrites(admin)
	if err != nil {
		return nil, fmt.Errorf("fence %s: list ACLs: %w (drctl needs Describe on the cluster, and an authorizer must be configured for acl fencing; or set failover.fence: none)", cluster, err)
	}
	ours := map[ACL]bool{}
	for _, a := range rec.Added {
		ours[a] = true
	}
	var add []*sarama.ResourceAcls
	for _, t := range topics {
		for _, p := range Principals(topo) {
			a := ACL{Topic: t, Principal: p, Host: "*"}
			switch {
			case have[a] && !ours[a]:
				if !contains(rec.Existing, a) {
					rec.Existing = append(rec.Existing, a)
				}
			case !have[a]:
				add = append(add, &sarama.ResourceAcls{
					Resource: sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: t, ResourcePatternType: sarama.AclPatternLiteral},
					Acls:     []*sarama.Acl{{Principal: p, Host: "*", Operation: sarama.AclOperationWrite, PermissionType: sarama.AclPermissionDeny}},
				})
				if !ours[a] {
					rec.Added = append(rec.Added, a)
					ours[a] = true
				}
			}
		}
	}
	// Record first: a crash between adding and recording must not leave
	// ACLs that unfence does not know about.
	if err := writeFence(ctx, client, topo.Name, rec); err != nil {
		err = fmt.Errorf("fence %s: record: %w", cluster, err)
		if errors.Is(err, sarama.ErrLeaderNotAvailable) {
			return nil, notShownError{err} // the record's topic, created and not led yet
		}
		return nil, err
	}
	if len(add) > 0 {
		if err := admin.CreateACLs(add); err != nil {
			return nil, fmt.Errorf("fence %s: create ACLs: %w (drctl needs Alter on the cluster)", cluster, err)
		}
	}
	if err := verifyFence(ctx, admin, topo, cluster, topics); err != nil {
		return nil, err
	}
	return rec, nil
}

// verifyWithin bounds how long Fence waits for its ACLs to be listed;
// verifyFirst and verifyMax bound the pauses between two looks (doubling,
// with jitter).
const (
	verifyWithin = 15 * time.Second
	verifyFirst  = 100 * time.Millisecond
	verifyMax    = time.Second
)

// verifyFence waits until cluster lists a DENY WRITE ACL for every fence
// principal on every topic of topics. ACLs are eventually consistent: a
// broker answers CreateAcls once the controller has committed them, and
// lists them a little later: seconds later when it is busy applying other
// metadata first (a standby creating thousands of partitions). Every look
// lists every DENY WRITE ACL of the cluster, so the looks back off from
// verifyFirst to verifyMax (github.com/cenkalti/backoff/v5): a look every
// 100 ms kept such a broker's request handlers busy listing ACLs for a
// third of their time.
func verifyFence(ctx context.Context, admin sarama.ClusterAdmin, topo *topology.Topology, cluster string, topics []string) error {
	var missing string
	var failed error // the listing failed: no retry
	errMissing := errors.New("missing")
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.RandomizationFactor = verifyFirst, verifyMax, 0.2
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		have, err := denyWrites(admin)
		if err != nil {
			failed = fmt.Errorf("fence %s: verify: %w", cluster, err)
			return struct{}{}, backoff.Permanent(failed)
		}
		missing = ""
		for _, t := range topics {
			for _, p := range Principals(topo) {
				if missing == "" && !have[ACL{Topic: t, Principal: p, Host: "*"}] {
					missing = fmt.Sprintf("the DENY WRITE ACL for %s on topic %s", p, t)
				}
			}
		}
		if missing != "" {
			return struct{}{}, errMissing
		}
		return struct{}{}, nil
	}, backoff.WithBackOff(b), backoff.WithMaxElapsedTime(verifyWithin))
	switch {
	case err == nil:
		return nil
	case failed != nil:
		return failed
	case ctx.Err() != nil:
		return fmt.Errorf("fence %s: verify: %s is not there: %w", cluster, missing, ctx.Err())
	}
	return notShownError{fmt.Errorf("fence %s: verify: %s is not there %v after creating it", cluster, missing, verifyWithin)}
}

// ErrNotShown means the cluster accepted what a fence wrote (its ACLs, or
// the topic of its record) and does not show it yet: a broker busy
// applying other metadata first (a standby creating thousands of
// partitions) shows it seconds later. It is no refusal; a fence tried
// again later usually finds it there.
var ErrNotShown = errors.New("not shown by the cluster yet")

// notShownError is an error of a fence that its cluster does not show yet; it
// is ErrNotShown, and says what is missing.
type notShownError struct{ err error }

func (e notShownError) Error() string        { return e.err.Error() }
func (e notShownError) Unwrap() error        { return e.err }
func (e notShownError) Is(target error) bool { return target == ErrNotShown }

// Unfence removes exactly the ACLs drctl's fence added on cluster and
// clears the record; ACLs that existed before the fence stay.
func Unfence(ctx context.Context, client sarama.Client, topo *topology.Topology, cluster string) ([]ACL, error) {
	rec, err := readFence(ctx, client, topo.Name)
	if err != nil {
		return nil, fmt.Errorf("unfence %s: %w", cluster, err)
	}
	if err := deleteACLs(ctx, client, rec.Added); err != nil {
		return nil, fmt.Errorf("unfence %s: %w", cluster, err)
	}
	removed := rec.Added
	if err := writeFence(ctx, client, topo.Name, &Record{Cluster: cluster}); err != nil {
		return nil, fmt.Errorf("unfence %s: record: %w", cluster, err)
	}
	return removed, nil
}

// deleteBatch bounds the ACL filters of one DeleteAcls request: the
// controller writes a record per ACL deleted, and one request of tens of
// thousands would be one very large controller operation.
const deleteBatch = 500

// deleteACLs deletes acls, each a DENY WRITE on a literal topic, in
// DeleteAcls requests of up to deleteBatch filters (see DeleteFilters): one
// request per ACL (as sarama's ClusterAdmin.DeleteACL sends) waits for the
// controller each time, and 100 took 3 s of a failover.
func deleteACLs(ctx context.Context, client sarama.Client, acls []ACL) error {
	filters := make([]*sarama.AclFilter, len(acls))
	for i, a := range acls {
		topic, principal, host := a.Topic, a.Principal, a.Host
		filters[i] = &sarama.AclFilter{ResourceType: sarama.AclResourceTopic, ResourceName: &topic,
			ResourcePatternTypeFilter: sarama.AclPatternLiteral, Principal: &principal, Host: &host,
			Operation: sarama.AclOperationWrite, PermissionType: sarama.AclPermissionDeny}
	}
	return DeleteFilters(ctx, client, filters, func(i int) string {
		return fmt.Sprintf("the ACL on %s for %s", acls[i].Topic, acls[i].Principal)
	})
}

// DeleteFilters deletes the ACLs that match filters, in DeleteAcls requests
// of up to 500 filters sent to the controller, retrying a transient failure
// (a controller that moved, a broken connection) with a fresh controller
// within kafkaread's Patient policy: a filter that matches nothing (an ACL
// deleted already) is no error, so a request is sent again whole. name
// describes filters[i] for an error. The first filter the controller
// refuses is returned as an error; the filters of earlier requests are
// deleted by then.
func DeleteFilters(ctx context.Context, client sarama.Client, filters []*sarama.AclFilter, name func(i int) string) error {
	version := client.Config().Version
	for at := 0; at < len(filters); at += deleteBatch {
		chunk := filters[at:min(at+deleteBatch, len(filters))]
		req := &sarama.DeleteAclsRequest{Filters: chunk}
		switch {
		case version.IsAtLeast(sarama.V2_5_0_0):
			req.Version = 2
		case version.IsAtLeast(sarama.V2_0_0_0):
			req.Version = 1
		}
		if err := deleteACLRequest(ctx, client, req, func(i int) string { return name(at + i) }); err != nil {
			return err
		}
	}
	return nil
}

// deleteACLRequest sends req to the controller, retrying a transient
// failure with a fresh controller within kafkaread's Patient policy; name
// describes the i-th filter of req.
func deleteACLRequest(ctx context.Context, client sarama.Client, req *sarama.DeleteAclsRequest, name func(i int) string) error {
	return kafkaread.Do(ctx, kafkaread.Patient, func(attempt int) error {
		b, err := client.Controller()
		if attempt > 0 {
			b, err = client.RefreshController()
		}
		if err != nil {
			return fmt.Errorf("controller: %w", err)
		}
		rsp, err := b.DeleteAcls(req)
		if err != nil {
			return err
		}
		for i, fr := range rsp.FilterResponses {
			if errors.Is(fr.Err, sarama.ErrNoError) {
				continue
			}
			what := "an ACL"
			if i < len(req.Filters) {
				what = name(i)
			}
			msg := ""
			if fr.ErrMsg != nil && *fr.ErrMsg != "" {
				msg = ": " + *fr.ErrMsg
			}
			return fmt.Errorf("delete %s: %w%s", what, fr.Err, msg)
		}
		return nil
	})
}

func denyWrites(admin sarama.ClusterAdmin) (map[ACL]bool, error) {
	acls, err := admin.ListAcls(sarama.AclFilter{ResourceType: sarama.AclResourceTopic, ResourcePatternTypeFilter: sarama.AclPatternLiteral,
		Operation: sarama.AclOperationWrite, PermissionType: sarama.AclPermissionDeny})
	if err != nil {
		return nil, err
	}
	out := map[ACL]bool{}
	for _, ra := range acls {
		for _, a := range ra.Acls {
			out[ACL{Topic: ra.ResourceName, Principal: a.Principal, Host: a.Host}] = true
		}
	}
	return out, nil
}

func readFence(ctx context.Context, client sarama.Client, topo string) (*Record, error) {
	raw, found, err := kvstore.Get(ctx, client, topology.FenceTopic, topo)
	if err != nil || !found || len(raw) == 0 {
		return &Record{}, err
	}
	rec, err := decodeFence(raw)
	if err != nil {
		return nil, fmt.Errorf("fence record of %s is unreadable: %w", topo, err)
	}
	return rec, nil
}

// decodeFence decodes a fence record. Every ACL it lists must name a
// topic, a principal and a host: unfence deletes exactly these.
func decodeFence(raw []byte) (*Record, error) {
	var rec Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, err
	}
	for _, list := range [][]ACL{rec.Added, rec.Existing} {
		for _, a := range list {
			if a.Topic == "" || a.Principal == "" || a.Host == "" {
				return nil, fmt.Errorf("an ACL without a topic, principal or host: %+v", a)
			}
		}
	}
	return &rec, nil
}

func writeFence(ctx context.Context, client sarama.Client, topo string, rec *Record) error {
	slices.SortFunc(rec.Added, func(a, b ACL) int { return strings.Compare(a.Topic+a.Principal, b.Topic+b.Principal) })
	raw, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return kvstore.Put(ctx, client, topology.FenceTopic, topo, raw)
}

func contains(list []ACL, a ACL) bool {
	return slices.Contains(list, a)
}

// WithMirrored returns topics together with the names of also that topo
// mirrors, sorted and without repeats.
func WithMirrored(topo *topology.Topology, topics, also []string) []string {
	out := slices.Clone(topics)
	for _, t := range also {
		if topo.Mirrors(t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// MirroredTopicNames lists, sorted, the topics of a cluster that topo
// mirrors (topology.Topology.Mirrors): the topics a fence covers.
func MirroredTopicNames(admin sarama.ClusterAdmin, topo *topology.Topology) ([]string, error) {
	all, err := kafkaread.ListTopics(admin)
	if err != nil {
		return nil, err
	}
	var out []string
	for name := range all {
		if topo.Mirrors(name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}
