package sandbox

import (
	"strings"
	"testing"
	"time"
)

func TestDemoMessages(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	perTopic := map[string]int{}
	customers := map[string]bool{}
	for seq := range int64(1000) {
		m := demoMessage("run1", seq, now)
		perTopic[m.Topic]++
		key, _ := m.Key.Encode()
		value, _ := m.Value.Encode()
		if !strings.Contains(string(value), `"seq":`) {
			t.Fatalf("record %d value %s has no seq", seq, value)
		}
		if isPayment(seq) != strings.HasPrefix(m.Topic, "payments.") {
			t.Errorf("record %d: isPayment = %v but topic %s", seq, isPayment(seq), m.Topic)
		}
		switch m.Topic {
		case "orders", "payments.eu", "payments.us":
			if !strings.HasPrefix(string(key), "order-") {
				t.Errorf("record %d on %s has key %s, want order-<n>", seq, m.Topic, key)
			}
		case "customers":
			customers[string(key)] = true
		}
		if len(m.Headers) != 3 || string(m.Headers[0].Key) != headerSource || string(m.Headers[0].Value) != "sandbox" {
			t.Errorf("record %d headers = %v", seq, m.Headers)
		}
		if !m.Timestamp.Equal(now) {
			t.Errorf("record %d timestamp %v", seq, m.Timestamp)
		}
	}
	want := map[string]int{"orders": 400, "payments.eu": 150, "payments.us": 150, "customers": 200, "scratch": 100}
	for topic, n := range want {
		if perTopic[topic] != n {
			t.Errorf("%s got %d of 1000 records, want %d", topic, perTopic[topic], n)
		}
	}
	if len(customers) != 50 {
		t.Errorf("customer updates use %d keys, want all 50 (so compaction keeps 50)", len(customers))
	}
}
