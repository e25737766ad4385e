package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/kvstore"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
)

// TestAckLost: the losses a link recorded are listed by mirror lag until
// ack-lost removes them, per partition or all at once; a partition with no
// recorded loss is refused with nothing acknowledged, and without a
// terminal it needs --yes.
func TestAckLost(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"orders\"]}"})
	kfaketest.CreateTopic(t, p.Topology, "east", "orders", 2, nil)
	link := p.Topology.Link("east", "west")
	west := kfaketest.Dial(t, p.Topology, "west")
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	// Keys other than the mirror's own: ack-lost removes the key each range was read under.
	for _, r := range []linkstate.LostRange{
		{Topic: "orders", Partition: 0, From: 10, To: 24, Records: 15, At: at},
		{Topic: "orders", Partition: 1, From: 0, To: 4, Records: 5, At: at},
	} {
		raw, _ := json.Marshal(r)
		if err := kvstore.Put(context.Background(), west, link.LostTopic(), fmt.Sprintf("%s/%d@x", r.Topic, r.Partition), raw); err != nil {
			t.Fatal(err)
		}
	}
	lag := func() string {
		out, stderr, code := drctl(t, "-c", p.Path, "mirror", "lag")
		if code != 0 {
			t.Fatalf("mirror lag: exit %d: %s", code, stderr)
		}
		return out
	}
	if out := lag(); !strings.Contains(out, "not acknowledged: 20 record(s) in 2 range(s)") || !strings.Contains(out, "orders/0 offsets 10-24 (15 records), found 2026-12-01T10:00:00Z") {
		t.Errorf("mirror lag does not list the recorded losses:\n%s", out)
	}
	ack := func(args ...string) (string, string, int) {
		return drctl(t, append([]string{"-c", p.Path, "mirror", "ack-lost"}, args...)...)
	}
	if _, stderr, code := ack("orders/0"); code != 2 || !strings.Contains(stderr, "pass --yes") {
		t.Errorf("without a terminal or --yes: exit %d, %q", code, stderr)
	}
	if _, stderr, code := ack("--yes", "orders/0", "orders/7"); code != 2 || !strings.Contains(stderr, "no recorded loss on orders/7") {
		t.Errorf("a partition without a loss: exit %d, %q", code, stderr)
	}
	if _, stderr, code := ack("--yes", "orders"); code != 2 || !strings.Contains(stderr, "TOPIC/PARTITION") {
		t.Errorf("no partition: exit %d, %q", code, stderr)
	}
	out, stderr, code := ack("--yes", "orders/0")
	if code != 0 || !strings.Contains(out, "acknowledged 15 record(s) in 1 range(s)") {
		t.Fatalf("ack-lost orders/0: exit %d, %q %q", code, out, stderr)
	}
	if out := lag(); !strings.Contains(out, "not acknowledged: 5 record(s) in 1 range(s)") || strings.Contains(out, "orders/0 offsets") {
		t.Errorf("after acknowledging orders/0, mirror lag says:\n%s", out)
	}
	out, _, code = ack("--yes", "-o", "json")
	var res AckLostResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Records != 5 || len(res.Acknowledged) != 1 {
		t.Fatalf("ack-lost --yes -o json: exit %d, %s", code, out)
	}
	if out := lag(); strings.Contains(out, "not acknowledged") {
		t.Errorf("after acknowledging all, mirror lag says:\n%s", out)
	}
}
