package aclsync

import (
	"reflect"
	"testing"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/topology"
)

func topo(t *testing.T, extra string) *topology.Topology {
	t.Helper()
	doc := `name: t
clusters:
  east: {bootstrap: ["e:9092"], sasl: {mechanism: PLAIN, username: drctl, password: x}}
  west: {bootstrap: ["w:9092"], sasl: {mechanism: PLAIN, username: drctl, password: x}}
active: east
standby: west
mirror:
  topics: {include: ["orders", "pay\\..*"]}
  groups: {include: ["billing"]}
` + extra
	tp, err := topology.Parse("t.yaml", []byte(doc), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func topicB(name, principal string, op sarama.AclOperation, perm sarama.AclPermissionType) Binding {
	return Binding{ResourceType: sarama.AclResourceTopic, Resource: name, Pattern: sarama.AclPatternLiteral, Principal: principal, Host: "*", Operation: op, Permission: perm}
}

func groupB(name, principal string) Binding {
	return Binding{ResourceType: sarama.AclResourceGroup, Resource: name, Pattern: sarama.AclPatternLiteral, Principal: principal, Host: "*",
		Operation: sarama.AclOperationRead, Permission: sarama.AclPermissionAllow}
}

const (
	allow = sarama.AclPermissionAllow
	deny  = sarama.AclPermissionDeny
	read  = sarama.AclOperationRead
	write = sarama.AclOperationWrite
)

func TestScopeOwns(t *testing.T) {
	fenced := topo(t, "failover: {fence: acl, producer_principals: [\"User:app\"]}\n")
	cases := []struct {
		name string
		tp   *topology.Topology
		b    Binding
		want bool
	}{
		{"app on a mirrored topic", fenced, topicB("orders", "User:app", write, allow), true},
		{"app on a mirrored topic, by pattern", fenced, topicB("pay.eu", "User:app", read, allow), true},
		{"a DENY for another principal", fenced, topicB("orders", "User:intruder", write, deny), true},
		{"a topic not mirrored", fenced, topicB("scratch", "User:app", write, allow), false},
		{"drctl's own principal", fenced, topicB("orders", "User:drctl", write, allow), false},
		{"drctl's fence (DENY WRITE for a fence principal)", fenced, topicB("orders", "User:app", write, deny), false},
		{"a DENY READ for a fence principal", fenced, topicB("orders", "User:app", read, deny), true},
		{"fence none: a DENY WRITE is the operator's", topo(t, "failover: {fence: none}\n"), topicB("orders", "User:app", write, deny), true},
		{"fence acl for everyone: DENY WRITE User:*", topo(t, ""), topicB("orders", "User:*", write, deny), false},
		{"a selected group", fenced, groupB("billing", "User:app"), true},
		{"a group not selected", fenced, groupB("other", "User:app"), false},
		{"internal topic", fenced, topicB("__consumer_offsets", "User:app", read, allow), false},
		{"transactional id, none selected", fenced, Binding{ResourceType: sarama.AclResourceTransactionalID, Resource: "tx-1", Pattern: sarama.AclPatternLiteral,
			Principal: "User:app", Host: "*", Operation: write, Permission: allow}, false},
		{"transactional id, selected", topo(t, "  acls: {transactional_ids: {include: [\"tx-.*\"]}}\n"), Binding{ResourceType: sarama.AclResourceTransactionalID,
			Resource: "tx-1", Pattern: sarama.AclPatternLiteral, Principal: "User:app", Host: "*", Operation: write, Permission: allow}, true},
		{"cluster ACL, not selected", fenced, Binding{ResourceType: sarama.AclResourceCluster, Resource: "kafka-cluster", Pattern: sarama.AclPatternLiteral,
			Principal: "User:app", Host: "*", Operation: sarama.AclOperationIdempotentWrite, Permission: allow}, false},
		{"cluster ACL, selected", topo(t, "  acls: {cluster: true}\n"), Binding{ResourceType: sarama.AclResourceCluster, Resource: "kafka-cluster",
			Pattern: sarama.AclPatternLiteral, Principal: "User:app", Host: "*", Operation: sarama.AclOperationIdempotentWrite, Permission: allow}, true},
		{"principal excluded", topo(t, "  acls: {principals: {exclude: [\"User:ops.*\"]}}\n"), topicB("orders", "User:ops-1", read, allow), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := NewScope(c.tp).Owns(c.b); got != c.want {
				t.Errorf("Owns(%s) = %v, want %v", c.b, got, c.want)
			}
		})
	}
}

// TestDiff is the worked example of Diff's doc comment, plus what the
// scope leaves alone on both sides.
func TestDiff(t *testing.T) {
	scope := NewScope(topo(t, "failover: {fence: acl}\n"))
	source := []Binding{topicB("orders", "User:app", write, allow), topicB("orders", "User:drctl", write, allow),
		groupB("billing", "User:app"), topicB("scratch", "User:app", write, allow)}
	target := []Binding{topicB("orders", "User:app", read, allow), topicB("orders", "User:*", write, deny),
		groupB("billing", "User:app"), topicB("scratch", "User:other", write, allow)}
	got := Diff(scope, source, target)
	want := Plan{Add: []Binding{topicB("orders", "User:app", write, allow)}, Remove: []Binding{topicB("orders", "User:app", read, allow)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Diff:\n got %+v\nwant %+v", got, want)
	}
	if p := Diff(scope, source, append(target, want.Add...)); len(p.Add) != 0 {
		t.Errorf("after adding, Diff still adds %v", p.Add)
	}
	if !Diff(scope, nil, nil).Empty() {
		t.Error("Diff of nothing is not empty")
	}
}

func TestCompare(t *testing.T) {
	scope := NewScope(topo(t, "failover: {fence: acl}\n"))
	active := []Binding{topicB("orders", "User:app", write, allow), groupB("billing", "User:app"), groupB("billing", "User:reporter")}
	standby := []Binding{topicB("orders", "User:app", write, allow), topicB("orders", "User:legacy", read, allow), topicB("orders", "User:*", write, deny)}
	got := Compare(scope, active, standby)
	want := []PrincipalParity{
		{Principal: "User:app", InSync: 1, Missing: []string{"ALLOW READ for User:app from * on Group:billing (literal)"}},
		{Principal: "User:legacy", Extra: []string{"ALLOW READ for User:legacy from * on Topic:orders (literal)"}},
		{Principal: "User:reporter", Missing: []string{"ALLOW READ for User:reporter from * on Group:billing (literal)"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Compare:\n got %+v\nwant %+v", got, want)
	}
	if got[0].InParity() || !(PrincipalParity{Principal: "x", InSync: 3}).InParity() {
		t.Error("InParity is wrong")
	}
}
