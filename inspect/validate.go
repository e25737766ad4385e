package inspect

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/mirror/aclsync"
	"github.com/drctl/drctl/topology"
)

// CheckResult is the vocabulary of a validation check.
type CheckResult string

const (
	CheckOK   CheckResult = "OK"
	CheckWarn CheckResult = "WARN"
	CheckFail CheckResult = "FAIL"
)

// Check is one finding of `drctl validate --online`.
type Check struct {
	Cluster string      `json:"cluster" yaml:"cluster"`
	Name    string      `json:"check" yaml:"check"`
	Result  CheckResult `json:"result" yaml:"result"`
	Detail  string      `json:"detail" yaml:"detail"`
}

// Validation is the report of `drctl validate`.
type Validation struct {
	Topology string  `json:"topology" yaml:"topology"`
	File     string  `json:"file" yaml:"file"`
	Online   bool    `json:"online" yaml:"online"`
	Checks   []Check `json:"checks" yaml:"checks"`
}

// Failed reports whether any check failed.
func (v *Validation) Failed() bool { return v.count(CheckFail) > 0 }

// Unreachable reports whether a cluster could not be reached.
func (v *Validation) Unreachable() bool {
	for _, c := range v.Checks {
		if c.Name == "reachable" && c.Result == CheckFail {
			return true
		}
	}
	return false
}

func (v *Validation) count(r CheckResult) int {
	n := 0
	for _, c := range v.Checks {
		if c.Result == r {
			n++
		}
	}
	return n
}

// ValidateOffline describes a topology that loaded (loading already
// checked everything that can be checked without a network).
func ValidateOffline(topo *topology.Topology) *Validation {
	v := &Validation{Topology: topo.Name, File: topo.Path}
	for _, name := range topo.ClusterNames() {
		c := topo.Clusters[name]
		v.Checks = append(v.Checks, Check{Cluster: name, Name: "config", Result: CheckOK, Detail: c.Redacted()})
	}
	v.Checks = append(v.Checks, Check{Name: "roles", Result: CheckOK, Detail: fmt.Sprintf("home active %s, home standby %s", topo.Active, topo.Standby)},
		Check{Name: "mirror", Result: CheckOK, Detail: fmt.Sprintf("topics %v excluding %v; groups %v excluding %v; %s",
			topo.Mirror.Topics.Include, topo.Mirror.Topics.Exclude, topo.Mirror.Groups.Include, topo.Mirror.Groups.Exclude, topo.Mirror.Delivery)})
	// What loading found worth fixing (a cluster named twice, secrets
	// others may read) is a warning: validate still exits 0.
	for _, w := range topo.Warnings {
		v.Checks = append(v.Checks, Check{Cluster: w.Cluster, Name: w.Rule, Result: CheckWarn, Detail: w.String()})
	}
	return v
}

// Kafka ACL operation codes, as bits of an authorized-operations field.
const (
	opRead            = 3
	opWrite           = 4
	opCreate          = 5
	opDelete          = 6
	opAlter           = 7
	opDescribe        = 8
	opDescribeConfigs = 10
	opAlterConfigs    = 11
	opIdempotentWrite = 12
	opsNotProvided    = -2147483648
)

var opNames = map[int]string{opRead: "Read", opWrite: "Write", opCreate: "Create", opDelete: "Delete", opAlter: "Alter",
	opDescribe: "Describe", opDescribeConfigs: "DescribeConfigs", opAlterConfigs: "AlterConfigs", opIdempotentWrite: "IdempotentWrite"}

// missingOps lists the operations of want that the bit field does not allow.
func missingOps(authorized int32, want ...int) []string {
	var out []string
	for _, op := range want {
		if authorized&(1<<op) == 0 {
			out = append(out, opNames[op])
		}
	}
	return out
}

// ValidateOnline runs the offline checks and then, on both clusters at
// once: reachability and authentication, broker version, the permissions
// drctl needs, and which selected topics and groups exist. It changes
// nothing on either cluster.
func ValidateOnline(ctx context.Context, clusters *kafkaconn.Clusters) *Validation {
	topo := clusters.Topology()
	v := ValidateOffline(topo)
	v.Online = true
	clusters.Connect(ctx)
	results := make([][]Check, len(topo.ClusterNames()))
	ids := make([]string, len(results))
	var wg sync.WaitGroup
	for i, name := range topo.ClusterNames() {
		wg.Go(func() {
			results[i], ids[i] = checkCluster(ctx, topo, clusters, topo.Clusters[name])
		})
	}
	wg.Wait()
	for _, r := range results {
		v.Checks = append(v.Checks, r...)
	}
	if ids[0] != "" && ids[0] == ids[1] {
		v.Checks = append(v.Checks, Check{Name: "distinct clusters", Result: CheckFail,
			Detail: fmt.Sprintf("both clusters have cluster id %s: the topology points twice at the same cluster; fix the bootstrap addresses", ids[0])})
	}
	if ids[0] != "" && ids[1] != "" && ids[0] != ids[1] {
		v.Checks = append(v.Checks, aclParityChecks(ctx, clusters)...)
	}
	return v
}

// aclParityChecks compares the standby's ACLs with the active's, per
// principal, and checks the standby's write fence (mirror/aclsync). Drift
// is a warning: the mirror's ACL sync closes it within seconds. It reads
// only, and says nothing while the roles move or without an authorizer.
func aclParityChecks(ctx context.Context, clusters *kafkaconn.Clusters) []Check {
	topo := clusters.Topology()
	clients := clusters.Clients()
	if len(clients) < len(topo.ClusterNames()) {
		return nil
	}
	v, _ := rolestate.ResolveLive(ctx, clusters)
	st := v.Current
	if st.Phase != rolestate.PhaseSteady && st.Phase != "" {
		return nil
	}
	aa, err := sarama.NewClusterAdminFromClient(clients[st.Active])
	if err != nil {
		return nil
	}
	sa, err := sarama.NewClusterAdminFromClient(clients[st.Standby])
	if err != nil {
		return nil
	}
	p := aclsync.ReadParity(topo, st.Active, st.Standby, aa, sa)
	if p.Error != "" {
		return []Check{{Cluster: st.Standby, Name: "acl parity", Result: CheckOK, Detail: "not checked: " + p.Error}}
	}
	var out []Check
	if len(p.Principals) == 0 {
		out = append(out, Check{Cluster: st.Standby, Name: "acl parity", Result: CheckOK, Detail: "no application ACLs on the mirrored topics and groups of either cluster"})
	}
	for _, pp := range p.Principals {
		c := Check{Cluster: st.Standby, Name: "acl parity", Result: CheckOK, Detail: fmt.Sprintf("%s: %d ACL(s) as on %s", pp.Principal, pp.InSync, st.Active)}
		if !pp.InParity() {
			c.Result = CheckWarn
			var diff []string
			for _, m := range pp.Missing {
				diff = append(diff, "missing "+m)
			}
			for _, x := range pp.Extra {
				diff = append(diff, "extra "+x)
			}
			c.Detail = fmt.Sprintf("%s: %d as on %s, %s; drctl mirror run keeps them in step", pp.Principal, pp.InSync, st.Active, strings.Join(diff, "; "))
		}
		out = append(out, c)
	}
	if len(p.FenceGaps) > 0 {
		out = append(out, Check{Cluster: st.Standby, Name: "standby fence", Result: CheckWarn, Detail: fmt.Sprintf("the applications may still write to the standby: %s missing; drctl mirror run adds them (or drctl fence %s)", strings.Join(p.FenceGaps, ", "), st.Standby)})
	} else if topo.Failover.Fence == topology.FenceACL {
		out = append(out, Check{Cluster: st.Standby, Name: "standby fence", Result: CheckOK, Detail: "the applications may not write to the mirrored topics of the standby"})
	}
	return out
}

func checkCluster(ctx context.Context, topo *topology.Topology, clusters *kafkaconn.Clusters, c *topology.Cluster) ([]Check, string) {
	add := func(checks []Check, name string, r CheckResult, format string, args ...any) []Check {
		return append(checks, Check{Cluster: c.Name, Name: name, Result: r, Detail: fmt.Sprintf(format, args...)})
	}
	var checks []Check
	client, err := clusters.Need(c.Name)
	if err != nil {
		return add(checks, "reachable", CheckFail, "%v", err), ""
	}
	info, err := describeCluster(ctx, client)
	if err != nil {
		return add(checks, "reachable", CheckFail, "%v", kafkaconn.Explain(c, err)), ""
	}
	checks = add(checks, "reachable", CheckOK, "cluster id %s, %d broker(s), controller %d", info.ClusterID, len(info.Brokers), info.Controller)
	switch {
	case info.KafkaVersion == "":
		checks = add(checks, "version", CheckWarn, "the brokers do not report their release (not Apache Kafka, or older than 3.3); drctl needs 3.6 or newer")
	case info.KafkaVersion < "3.6" && len(info.KafkaVersion) == 3:
		checks = add(checks, "version", CheckFail, "Kafka %s is older than 3.6, which drctl needs; upgrade the brokers", info.KafkaVersion)
	case info.KafkaVersion == KfakeRelease:
		checks = add(checks, "version", CheckOK, "%s; finalized metadata.version level %d", info.KafkaVersion, info.MetadataVersion)
	default:
		checks = add(checks, "version", CheckOK, "Apache Kafka %s; finalized metadata.version level %d", info.KafkaVersion, info.MetadataVersion)
	}

	md, _, err := kafkaread.AnyBrokerMetadata(ctx, client, &sarama.MetadataRequest{Version: 10, IncludeClusterAuthorizedOperations: true, IncludeTopicAuthorizedOperations: true})
	if err != nil {
		return add(checks, "permissions", CheckFail, "metadata request failed: %v", kafkaconn.Explain(c, err)), info.ClusterID
	}
	clusterOps := []int{opDescribe, opDescribeConfigs, opCreate, opIdempotentWrite}
	if topo.Failover.Fence == topology.FenceACL {
		clusterOps = append(clusterOps, opAlter) // creating and deleting ACLs
	}
	switch {
	case md.ClusterAuthorizedOperations == opsNotProvided:
		checks = add(checks, "permissions", CheckWarn, "the brokers did not report cluster permissions; check by hand that drctl may %s on the cluster", strings.Join(opList(clusterOps), ", "))
	default:
		if miss := missingOps(md.ClusterAuthorizedOperations, clusterOps...); len(miss) > 0 {
			checks = add(checks, "permissions", CheckFail, "drctl's principal lacks %s on the cluster; grant them with kafka-acls, or make drctl a super user", strings.Join(miss, ", "))
		} else {
			checks = add(checks, "permissions", CheckOK, "cluster: %s", strings.Join(opList(clusterOps), ", "))
		}
	}

	var selected []string
	var denied []string
	for _, t := range md.Topics {
		if !topo.Mirrors(t.Name) {
			continue
		}
		selected = append(selected, t.Name)
		if t.TopicAuthorizedOperations != opsNotProvided {
			if miss := missingOps(t.TopicAuthorizedOperations, opDescribe, opRead, opWrite, opDescribeConfigs); len(miss) > 0 {
				denied = append(denied, fmt.Sprintf("%s (%s)", t.Name, strings.Join(miss, ", ")))
			}
		}
	}
	slices.Sort(selected)
	slices.Sort(denied)
	switch {
	case len(denied) > 0:
		checks = add(checks, "topic permissions", CheckFail, "drctl may not use %s; grant Describe, Read, Write and DescribeConfigs on the mirrored topics", strings.Join(denied, "; "))
	case len(selected) == 0:
		checks = add(checks, "topics", CheckWarn, "no topic here matches mirror.topics %v", topo.Mirror.Topics.Include)
	default:
		checks = add(checks, "topics", CheckOK, "%d selected: %s", len(selected), summarize(selected, 10))
	}

	admin, err := sarama.NewClusterAdminFromClient(client)
	if err == nil {
		var groups map[string]GroupSide
		if groups, err = SelectedGroups(admin, topo); err == nil {
			names := slices.Sorted(maps.Keys(groups))
			checks = add(checks, "groups", CheckOK, "%d selected: %s", len(names), summarize(names, 10))
		}
	}
	if err != nil {
		checks = add(checks, "groups", CheckFail, "listing consumer groups failed: %v; grant Describe on the groups to drctl", kafkaconn.Explain(c, err))
	}
	return checks, info.ClusterID
}

func opList(ops []int) []string {
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = opNames[op]
	}
	return out
}

func summarize(names []string, max int) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:max], ", "), len(names)-max)
}

// mayAlterACLs reports whether drctl's principal may Alter the cluster
// (create and delete ACLs, as fencing does), from the cluster's authorized
// operations that validate --online reads; nil when the brokers do not
// report them or the request fails.
func mayAlterACLs(ctx context.Context, client sarama.Client) *bool {
	md, _, err := kafkaread.AnyBrokerMetadata(ctx, client, &sarama.MetadataRequest{Version: 10, IncludeClusterAuthorizedOperations: true})
	if err != nil || md.ClusterAuthorizedOperations == opsNotProvided {
		return nil
	}
	ok := len(missingOps(md.ClusterAuthorizedOperations, opAlter)) == 0
	return &ok
}
