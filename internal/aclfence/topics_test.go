package aclfence

import (
	"slices"
	"sync/atomic"
	"testing"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestMirroredTopicNamesListsByMetadataOnly: the mirror's ACL sync lists
// the cluster's topics every round (to fence the standby's mirrored
// topics). It must do so with a metadata request alone: sarama's
// ListTopics also describes the configs of every topic of the cluster, a
// heavy request on a cluster of thousands of topics (it was 17% of a
// standby broker's CPU during a copy in bench/results/diary.md).
func TestMirroredTopicNamesListsByMetadataOnly(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{Mirror: "  topics: {include: [\"orders\", \"pay.*\"]}"})
	cl := kfaketest.DialCluster(t, p.Topology.Clusters["west"])
	for _, name := range []string{"orders", "payments", "other", "_drctl.x.east-west.offsets"} {
		kfaketest.CreateTopicOn(t, cl, name, 2, nil)
	}
	var described atomic.Int64
	p.West.ControlKey(int16(kmsg.DescribeConfigs), func(kmsg.Request) (kmsg.Response, error, bool) {
		p.West.KeepControl()
		described.Add(1)
		return nil, nil, false
	})
	admin, err := sarama.NewClusterAdminFromClient(cl)
	if err != nil {
		t.Fatal(err)
	}
	got, err := MirroredTopicNames(admin, p.Topology)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"orders", "payments"}; !slices.Equal(got, want) {
		t.Errorf("mirrored topics %v, want %v", got, want)
	}
	if n := described.Load(); n != 0 {
		t.Errorf("%d DescribeConfigs request(s) to list the topics, want none", n)
	}
}
