package failover

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
	"github.com/drctl/drctl/topology"
)

// clusterIDs returns the id of every cluster of the topology: as it
// answers, or, for one that does not, as the winning role state recorded
// it. It refuses (ErrRefused) two names with one id: drctl would fence,
// wipe or salvage the very cluster it means to keep.
func (w *world) clusterIDs(ctx context.Context, v rolestate.View) (map[string]string, error) {
	live := map[string]string{}
	for name, c := range w.clients {
		id, err := kafkaconn.ClusterID(c)
		if err != nil {
			return nil, fmt.Errorf("%w: cluster %s: read its cluster id: %v", ErrRefused, name, err)
		}
		live[name] = id
	}
	ids := map[string]string{}
	for name, id := range v.Current.ClusterIDs {
		if _, ok := w.topo.Clusters[name]; ok && id != "" {
			ids[name] = id
		}
	}
	maps.Copy(ids, live)
	if err := oneNameEach(w.topo.Path, ids, live); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return ids, nil
}

// oneNameEach reports two names with the same cluster id. live holds the
// ids the clusters gave now; the others were recorded earlier.
func oneNameEach(path string, ids, live map[string]string) error {
	names := slices.Sorted(maps.Keys(ids))
	for i, a := range names {
		for _, b := range names[i+1:] {
			if ids[a] != ids[b] {
				continue
			}
			how := "both answer with"
			if live[a] == "" || live[b] == "" {
				how = "the role state recorded the same"
			}
			return fmt.Errorf("%s and %s are one cluster (%s cluster id %s): the topology %s names it twice; fix the bootstrap addresses so that each name points at its own cluster",
				a, b, how, ids[a], path)
		}
	}
	return nil
}

// identityProblems compares the ids of the clusters that answer now with
// each other and with the ids recorded when the plan was made (recorded,
// possibly nil): two names for one cluster, and a cluster that answers
// with another id than recorded, are problems no step may run with.
func identityProblems(w *world, recorded map[string]string) ([]string, error) {
	live := map[string]string{}
	for name, c := range w.clients {
		id, err := kafkaconn.ClusterID(c)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: read its cluster id: %w", name, err)
		}
		live[name] = id
	}
	var problems []string
	ids := map[string]string{}
	maps.Copy(ids, recorded)
	for _, name := range w.topo.ClusterNames() {
		now, rec := live[name], recorded[name]
		if now != "" && rec != "" && now != rec {
			problems = append(problems, inspect.IdentityChange{Cluster: name, Recorded: rec, Now: now, LostRecords: -1}.String()+"; make a new plan")
		}
		if now != "" {
			ids[name] = now
		}
	}
	if err := oneNameEach(w.topo.Path, ids, live); err != nil {
		problems = append(problems, err.Error())
	}
	return problems, nil
}

// originOnTarget returns the origin cluster id (drctl.o) of the last
// mirrored record (of the last 64 offsets) of the first selected partition of target that holds
// one ("" when none does): the id of the cluster the mirror copied from.
func originOnTarget(ctx context.Context, topo *topology.Topology, target sarama.Client) string {
	if target == nil {
		return ""
	}
	tps, err := linkstate.MirroredPartitions(target, topo)
	if err != nil {
		return ""
	}
	for _, tp := range tps {
		ends, err := kafkaread.PartitionEnds(ctx, target, tp.Topic, tp.Partition)
		if err != nil || ends.Stable <= ends.Start {
			continue
		}
		id := ""
		_, _ = kafkaread.ReadCommitted(ctx, target, tp.Topic, tp.Partition, max(ends.Start, ends.Stable-64), func(r kafkaread.Record) error { // past transaction markers
			if o := originOf(r); o != "" {
				id = o
			}
			return nil
		})
		if id != "" {
			return id
		}
	}
	return ""
}

// identityOf compares cluster's live id (read through w) with the id the
// plan of rc recorded; nil when they agree or either is unknown. The lost
// records are the RPO the plan's rpo-report step measured, if it ran.
func identityOf(w *world, rc *plans.RunContext, cluster string) *inspect.IdentityChange {
	var in Inputs
	if rc == nil || rc.Plan.DecodeInputs(&in) != nil || in.ClusterIDs[cluster] == "" {
		return nil
	}
	c, err := w.Need(cluster)
	if err != nil {
		return nil
	}
	now, err := kafkaconn.ClusterID(c)
	if err != nil || now == in.ClusterIDs[cluster] {
		return nil
	}
	ch := &inspect.IdentityChange{Cluster: cluster, Recorded: in.ClusterIDs[cluster], Now: now, LostRecords: -1}
	for i, s := range rc.Plan.Steps {
		var rpo inspect.RPOReport
		if s.Name == runrecord.StepRPO && rc.Output(i, &rpo) == nil {
			ch.LostRecords = rpo.Records
		}
	}
	return ch
}
