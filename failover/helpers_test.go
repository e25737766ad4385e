package failover

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
	"github.com/drctl/drctl/topology"
)

func jsonUnmarshal(raw json.RawMessage, v any) error { return json.Unmarshal(raw, v) }

// outputOf returns the outputs of the last done step named name in a run's
// journal (nil when none).
func outputOf(t *testing.T, dir, id, name string) json.RawMessage {
	t.Helper()
	st, err := plans.ReadJournal(filepath.Join(dir, id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range slices.Backward(st.Plan.Steps) {
		if v.Name == name && st.Outputs[i] != nil {
			return st.Outputs[i]
		}
	}
	return nil
}

func readCommitted(cl sarama.Client, topic string, part int32) ([]kafkaread.Record, error) {
	var out []kafkaread.Record
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := kafkaread.ReadCommitted(ctx, cl, topic, part, 0, func(r kafkaread.Record) error {
		out = append(out, r)
		return nil
	})
	return out, err
}

// loadRun reads a run's record through a session of its own.
func loadRun(ctx context.Context, topo *topology.Topology, id string) (*runrecord.Record, error) {
	clusters := kafkaconn.Open(ctx, topo)
	defer clusters.Close()
	return runrecord.Load(ctx, clusters, id), nil
}
