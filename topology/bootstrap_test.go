package topology

import (
	"errors"
	"strings"
	"testing"
)

func TestBootstrapAddresses(t *testing.T) {
	// west's list is a block list, so that each entry has its own line.
	doc := func(entry string) string {
		return strings.Replace(good, `    bootstrap: ["${WEST_HOST:-kafka-west-1}:9092"]`,
			"    bootstrap:\n      - kafka-west-1:9092\n      - "+entry, 1)
	}
	cases := []struct {
		entry string
		want  string // "" means it loads
	}{
		{"kafka-west-2:9092", ""},
		{"KAFKA-West-2.example.com.:9092", ""},
		{"10.0.0.7:9092", ""},
		{"'[::1]:9092'", ""},
		{"'[fe80::1%eth0]:9093'", ""},
		{"kafka_west_2:1", ""},
		{"kafka-west-2:65535", ""},
		{"kafka-west-2", `bootstrap entry "kafka-west-2" has no port; write it as host:port, e.g. kafka-1:9092`},
		{"'kafka-west-2:'", `bootstrap entry "kafka-west-2:" has no valid port (a number from 1 to 65535)`},
		{"kafka-west-2:0", "has no valid port (a number from 1 to 65535)"},
		{"kafka-west-2:65536", "has no valid port"},
		{"kafka-west-2:http", "has no valid port"},
		{"kafka-west-2:-1", "has no valid port"},
		{"':9092'", `bootstrap entry ":9092" has no host; write it as host:port`},
		{"''", `bootstrap entry "" is empty; write it as host:port`},
		{"'  '", "is empty"},
		{"PLAINTEXT://kafka-west-2:9092", "has a scheme; write it as host:port, e.g. kafka-1:9092 (the protocol comes from the tls and sasl settings)"},
		{"'::1:9092'", "an IPv6 address in brackets: [::1]:9092"},
		{"'[::1:9092'", "is not host:port (missing ']' in address)"},
		{"kafka west:9092", "characters a host name cannot hold"},
		{"kafka/west:9092", "characters a host name cannot hold"},
	}
	vars := env(map[string]string{"EAST_PASSWORD": "s3cret"})
	for _, c := range cases {
		t.Run(c.entry, func(t *testing.T) {
			topo, err := Parse("b.yaml", []byte(doc(c.entry)), vars)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if n := len(topo.Clusters["west"].Bootstrap); n != 2 {
					t.Errorf("%d bootstrap entries, want 2", n)
				}
				return
			}
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("error %v: want an *Error", err)
			}
			if te.Line != 9 || !strings.HasPrefix(err.Error(), "b.yaml:9: cluster west: bootstrap entry ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q: want b.yaml:9 (the entry's line), cluster west and %q", err, c.want)
			}
		})
	}
}

func TestAddressKey(t *testing.T) {
	same := [][2]string{
		{"kafka-1:9092", "KAFKA-1:9092"},
		{"kafka-1.example.com.:9092", "kafka-1.example.com:9092"},
		{"kafka-1:09092", "kafka-1:9092"},
		{"[::1]:9092", "[0:0:0:0:0:0:0:1]:9092"},
	}
	for _, p := range same {
		if addressKey(p[0]) != addressKey(p[1]) {
			t.Errorf("%s and %s should name one broker: %s vs %s", p[0], p[1], addressKey(p[0]), addressKey(p[1]))
		}
	}
	if addressKey("kafka-1:9092") == addressKey("kafka-1:9093") || addressKey("kafka-1:9092") == addressKey("kafka-2:9092") {
		t.Error("different brokers compare equal")
	}
}
