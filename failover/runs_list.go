package failover

import (
	"context"
	"errors"
	"fmt"

	"github.com/drctl/drctl/internal/kvstore"
	"github.com/drctl/drctl/topology"
)

// ListRuns reads every run the clusters recorded in RunsTopic; for a run
// both hold, the most advanced record wins. It only reads. It fails only
// when no cluster could be read; unreadable records are skipped.
func ListRuns(ctx context.Context, topo *topology.Topology) ([]*RunRecord, error) {
	w := connect(ctx, topo)
	defer w.Close()
	best := map[string]*RunRecord{}
	var errs []error
	read := 0
	for name, c := range w.clients {
		all, err := kvstore.All(ctx, c, RunsTopic)
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", name, err))
			continue
		}
		read++
		for id, raw := range all {
			rec, err := decodeRunRecord(raw)
			if err != nil || rec.Plan == nil {
				continue
			}
			if b := best[id]; b == nil || rec.start().From > b.start().From || (rec.Finished && !b.Finished) {
				best[id] = rec
			}
		}
	}
	if read == 0 {
		return nil, fmt.Errorf("read runs from the clusters: %w", errors.Join(append(errs, errNoClusters)...))
	}
	out := make([]*RunRecord, 0, len(best))
	for _, r := range best {
		out = append(out, r)
	}
	return out, nil
}
