package topology

import (
	"slices"
	"strings"
	"testing"
)

// namesTopology parses the good topology with every topic selected except
// payments.tmp, and the salvage suffix given (empty keeps the default).
func namesTopology(t *testing.T, suffix string) *Topology {
	t.Helper()
	src := strings.Replace(good, `["orders", "payments\\..*"]`, `[".*"]`, 1)
	if suffix != "" {
		src = strings.Replace(src, "  drain_timeout: 2m\n", "  drain_timeout: 2m\n  salvage_topic_suffix: "+suffix+"\n", 1)
	}
	topo, err := Parse("t.yaml", []byte(src), env(map[string]string{"EAST_PASSWORD": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func TestOwnsAndMirrors(t *testing.T) {
	type want struct{ owns, mirrors bool }
	for _, tc := range []struct {
		suffix string
		topics map[string]want
	}{
		{"", map[string]want{
			"orders":                   {false, true},
			"payments.tmp":             {false, false}, // the user's exclude
			"orders.drctl-salvage":     {true, false},  // the default salvage suffix
			"__consumer_offsets":       {false, false}, // Kafka's own
			"__drctl_state":            {true, false},
			"__drctl_runs":             {true, false},
			"_drctl.payments.e-w.ends": {true, false},
			"_private":                 {false, true},
			"drctl-canary.payments":    {false, true}, // drctl's, but mirrored: a drill tests it
		}},
		{".quarantine", map[string]want{
			"orders.quarantine":    {true, false},
			"orders.drctl-salvage": {false, true}, // only the configured suffix counts
			"orders":               {false, true},
		}},
	} {
		topo := namesTopology(t, tc.suffix)
		for topic, w := range tc.topics {
			if got := topo.Owns(topic); got != w.owns {
				t.Errorf("suffix %q: Owns(%q) = %v, want %v", topo.Failover.SalvageTopicSuffix, topic, got, w.owns)
			}
			if got := topo.Mirrors(topic); got != w.mirrors {
				t.Errorf("suffix %q: Mirrors(%q) = %v, want %v", topo.Failover.SalvageTopicSuffix, topic, got, w.mirrors)
			}
		}
	}
	// A topology built by hand (no suffix) owns no user topic.
	if bare := (&Topology{}); bare.Owns("orders") || bare.IsSalvageTopic("orders") {
		t.Error("a topology without a salvage suffix owns every topic")
	}
}

func TestGroups(t *testing.T) {
	topo := namesTopology(t, "")
	link := topo.Link("east", "west")
	for group, want := range map[string]bool{
		"billing":               true,
		"console-consumer-7":    false, // the user's exclude
		link.WorkersGroup():     false,
		link.ProgressGroup():    false,
		"drctl-canary.payments": true,
		"_drctlx":               false,
	} {
		if got := topo.SyncsGroup(group); got != want {
			t.Errorf("SyncsGroup(%q) = %v, want %v", group, got, want)
		}
	}
	for _, g := range link.InternalGroups() {
		if !OwnsGroup(g) {
			t.Errorf("OwnsGroup(%q) = false for the link's own group", g)
		}
	}
}

func TestLinkNames(t *testing.T) {
	topo := namesTopology(t, "")
	link := topo.Link("east", "west")
	if got := link.OffsetsTopic(); got != "_drctl.payments.east-west.offsets" {
		t.Errorf("OffsetsTopic = %q", got)
	}
	if got := link.GroupsTopic(); got != "_drctl.payments.east-west.groups" {
		t.Errorf("GroupsTopic = %q", got)
	}
	if got := link.TransactionalID(3); got != "drctl.payments.east-west.3" {
		t.Errorf("TransactionalID = %q", got)
	}
	// The verifier's watermarks are one of the link's internal topics: a
	// failover's wipe deletes them with the others.
	if got := link.ProofTopic(); got != "_drctl.payments.east-west.proof" || !slices.Contains(link.InternalTopics(), got) {
		t.Errorf("ProofTopic = %q, internal topics %v", got, link.InternalTopics())
	}
	for _, name := range link.InternalTopics() {
		if !topo.Owns(name) || topo.Mirrors(name) {
			t.Errorf("link topic %s: owned %v, mirrored %v", name, topo.Owns(name), topo.Mirrors(name))
		}
	}
	for _, name := range []string{StateTopic, FenceTopic, RunsTopic, DrillsTopic, DrillLocksTopic, MirrorPausesTopic} {
		if !topo.Owns(name) {
			t.Errorf("Owns(%s) = false", name)
		}
	}
}

func TestTopicPartitionCompare(t *testing.T) {
	tps := []TopicPartition{{"b", 0}, {"a", 10}, {"a", 2}}
	slices.SortFunc(tps, TopicPartition.Compare)
	if want := []TopicPartition{{"a", 2}, {"a", 10}, {"b", 0}}; !slices.Equal(tps, want) {
		t.Errorf("sorted %v, want %v", tps, want)
	}
}
