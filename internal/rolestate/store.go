package rolestate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// stateTopic (topology.StateTopic) holds, in each cluster, the role state
// of every topology that uses the cluster: compacted, one partition, key =
// the topology name, value = the JSON State. A tombstone is never written.
const stateTopic = topology.StateTopic

const statePartition int32 = 0

// Read returns the latest committed state of the named topology in the
// cluster behind client; found is false when the cluster holds none,
// including when the state topic does not exist (Read never creates it).
// Records of aborted or still-open transactions are never seen. The read is
// bounded by ctx.
func Read(ctx context.Context, client sarama.Client, topology string) (State, bool, error) {
	if client == nil {
		return State{}, false, errors.New("read role state: not connected")
	}
	info, err := kafkaread.Topic(ctx, client, stateTopic)
	if err != nil {
		return State{}, false, fmt.Errorf("read role state: %w", err)
	}
	if !info.Exists {
		return State{}, false, nil
	}
	s, _, found, err := readLatest(ctx, client, topology)
	return s, found, err
}

// readLatest reads the state partition from its start to its last stable
// offset and decodes the last record of the topology, which it also returns
// as stored. Only that record has to be valid: a bad record that a later one
// replaced does no harm.
func readLatest(ctx context.Context, client sarama.Client, topology string) (State, []byte, bool, error) {
	var (
		last   []byte
		offset int64
		found  bool
	)
	_, err := kafkaread.ReadCommitted(ctx, client, stateTopic, statePartition, 0, func(r kafkaread.Record) error {
		if string(r.Key) == topology {
			// A tombstone (nil value) is never written; should one
			// appear, the topology has no state.
			last, offset, found = r.Value, r.Offset, r.Value != nil
		}
		return nil
	})
	if err != nil {
		return State{}, nil, false, fmt.Errorf("read role state: %w", err)
	}
	if !found {
		return State{}, nil, false, nil
	}
	s, err := decodeState(topology, last)
	if err != nil {
		return State{}, nil, false, badRecord(topology, offset, err)
	}
	return s, last, true, nil
}

// decodeState decodes a state record stored under the key topology and
// checks it: it must name that topology and be valid (State.Validate).
func decodeState(topology string, raw []byte) (State, error) {
	var s State
	if err := json.Unmarshal(raw, &s); err != nil {
		return State{}, fmt.Errorf("not valid JSON: %w", err)
	}
	if s.Topology != topology {
		return State{}, fmt.Errorf("it names topology %q", s.Topology)
	}
	if err := s.Validate(); err != nil {
		return State{}, err
	}
	return s, nil
}

func badRecord(topology string, offset int64, err error) error {
	return fmt.Errorf("the role state of %s in %s at offset %d is unusable (%w); it was not written by drctl: "+
		"if the other cluster holds a good state, delete topic %s on this cluster and let drctl write it again",
		topology, stateTopic, offset, err, stateTopic)
}

// createTopic creates the state topic (topology.KeyedTopic) and waits
// until its partition has a leader. A concurrent creator's topic is as good
// as ours. min.compaction.lag.ms stays at the broker default (0): the
// state is a handful of small records, and kfake rejects the key.
func createTopic(ctx context.Context, client sarama.Client) error {
	return kafkaread.EnsureTopics(ctx, client, topology.KeyedTopic(stateTopic, 0))
}
