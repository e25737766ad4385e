package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/offsettranslate"
)

// groupSyncShard is the shard whose owner runs the link's group sync: one
// process of the link syncs groups, and the worker group moves the duty
// with the shard when that process dies.
const groupSyncShard int32 = 0

// syncGroupsLoop runs the link's continuous group sync until ctx ends:
// every topo.Mirror.GroupSyncInterval, while this process owns shard 0
// and the role state on the target still allows the link, one round
// (groupSyncer.round). src and dst are the engine's clients; the loop does
// not close them.
func (e *Engine) syncGroupsLoop(ctx context.Context, src, dst sarama.Client) {
	interval := e.topo.Mirror.GroupSyncInterval
	if interval <= 0 {
		interval = 5 * time.Second
	}
	g := newGroupSyncer(e, src, dst)
	defer g.close()
	m, link := e.metrics.GroupSync, e.link.String()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !slices.Contains(e.OwnedShards(), groupSyncShard) {
			m.Rounds.WithLabelValues(link, "paused").Inc()
			continue
		}
		start := time.Now()
		// A round must not outlive a few intervals: a hung cluster would
		// otherwise stall the sync silently.
		rctx, cancel := context.WithTimeout(ctx, max(4*interval, 30*time.Second))
		paused, err := g.round(rctx)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			m.Rounds.WithLabelValues(link, "error").Inc()
			e.metrics.Errors.WithLabelValues(link, "group-sync").Inc()
			e.log.Warn("group sync round failed", "err", err)
		case paused:
			m.Rounds.WithLabelValues(link, "paused").Inc()
		case err == nil:
			m.Rounds.WithLabelValues(link, "ok").Inc()
			m.RoundTime.WithLabelValues(link).Observe(time.Since(start).Seconds())
		}
	}
}

// groupSyncer is the state of a link's group sync between rounds.
type groupSyncer struct {
	e        *Engine
	src, dst sarama.Client
	srcAdmin sarama.ClusterAdmin
	dstAdmin sarama.ClusterAdmin
	follower *offsettranslate.Follower
	prod     sarama.SyncProducer
	// fence commits the groups' offsets, fenced by FenceLink.
	fence *fencedCommitter
	// retired: the role state no longer allows the link; the groups
	// transactional id is not initialised again (that would fence the
	// link that runs now).
	retired bool
	ready   bool // the snapshot topic exists and the last snapshot was read
	// synced is the last SyncedAt of each group; known the groups the
	// snapshot holds; skipping the groups last skipped as active (to log
	// only changes).
	synced   map[string]*time.Time
	known    map[string]bool
	skipping map[string]bool
}

func newGroupSyncer(e *Engine, src, dst sarama.Client) *groupSyncer {
	return &groupSyncer{e: e, src: src, dst: dst, synced: map[string]*time.Time{}, known: map[string]bool{}, skipping: map[string]bool{},
		fence: &fencedCommitter{cl: e.dstCluster, link: e.link}}
}

func (g *groupSyncer) close() {
	if g.prod != nil {
		_ = g.prod.Close()
	}
	g.fence.close()
	// The admins share the engine's clients; closing them would close
	// the clients.
}

// round runs one sync round:
//
//  1. check on the target that the role state still allows the link
//     (Options.Allowed; paused otherwise: a retired link must not move
//     the groups of a cluster that is active now);
//  2. read the selected groups' committed offsets on the source (stable
//     offsets only);
//  3. bring the offset map up to date (after step 2, so the map is at
//     least as fresh as the positions);
//  4. translate, read the groups' states and offsets on the standby, and
//     plan (PlanGroupSync);
//  5. commit the changes of every group that has no members on the
//     standby;
//  6. write the snapshot of each group read, and a tombstone for each
//     group that left the source.
func (g *groupSyncer) round(ctx context.Context) (paused bool, err error) {
	e := g.e
	link := e.link
	if g.retired {
		return true, nil
	}
	// Initialise the groups transactional id first, then check the role
	// state: a failover records its epoch before it fences, so a process
	// that passes this check either commits before the fence or is fenced.
	if err := g.fence.open(); err != nil {
		return false, err
	}
	if e.opts.Epoch >= 0 {
		st, found, err := rolestate.Read(ctx, g.dst, link.Topology)
		if err != nil {
			return false, fmt.Errorf("read role state on %s: %w", link.Target, err)
		}
		if found && !e.opts.Allowed(st) {
			g.retired = true
			g.fence.close()
			return true, nil
		}
	}
	if err := g.init(ctx); err != nil {
		return false, err
	}
	names, err := listGroups(ctx, g.srcAdmin, e.topo)
	if err != nil {
		return false, fmt.Errorf("source %s: %w", link.Source, err)
	}
	positions, readErrs := readPositions(ctx, g.src, names)
	if err := g.poll(ctx); err != nil {
		return false, err
	}
	translations, err := translateAll(ctx, g.dst, g.dstAdmin, g.follower.Index(), e.topo, link, positions, readErrs, false)
	if err != nil {
		return false, err
	}
	g.prune(positions)
	plan := PlanGroupSync(&TranslationReport{Link: link.String(), Source: link.Source, Target: link.Target, Groups: translations})
	m, l := e.metrics.GroupSync, link.String()
	snaps := make([]GroupSnapshot, 0, len(plan.Groups))
	for i := range plan.Groups {
		gs := &plan.Groups[i]
		if gs.Action == SyncCommit {
			applyGroupWith(link, gs, g.fence.commit(gs.Group, gs.Changes))
			if gs.Committed {
				m.CommittedPartitions.WithLabelValues(l, gs.Group).Add(float64(len(gs.Changes)))
				e.log.Debug("group synced", "group", gs.Group, "partitions", len(gs.Changes))
			}
		}
		g.report(gs)
		if readErrs[gs.Group] != nil {
			continue // keep the last good snapshot of the group
		}
		s := newSnapshot(link.Source, translations[i], positions[i], *gs, g.synced[gs.Group])
		g.synced[gs.Group] = s.SyncedAt
		if s.SyncedAt != nil {
			m.LastSynced.WithLabelValues(l, gs.Group).Set(float64(s.SyncedAt.UnixNano()) / 1e9)
		}
		snaps = append(snaps, s)
	}
	listed := map[string]bool{}
	for _, n := range names {
		listed[n] = true
	}
	var gone []string
	for n := range g.known {
		if !listed[n] {
			gone = append(gone, n)
		}
	}
	slices.Sort(gone)
	if err := writeSnapshots(ctx, g.prod, link, snaps, gone); err != nil {
		return false, err
	}
	for _, n := range gone {
		delete(g.known, n)
		delete(g.synced, n)
		m.LastSynced.DeleteLabelValues(l, n)
	}
	for _, s := range snaps {
		g.known[s.Group] = true
	}
	return false, nil
}

// report counts and logs what happened to one group, logging only changes
// of the skipped-active condition.
func (g *groupSyncer) report(gs *GroupSync) {
	e := g.e
	switch gs.Action {
	case SyncSkippedActive:
		e.metrics.GroupSync.SkippedActive.WithLabelValues(e.link.String(), gs.Group).Inc()
		if !g.skipping[gs.Group] {
			e.log.Warn("group sync skips a group that is active on the standby", "group", gs.Group, "reason", gs.Reason)
		}
		g.skipping[gs.Group] = true
		return
	case SyncFailed:
		e.metrics.Errors.WithLabelValues(e.link.String(), "group-sync").Inc()
		e.log.Warn("group sync failed for a group", "group", gs.Group, "reason", gs.Reason)
	}
	if g.skipping[gs.Group] {
		e.log.Info("group sync resumes for a group no longer active on the standby", "group", gs.Group)
		delete(g.skipping, gs.Group)
	}
}

// init prepares the first round: admins, the snapshot topic and producer,
// and what the last snapshot says (so SyncedAt survives a restart and
// groups deleted while no process ran still get their tombstone).
func (g *groupSyncer) init(ctx context.Context) error {
	if g.ready {
		return nil
	}
	link := g.e.link
	var err error
	if g.srcAdmin == nil {
		if g.srcAdmin, err = sarama.NewClusterAdminFromClient(g.src); err != nil {
			return fmt.Errorf("source %s: admin: %w", link.Source, err)
		}
	}
	if g.dstAdmin == nil {
		if g.dstAdmin, err = sarama.NewClusterAdminFromClient(g.dst); err != nil {
			return fmt.Errorf("target %s: admin: %w", link.Target, err)
		}
	}
	if err := ensureGroupsTopic(ctx, g.dst, link); err != nil {
		return err
	}
	if g.prod == nil {
		if g.prod, err = newSnapshotProducer(g.e.dstCluster); err != nil {
			return err
		}
	}
	snaps, err := LoadGroupSnapshot(ctx, g.dst, link)
	if err != nil {
		return fmt.Errorf("target %s: %w", link.Target, err)
	}
	for name, s := range snaps {
		g.known[name] = true
		g.synced[name] = s.SyncedAt
	}
	g.follower = offsettranslate.NewFollower(link.OffsetsTopic())
	g.ready = true
	return nil
}

// poll brings the follower's offset map up to date. A follower that finds
// the map truncated under it, or inconsistent, is replaced by a fresh one,
// which reads the map in order from its start; partitions still
// inconsistent then translate as unmapped (and so are never committed).
func (g *groupSyncer) poll(ctx context.Context) error {
	err := g.follower.Poll(ctx, g.dst)
	if errors.Is(err, offsettranslate.ErrTruncated) || errors.Is(err, offsettranslate.ErrInconsistent) {
		g.e.log.Warn("re-reading the offset map", "reason", err)
		g.follower = offsettranslate.NewFollower(g.e.link.OffsetsTopic())
		err = g.follower.Poll(ctx, g.dst)
		if errors.Is(err, offsettranslate.ErrInconsistent) {
			g.e.metrics.Errors.WithLabelValues(g.e.link.String(), "offset-map").Inc()
			g.e.log.Error("offset map inconsistent; those partitions are not synced", "err", err)
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("target %s: %w", g.e.link.Target, err)
	}
	return nil
}

// pruneAbove is how many runs a partition's map may hold before the group
// sync prunes it (about 24 bytes a run).
const pruneAbove = 10000

// prune bounds the follower's memory: a partition whose map holds more
// than pruneAbove runs forgets the runs below the lowest position any group
// has committed there. A group that later commits a lower position
// translates as unmapped here and is left alone by the sync; a failover
// translates from the whole map (offsettranslate.Load).
func (g *groupSyncer) prune(positions []groupPositions) {
	big := map[offsettranslate.TopicPartition]bool{}
	for _, st := range g.follower.Index().Partitions() {
		if st.Runs > pruneAbove {
			big[st.TopicPartition] = true
		}
	}
	if len(big) == 0 {
		return
	}
	lowest := map[offsettranslate.TopicPartition]int64{}
	for _, gp := range positions {
		for tp, off := range gp.offsets {
			key := offsettranslate.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}
			if !big[key] || off.Offset < 0 {
				continue
			}
			if cur, ok := lowest[key]; !ok || off.Offset < cur {
				lowest[key] = off.Offset
			}
		}
	}
	g.follower.Index().PruneBelow(lowest)
}
