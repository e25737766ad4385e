package failover

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

// WipePreview is what a plan's wipe step would delete if it ran now, read
// from the cluster when a person reviews the plan. It is not part of the
// plan (the wipe decides again when it runs, and salvages first).
type WipePreview struct {
	// Step is the wipe's step number (from 1); Cluster the cluster wiped.
	Step    int         `json:"step"`
	Cluster string      `json:"cluster"`
	Topics  []WipeTopic `json:"topics"`
	Groups  []string    `json:"groups"`
	// Error says why the cluster could not be read: then nothing above is
	// known.
	Error string `json:"error,omitempty"`
}

// WipeTopic is one topic a wipe deletes: its partitions and the offsets
// its partitions hold (an upper bound of its records: compaction and
// transaction markers leave gaps).
type WipeTopic struct {
	Name       string `json:"name"`
	Partitions int    `json:"partitions"`
	Records    int64  `json:"records_at_most"`
}

// PreviewWipe reads what p's wipe step would delete on its cluster now; nil
// when p has no wipe step. A cluster that does not answer gives a preview
// with Error set, never an empty list.
func PreviewWipe(ctx context.Context, clusters *kafkaconn.Clusters, p *plans.Plan) *WipePreview {
	topo := clusters.Topology()
	for i, s := range p.Steps {
		rp, err := wipeStep.Params(s)
		if err != nil {
			continue
		}
		pv := &WipePreview{Step: i + 1, Cluster: rp.Stale, Topics: []WipeTopic{}, Groups: []string{}}
		if err := pv.read(ctx, clusters, topo.Link(rp.Active, rp.Stale)); err != nil {
			pv.Error = err.Error()
		}
		return pv
	}
	return nil
}

func (pv *WipePreview) read(ctx context.Context, clusters *kafkaconn.Clusters, link topology.Link) error {
	topo := clusters.Topology()
	clusters.Connect(ctx, pv.Cluster)
	client, err := clusters.Need(pv.Cluster)
	if err != nil {
		return err
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return fmt.Errorf("%s: %w", pv.Cluster, err)
	}
	topics, groups, err := wipeTargets(admin, topo, link)
	if err != nil {
		return fmt.Errorf("%s: %w", pv.Cluster, err)
	}
	pv.Groups = append(pv.Groups, groups...)
	var tps []topology.TopicPartition
	parts := map[string]int{}
	for _, t := range topics {
		ps, err := client.Partitions(t)
		if err != nil {
			return fmt.Errorf("%s: partitions of %s: %w", pv.Cluster, t, err)
		}
		parts[t] = len(ps)
		for _, p := range ps {
			tps = append(tps, topology.TopicPartition{Topic: t, Partition: p})
		}
	}
	starts, ends, err := partitionEnds(ctx, client, tps)
	if err != nil {
		return fmt.Errorf("%s: offsets: %w", pv.Cluster, err)
	}
	held := map[string]int64{}
	for _, tp := range tps {
		held[tp.Topic] += max(0, ends[tp]-starts[tp])
	}
	// The application's topics first, drctl's own after them.
	slices.SortFunc(topics, func(a, b string) int {
		if ia, ib := topo.Owns(a), topo.Owns(b); ia != ib {
			if ia {
				return 1
			}
			return -1
		}
		return strings.Compare(a, b)
	})
	for _, t := range topics {
		pv.Topics = append(pv.Topics, WipeTopic{Name: t, Partitions: parts[t], Records: held[t]})
	}
	return nil
}

// Lines says the preview in words, one topic or group a line, for a plan's
// reader.
func (pv *WipePreview) Lines() []string {
	head := fmt.Sprintf("Step %d (wipe) deletes on %s", pv.Step, pv.Cluster)
	if pv.Error != "" {
		return []string{head + ": unknown now, " + pv.Cluster + " did not answer (" + pv.Error + "); the wipe lists what it deletes when it runs, after the salvage"}
	}
	out := []string{fmt.Sprintf("%s, as %s holds them now:", head, pv.Cluster),
		fmt.Sprintf("  %d topic(s) and %d group(s); records the new active lacks are salvaged first", len(pv.Topics), len(pv.Groups))}
	for _, t := range pv.Topics {
		out = append(out, fmt.Sprintf("  topic %s: %d partition(s), up to %s record(s)", t.Name, t.Partitions, groupDigits(t.Records)))
	}
	if len(pv.Groups) > 0 {
		out = append(out, "  groups: "+strings.Join(pv.Groups, ", "))
	}
	return out
}

// groupDigits writes n with thousands separators (1,204,331).
func groupDigits(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
