package groupsync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/offsettranslate"
	"github.com/drctl/drctl/topology"
)

// ErrInternalGroup is wrapped by the error for a group whose name starts
// with topology.InternalPrefix (topology.OwnsGroup): drctl's own groups are
// never translated.
var ErrInternalGroup = errors.New("drctl's own consumer group")

// TranslateOptions choose what Translate translates.
type TranslateOptions struct {
	// Groups names the groups to translate. Empty: every group of the
	// source that the topology syncs (topology.Topology.SyncsGroup), or, with
	// FromSnapshot, every group of the snapshot.
	Groups []string
	// FromSnapshot takes the source positions from the standby's snapshot
	// (LoadSnapshot) instead of the source, which then need not be
	// reachable: for an unplanned failover.
	FromSnapshot bool
}

// Translate translates the committed source positions of consumer
// groups over link, once: it reads the positions from the source (stable
// offsets only) or from the snapshot, loads the whole offset map from the
// target (offsettranslate.Load), and reads each group's state and
// committed offsets on the standby and the target partitions' last stable
// offsets, for the report. It changes nothing on either cluster.
//
// A cluster that cannot be reached is an error wrapping
// kafkaconn.ErrUnreachable; a link whose mirror never ran (no offset map)
// an error wrapping sarama.ErrUnknownTopicOrPartition. An offset map with
// inconsistent partitions is not an error: those partitions translate as
// unmapped and the report's Problems say so. Trouble with one group is in
// that group's Error.
func Translate(ctx context.Context, clusters *kafkaconn.Clusters, link topology.Link, opts TranslateOptions) (*TranslationReport, error) {
	topo := clusters.Topology()
	for _, g := range opts.Groups {
		if topology.OwnsGroup(g) {
			return nil, fmt.Errorf("group %s: %w: it is never translated", g, ErrInternalGroup)
		}
	}
	if topo.Clusters[link.Source] == nil || topo.Clusters[link.Target] == nil {
		return nil, fmt.Errorf("no link %s in topology %s", link, topo.Name)
	}
	clusters.Connect(ctx, link.Target)
	dst, err := clusters.Need(link.Target)
	if err != nil {
		return nil, err
	}
	var positions []groupPositions
	readErrs := map[string]error{}
	if opts.FromSnapshot {
		snaps, err := LoadSnapshot(ctx, dst, link)
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", link.Target, err)
		}
		names := opts.Groups
		if len(names) == 0 {
			for g := range snaps {
				names = append(names, g)
			}
			slices.Sort(names)
		}
		for _, g := range names {
			s, ok := snaps[g]
			if !ok {
				readErrs[g] = fmt.Errorf("group %s is not in the snapshot on %s (the mirror never saw it committed on %s)", g, link.Target, link.Source)
				positions = append(positions, groupPositions{group: g})
				continue
			}
			positions = append(positions, s.positions())
		}
	} else {
		clusters.Connect(ctx, link.Source)
		src, err := clusters.Need(link.Source)
		if err != nil {
			return nil, err
		}
		names := opts.Groups
		if len(names) == 0 {
			admin, err := sarama.NewClusterAdminFromClient(src)
			if err != nil {
				return nil, fmt.Errorf("source %s: admin: %w", link.Source, err)
			}
			if names, err = listGroups(ctx, admin, topo); err != nil {
				return nil, fmt.Errorf("source %s: %w", link.Source, err)
			}
		}
		positions, readErrs = readPositions(ctx, src, names)
	}
	rep := &TranslationReport{Link: link.String(), Source: link.Source, Target: link.Target, Groups: []GroupTranslation{}}
	x, err := offsettranslate.Load(ctx, dst, link.OffsetsTopic())
	switch {
	case errors.Is(err, offsettranslate.ErrInconsistent):
		rep.Problems = append(rep.Problems, err.Error())
	case err != nil:
		return nil, fmt.Errorf("target %s: %w", link.Target, err)
	}
	admin, err := sarama.NewClusterAdminFromClient(dst)
	if err != nil {
		return nil, fmt.Errorf("target %s: admin: %w", link.Target, err)
	}
	rep.Groups, err = translateAll(ctx, dst, admin, x, topo, link, positions, readErrs, true)
	if err != nil {
		return nil, err
	}
	rep.TranslatedAt = time.Now().UTC()
	return rep, nil
}

// readPositions reads the committed, stable offsets of groups on the
// source. A group that cannot be read gets an error of its own.
func readPositions(ctx context.Context, src sarama.Client, groups []string) ([]groupPositions, map[string]error) {
	out := make([]groupPositions, 0, len(groups))
	errs := map[string]error{}
	for _, g := range groups {
		at := time.Now().UTC()
		offs, err := FetchCommitted(ctx, src, g, true)
		if err != nil {
			errs[g] = fmt.Errorf("source: %w", err)
		}
		out = append(out, groupPositions{group: g, offsets: offs, observedAt: at})
	}
	return out, errs
}

// translateAll reads each group's state and committed offsets on the
// target, and translates its positions through x. With ends set it also
// measures the target partitions' last stable offsets. Only a failure to
// describe the groups at all is an error; the rest is per group.
func translateAll(ctx context.Context, dst sarama.Client, admin sarama.ClusterAdmin, x translator, topo *topology.Topology,
	link topology.Link, positions []groupPositions, readErrs map[string]error, ends bool) ([]GroupTranslation, error) {
	names := make([]string, 0, len(positions))
	for _, p := range positions {
		names = append(names, p.group)
	}
	states, err := describeGroups(ctx, admin, names)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", link.Target, err)
	}
	var targetEnds map[topology.TopicPartition]int64
	if ends {
		seen := map[topology.TopicPartition]bool{}
		var tps []topology.TopicPartition
		mirrored := topo.Mirrors
		for _, p := range positions {
			for tp := range p.offsets {
				if !seen[tp] && mirrored(tp.Topic) {
					seen[tp] = true
					tps = append(tps, tp)
				}
			}
		}
		targetEnds = stableEnds(ctx, dst, tps)
	}
	out := make([]GroupTranslation, 0, len(positions))
	for _, p := range positions {
		if err := readErrs[p.group]; err != nil {
			out = append(out, GroupTranslation{Group: p.group, ObservedAt: p.observedAt, FromSnapshot: p.fromSnapshot,
				Standby: states[p.group], Partitions: []GroupPartition{}, Error: err.Error()})
			continue
		}
		standby, err := FetchCommitted(ctx, dst, p.group, false)
		if err != nil {
			out = append(out, GroupTranslation{Group: p.group, ObservedAt: p.observedAt, FromSnapshot: p.fromSnapshot,
				Standby: states[p.group], Partitions: []GroupPartition{}, Error: fmt.Sprintf("target %s: %v", link.Target, err)})
			continue
		}
		out = append(out, translateGroup(p, x, topo.Mirrors, states[p.group], standby, targetEnds))
	}
	return out, nil
}

// Apply commits plan's changes on the link's standby and returns
// the plan with the outcome of each group. It commits exactly the planned
// offsets, group by group, and only when nothing moved under the plan: a
// group that has members on the standby now is skipped (SyncSkippedActive;
// the coordinator would refuse the commit anyway), and a group with a
// planned partition that the standby holds at neither the plan's Before
// nor its After is left alone (SyncStale; a partition already at After,
// committed meanwhile by the mirror's group sync, is no conflict). A commit that fails leaves the group SyncFailed with the
// reason. Groups planned as anything but SyncCommit are passed through.
//
// The error is non-nil only when the target cannot be reached or its
// groups cannot be described; nothing was committed then.
func Apply(ctx context.Context, clusters *kafkaconn.Clusters, link topology.Link, plan *Sync) (*Sync, error) {
	topo := clusters.Topology()
	if topo.Clusters[link.Target] == nil {
		return nil, fmt.Errorf("no cluster %q in topology %s", link.Target, topo.Name)
	}
	if plan.Link != link.String() {
		return nil, fmt.Errorf("the plan is for link %s, not %s", plan.Link, link)
	}
	clusters.Connect(ctx, link.Target)
	dst, err := clusters.Need(link.Target)
	if err != nil {
		return nil, err
	}
	admin, err := sarama.NewClusterAdminFromClient(dst)
	if err != nil {
		return nil, fmt.Errorf("target %s: admin: %w", link.Target, err)
	}
	var names []string
	for _, g := range plan.Groups {
		if g.Action == SyncCommit {
			names = append(names, g.Group)
		}
	}
	states, err := describeGroups(ctx, admin, names)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", link.Target, err)
	}
	out := *plan
	out.Groups = slices.Clone(plan.Groups)
	for i := range out.Groups {
		g := &out.Groups[i]
		if g.Action != SyncCommit {
			continue
		}
		if st := states[g.Group]; st.Active() {
			g.Action, g.Reason = SyncSkippedActive, activeReason(g.Group, link.Target, st)+" (it joined after the plan was made)"
			continue
		}
		now, err := FetchCommitted(ctx, dst, g.Group, false)
		if err != nil {
			g.Action, g.Reason = SyncFailed, fmt.Sprintf("target %s: %v", link.Target, err)
			continue
		}
		if moved := movedSincePlan(g.Changes, now); moved != "" {
			g.Action, g.Reason = SyncStale, moved+"; nothing was committed: plan again (the mirror's group sync may have done it)"
			continue
		}
		applyGroup(ctx, dst, link, g)
	}
	return &out, nil
}

// applyGroup commits g's changes and records the outcome in g.
func applyGroup(ctx context.Context, dst sarama.Client, link topology.Link, g *Group) {
	applyGroupWith(link, g, CommitOffsets(ctx, dst, g.Group, g.Changes))
}

// applyGroupWith records in g the outcome err of committing its changes.
func applyGroupWith(link topology.Link, g *Group, err error) {
	switch {
	case err == nil:
		g.Committed = true
	case errors.Is(err, ErrGroupActive):
		g.Action, g.Reason = SyncSkippedActive, fmt.Sprintf("group %s has members on the standby %s: %v; its offsets were not changed", g.Group, link.Target, err)
	default:
		g.Action, g.Reason = SyncFailed, fmt.Sprintf("target %s: %v", link.Target, err)
	}
}

// movedSincePlan describes the first planned change whose partition the
// standby holds at neither the plan's Before nor its After (someone else,
// such as the mirror's own group sync, may already have committed After),
// or returns "".
func movedSincePlan(changes []OffsetChange, now map[topology.TopicPartition]CommittedOffset) string {
	for _, c := range changes {
		cur := int64(-1)
		if o, ok := now[topology.TopicPartition{Topic: c.Topic, Partition: c.Partition}]; ok {
			cur = o.Offset
		}
		if cur != c.Before && cur != c.After {
			return fmt.Sprintf("%s/%d moved on the standby since the plan (planned from %d, now %d)", c.Topic, c.Partition, c.Before, cur)
		}
	}
	return ""
}
