package mirror

import (
	"context"
	"fmt"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/mirror/topicsync"
	"github.com/drctl/drctl/topology"
)

// topicSyncer keeps target topics in shape; sync returns the topics the
// mirror may copy now with their partition counts, and the topics it must
// not copy with the reason.
type topicSyncer interface {
	sync(ctx context.Context) (ready map[string]int32, troubles map[string]string, err error)
}

type syncerAdapter struct{ s *topicsync.Syncer }

func newTopicSyncer(src, dst sarama.Client, sel topology.Selection) (topicSyncer, error) {
	sa, err := sarama.NewClusterAdminFromClient(src)
	if err != nil {
		return nil, fmt.Errorf("source admin: %w", err)
	}
	da, err := sarama.NewClusterAdminFromClient(dst)
	if err != nil {
		return nil, fmt.Errorf("target admin: %w", err)
	}
	s, err := topicsync.New(sa, da, sel, topicsync.Options{})
	if err != nil {
		return nil, err
	}
	return syncerAdapter{s}, nil
}

func (a syncerAdapter) sync(ctx context.Context) (map[string]int32, map[string]string, error) {
	rep, err := a.s.Sync(ctx)
	if err != nil {
		return nil, nil, err
	}
	ready := map[string]int32{}
	for _, t := range rep.Ready() {
		ready[t.Topic] = t.Partitions
	}
	troubles := map[string]string{}
	for _, t := range rep.Problems() {
		switch {
		case t.Conflict != "":
			troubles[t.Name] = t.Conflict
		case t.Err != nil:
			troubles[t.Name] = t.Err.Error()
		}
	}
	return ready, troubles, nil
}
