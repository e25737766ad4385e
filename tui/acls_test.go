package tui

import (
	"strings"
	"testing"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/mirror/aclsync"
)

// TestACLLine: the overview's ACLS line says whether the standby's ACLs
// are in parity with the active's, which principals differ, and whether
// the standby's write fence has gaps; nothing without an ACL view.
func TestACLLine(t *testing.T) {
	inSync := aclsync.PrincipalParity{Principal: "User:app", InSync: 4}
	drift := aclsync.PrincipalParity{Principal: "User:reporter", Missing: []string{"ALLOW READ for User:reporter from * on Topic:orders (literal)"}}
	cases := []struct {
		name string
		acls *aclsync.Parity
		want []string // substrings; none means the line is empty
	}{
		{"no view", nil, nil},
		{"no authorizer", &aclsync.Parity{Error: "cannot list east's ACLs: security disabled"}, nil},
		{"in parity", &aclsync.Parity{Enabled: true, Standby: "west", Principals: []aclsync.PrincipalParity{inSync}}, []string{"ACLS", "1 principal(s) in parity on west"}},
		{"drift", &aclsync.Parity{Enabled: true, Standby: "west", Principals: []aclsync.PrincipalParity{inSync, drift}}, []string{"1 of 2 principal(s) differ on west: User:reporter"}},
		{"sync off, fence gap", &aclsync.Parity{Standby: "west", Principals: []aclsync.PrincipalParity{inSync}, FenceGaps: []string{"DENY WRITE for User:* on Topic:orders"}},
			[]string{"(sync off)", "standby fence: 1 ACL(s) missing"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := aclLine(&inspect.Status{ACLs: c.acls}, newStyles())
			if len(c.want) == 0 {
				if got != "" {
					t.Errorf("aclLine = %q, want none", got)
				}
				return
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("aclLine = %q, want %q in it", got, w)
				}
			}
		})
	}
}
