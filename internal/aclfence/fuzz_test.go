package aclfence

import (
	"encoding/json"
	"testing"

	"github.com/drctl/drctl/internal/testkit/fuzzseed"
)

// FuzzDecodeFenceRecord: no record of __drctl_fence panics the reader; one
// it accepts lists only complete ACLs (unfence deletes exactly these), and
// encoding it again (as writeFence does) decodes to the same record.
func FuzzDecodeFenceRecord(f *testing.F) {
	var seeds [][]byte
	for _, r := range []Record{
		{Cluster: "east"},
		{Cluster: "east", Added: []ACL{{Topic: "orders", Principal: "User:*", Host: "*"}, {Topic: "payments.eu", Principal: "User:app", Host: "*"}},
			Existing: []ACL{{Topic: "orders", Principal: "User:legacy", Host: "10.0.0.1"}}},
	} {
		raw, err := json.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, raw)
	}
	seeds = append(seeds, []byte(`{"cluster":"east","added":[{"topic":"","principal":"User:*","host":"*"}]}`),
		[]byte(`{"added":[{}]}`), []byte(`[]`), []byte(`{"added":null,"existing":[null]}`))
	fuzzseed.Add(f, seeds...)
	f.Fuzz(func(t *testing.T, raw []byte) {
		rec, err := decodeFence(raw)
		if err != nil {
			return
		}
		for _, a := range append(append([]ACL(nil), rec.Added...), rec.Existing...) {
			if a.Topic == "" || a.Principal == "" || a.Host == "" {
				t.Fatalf("accepted an incomplete ACL %+v", a)
			}
		}
		again, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		// Compared as written: an empty list and none are the same record.
		back, err := decodeFence(again)
		if err != nil {
			t.Fatalf("a written record does not decode: %v\n%s", err, again)
		}
		if third, _ := json.Marshal(back); string(third) != string(again) {
			t.Fatalf("round trip changed the record:\n%s\n%s", again, third)
		}
	})
}
