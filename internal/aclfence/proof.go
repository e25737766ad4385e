package aclfence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// Proof is what Prove found on one cluster.
type Proof struct {
	// Why says why the fence is not proven ("" when it is).
	Why string
	// Brokers and Topics are how many brokers answered and how many
	// mirrored topics each was checked for.
	Brokers int
	Topics  int
}

// Proven reports whether every broker refuses writes to every mirrored
// topic for every principal but drctl's.
func (p Proof) Proven() bool { return p.Why == "" }

// Self is drctl's own principal on cluster c, as Kafka's default principal
// builder names a SASL login ("User:<username>"), or "" when drctl does not
// log in with SASL: then its principal (ANONYMOUS, or a certificate's name
// after the broker's mapping rules) cannot be told from a producer's, and
// no fence can be proven.
func Self(c *topology.Cluster) string {
	if c == nil || c.SASL == nil || c.SASL.Username == "" {
		return ""
	}
	return "User:" + c.SASL.Username
}

// Prove asks every broker of the cluster behind client for the topic ACLs
// its own authorizer holds, and checks, for every topic of the cluster
// that topo mirrors now (a topic created after the fence counts too), that
// they refuse WRITE to every principal but drctl's: a DENY for "User:*",
// or a DENY for every principal that an ALLOW lets write. Super users pass
// every ACL; drctl must be one, and no producer should be.
//
// Reading the ACLs from every broker, not only from the controller, is
// what makes it a proof: each broker authorises the produce requests it
// receives from its own copy of the ACLs. A produce request the broker
// authorised before the ACL reached it may still append a little later:
// the caller bounds that by measuring the end offsets again after a short
// settle.
//
// An error means a broker could not be asked; Proof.Why says why a
// fence that could be read is not a proof.
func Prove(ctx context.Context, client sarama.Client, topo *topology.Topology, cluster string) (Proof, error) {
	self := Self(topo.Clusters[cluster])
	if self == "" {
		return Proof{Why: fmt.Sprintf("drctl does not log in to %s with SASL, so its principal cannot be told from the producers'", cluster)}, nil
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return Proof{}, err
	}
	topics, err := MirroredTopicNames(admin, topo)
	if err != nil {
		return Proof{}, fmt.Errorf("list topics: %w", err)
	}
	if err := client.RefreshMetadata(); err != nil {
		return Proof{}, fmt.Errorf("brokers: %w", err)
	}
	brokers := client.Brokers()
	if len(brokers) == 0 {
		return Proof{}, sarama.ErrOutOfBrokers
	}
	slices.SortFunc(brokers, func(a, b *sarama.Broker) int { return int(a.ID() - b.ID()) })
	proof := Proof{Brokers: len(brokers), Topics: len(topics)}
	for _, b := range brokers {
		acls, err := brokerTopicACLs(ctx, client, b)
		if errors.Is(err, sarama.ErrSecurityDisabled) {
			proof.Why = fmt.Sprintf("broker %d of %s has no authorizer", b.ID(), cluster)
			return proof, nil
		}
		if err != nil {
			return Proof{}, fmt.Errorf("ACLs of broker %d: %w", b.ID(), err)
		}
		for _, t := range topics {
			if why := writableBy(t, acls, self); why != "" {
				proof.Why = fmt.Sprintf("broker %d of %s: %s", b.ID(), cluster, why)
				return proof, nil
			}
		}
	}
	return proof, nil
}

// topicACL is one ACL on a topic resource, as a broker lists it.
type topicACL struct {
	Name      string
	Prefixed  bool // a PREFIXED pattern; otherwise LITERAL ("*": every topic)
	Principal string
	Host      string
	Op        sarama.AclOperation
	Allow     bool
}

func (a topicACL) matches(topic string) bool {
	if a.Prefixed {
		return strings.HasPrefix(topic, a.Name)
	}
	return a.Name == topic || a.Name == "*"
}

func (a topicACL) coversWrite() bool {
	return a.Op == sarama.AclOperationWrite || a.Op == sarama.AclOperationAll
}

// writableBy returns "" when the ACLs refuse WRITE on topic to every
// principal but self, or names one that may write. Only a DENY for every
// host counts; an ALLOW for any host does.
//
// Worked example, self "User:drctl", topic "orders":
//
//	DENY  WRITE orders    User:*     *     -> ""  (everyone denied)
//	DENY  WRITE orders    User:app   *
//	ALLOW WRITE *         User:app   *     -> ""  (app denied, no one else allowed)
//	  + ALLOW ALL or-*    User:batch *     -> "User:batch may write to orders ..."
//	  + ALLOW WRITE *     User:drctl *     -> ""  (drctl's own)
//	no DENY at all                         -> "no DENY WRITE ..." (with
//	  allow.everyone.if.no.acl.found a topic without ACLs is open)
func writableBy(topic string, acls []topicACL, self string) string {
	denied := map[string]bool{}
	for _, a := range acls {
		if !a.Allow && a.Host == "*" && a.coversWrite() && a.matches(topic) {
			denied[a.Principal] = true
		}
	}
	if denied["User:*"] {
		return ""
	}
	if len(denied) == 0 {
		return fmt.Sprintf("no DENY WRITE ACL covers topic %s", topic)
	}
	for _, a := range acls {
		if !a.Allow || !a.coversWrite() || !a.matches(topic) || denied[a.Principal] || a.Principal == self {
			continue
		}
		return fmt.Sprintf("%s may write to topic %s (an ALLOW %s on %s, and no DENY WRITE for it)", a.Principal, topic, a.Op.String(), a.pattern())
	}
	return ""
}

func (a topicACL) pattern() string {
	if a.Prefixed {
		return a.Name + "* (prefixed)"
	}
	return a.Name
}

// brokerTopicACLs asks broker b itself (not the controller) for every ACL
// on a topic resource.
func brokerTopicACLs(ctx context.Context, client sarama.Client, b *sarama.Broker) ([]topicACL, error) {
	if err := kafkaread.Connected(ctx, b, client.Config()); err != nil {
		return nil, err
	}
	req := &sarama.DescribeAclsRequest{Version: 1, AclFilter: sarama.AclFilter{Version: 1, ResourceType: sarama.AclResourceTopic,
		ResourcePatternTypeFilter: sarama.AclPatternAny, Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny}}
	resp, err := kafkaread.Await(ctx, func() (*sarama.DescribeAclsResponse, error) { return b.DescribeAcls(req) })
	if err != nil {
		return nil, err
	}
	if resp.Err != sarama.ErrNoError {
		msg := ""
		if resp.ErrMsg != nil {
			msg = ": " + *resp.ErrMsg
		}
		return nil, fmt.Errorf("%w%s", resp.Err, msg)
	}
	var out []topicACL
	for _, ra := range resp.ResourceAcls {
		for _, a := range ra.Acls {
			out = append(out, topicACL{Name: ra.ResourceName, Prefixed: ra.ResourcePatternType == sarama.AclPatternPrefixed,
				Principal: a.Principal, Host: a.Host, Op: a.Operation, Allow: a.PermissionType == sarama.AclPermissionAllow})
		}
	}
	return out, nil
}
