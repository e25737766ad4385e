package aclfence

import (
	"strings"
	"testing"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/topology"
)

// TestWritableBy: the worked example of writableBy, rule by rule, for
// self "User:drctl" and topic "orders".
func TestWritableBy(t *testing.T) {
	deny := func(name, principal string) topicACL {
		return topicACL{Name: name, Principal: principal, Host: "*", Op: sarama.AclOperationWrite}
	}
	allow := func(name, principal string, op sarama.AclOperation) topicACL {
		return topicACL{Name: name, Principal: principal, Host: "*", Op: op, Allow: true}
	}
	prefixed := func(a topicACL) topicACL { a.Prefixed = true; return a }
	onHost := func(a topicACL, host string) topicACL { a.Host = host; return a }
	for _, tc := range []struct {
		name string
		acls []topicACL
		want string // "" or a fragment of the reason
	}{
		{"everyone denied", []topicACL{deny("orders", "User:*")}, ""},
		{"everyone denied despite an allow for all", []topicACL{deny("orders", "User:*"), allow("*", "User:*", sarama.AclOperationAll)}, ""},
		{"everyone denied by a prefixed deny", []topicACL{prefixed(deny("ord", "User:*"))}, ""},
		{"everyone denied by a deny on every topic, all operations", []topicACL{{Name: "*", Principal: "User:*", Host: "*", Op: sarama.AclOperationAll}}, ""},
		{"the one writer denied", []topicACL{deny("orders", "User:app"), allow("*", "User:app", sarama.AclOperationWrite)}, ""},
		{"drctl's own allow", []topicACL{deny("orders", "User:app"), allow("*", "User:app", sarama.AclOperationWrite), allow("orders", "User:drctl", sarama.AclOperationWrite)}, ""},
		{"an allow for reading only", []topicACL{deny("orders", "User:app"), allow("orders", "User:reader", sarama.AclOperationRead)}, ""},
		{"an allow on another topic", []topicACL{deny("orders", "User:app"), allow("payments", "User:batch", sarama.AclOperationWrite)}, ""},
		{"another writer", []topicACL{deny("orders", "User:app"), allow("*", "User:app", sarama.AclOperationWrite), prefixed(allow("or", "User:batch", sarama.AclOperationAll))},
			"User:batch may write to topic orders"},
		{"every principal allowed", []topicACL{deny("orders", "User:app"), allow("orders", "User:*", sarama.AclOperationWrite)}, "User:* may write"},
		{"the deny holds on one host only", []topicACL{onHost(deny("orders", "User:*"), "10.0.0.1")}, "no DENY WRITE ACL covers topic orders"},
		{"the deny is for another topic", []topicACL{deny("payments", "User:*")}, "no DENY WRITE ACL covers topic orders"},
		{"no ACL", nil, "no DENY WRITE ACL covers topic orders"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := writableBy("orders", tc.acls, "User:drctl")
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Errorf("writableBy = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSelf(t *testing.T) {
	for _, tc := range []struct {
		c    *topology.Cluster
		want string
	}{
		{&topology.Cluster{SASL: &topology.SASL{Mechanism: "SCRAM-SHA-512", Username: "drctl"}}, "User:drctl"},
		{&topology.Cluster{}, ""},
		{nil, ""},
	} {
		if got := Self(tc.c); got != tc.want {
			t.Errorf("Self(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
}
