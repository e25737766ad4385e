package groupsync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/offsettranslate"
	"github.com/drctl/drctl/topology"
)

// Config is what the continuous group sync of one link needs from the
// mirror process that hosts it.
type Config struct {
	Topology *topology.Topology
	Link     topology.Link
	// Source and Target are clients of the link's clusters (the hosting
	// engine's); the sync never closes them.
	Source, Target sarama.Client
	// Leading reports whether this process runs the link's group sync now
	// (the mirror: it owns shard 0, so exactly one process of the link
	// syncs, and the duty moves with the shard). nil: always.
	Leading func() bool
	// Allowed, when set, is asked before every round whether the role
	// state on the target still lets the link write; once it says no, the
	// sync retires for good. nil: no role check.
	Allowed func(rolestate.State) bool
	// ProducerConfig applies the mirror's transactional producer settings
	// to the config of the producer that commits the groups' offsets.
	ProducerConfig func(*sarama.Config)
	Metrics        *Metrics
	// Errors counts errors by link and kind ("group-sync", "offset-map"):
	// the mirror's drctl_mirror_errors_total.
	Errors *prometheus.CounterVec
	Log    *slog.Logger
}

// Run runs the link's continuous group sync until ctx ends: every
// Topology.Mirror.GroupSyncInterval, while cfg.Leading says so, one round
// (Syncer.Round). A failed round is counted and logged; the next one
// starts afresh.
func Run(ctx context.Context, cfg Config) {
	interval := cfg.Topology.Mirror.GroupSyncInterval
	if interval <= 0 {
		interval = 5 * time.Second
	}
	g := NewSyncer(cfg)
	defer g.Close()
	m, link := cfg.Metrics, cfg.Link.String()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if cfg.Leading != nil && !cfg.Leading() {
			m.Rounds.WithLabelValues(link, "paused").Inc()
			continue
		}
		start := time.Now()
		// A round must not outlive a few intervals: a hung cluster would
		// otherwise stall the sync silently.
		rctx, cancel := context.WithTimeout(ctx, max(4*interval, 30*time.Second))
		paused, err := g.Round(rctx)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			m.Rounds.WithLabelValues(link, "error").Inc()
			cfg.Errors.WithLabelValues(link, "group-sync").Inc()
			cfg.Log.Warn("group sync round failed", "err", err)
		case paused:
			m.Rounds.WithLabelValues(link, "paused").Inc()
		case err == nil:
			m.Rounds.WithLabelValues(link, "ok").Inc()
			m.RoundTime.WithLabelValues(link).Observe(time.Since(start).Seconds())
		}
	}
}

// Syncer is the state of a link's group sync between rounds.
type Syncer struct {
	cfg      Config
	src, dst sarama.Client
	srcAdmin sarama.ClusterAdmin
	dstAdmin sarama.ClusterAdmin
	follower *offsettranslate.Follower
	prod     sarama.SyncProducer
	// sending counts the snapshot sends still in flight (see
	// writeSnapshots); Close waits for them before it closes prod.
	sending sync.WaitGroup
	// fence commits the groups' offsets, fenced by a link's fence.
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

// NewSyncer returns the group sync of cfg.Link, ready for its first round.
// Close it when done.
func NewSyncer(cfg Config) *Syncer {
	return &Syncer{cfg: cfg, src: cfg.Source, dst: cfg.Target, synced: map[string]*time.Time{}, known: map[string]bool{}, skipping: map[string]bool{},
		fence: &fencedCommitter{cl: cfg.Topology.Clusters[cfg.Link.Target], link: cfg.Link, config: cfg.ProducerConfig}}
}

// Close aborts an open transaction and closes the sync's producers.
func (g *Syncer) Close() {
	g.sending.Wait() // a snapshot send cut short by its context ends first
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
//     (Config.Allowed; paused otherwise: a retired link must not move
//     the groups of a cluster that is active now);
//  2. read the selected groups' committed offsets on the source (stable
//     offsets only);
//  3. bring the offset map up to date (after step 2, so the map is at
//     least as fresh as the positions);
//  4. translate, read the groups' states and offsets on the standby, and
//     plan (Decide);
//  5. commit the changes of every group that has no members on the
//     standby;
//  6. write the snapshot of each group read, and a tombstone for each
//     group that left the source.
func (g *Syncer) Round(ctx context.Context) (paused bool, err error) {
	cfg := g.cfg
	link := cfg.Link
	if g.retired {
		return true, nil
	}
	// Initialise the groups transactional id first, then check the role
	// state: a failover records its epoch before it fences, so a process
	// that passes this check either commits before the fence or is fenced.
	if err := g.fence.open(); err != nil {
		return false, err
	}
	if cfg.Allowed != nil {
		st, found, err := rolestate.Read(ctx, g.dst, link.Topology)
		if err != nil {
			return false, fmt.Errorf("read role state on %s: %w", link.Target, err)
		}
		if found && !cfg.Allowed(st) {
			g.retired = true
			g.fence.close()
			return true, nil
		}
	}
	if err := g.init(ctx); err != nil {
		return false, err
	}
	names, err := listGroups(ctx, g.srcAdmin, cfg.Topology)
	if err != nil {
		return false, fmt.Errorf("source %s: %w", link.Source, err)
	}
	positions, readErrs := readPositions(ctx, g.src, names)
	if err := g.poll(ctx); err != nil {
		return false, err
	}
	translations, err := translateAll(ctx, g.dst, g.dstAdmin, g.follower.Index(), cfg.Topology, link, positions, readErrs, false)
	if err != nil {
		return false, err
	}
	g.prune(positions)
	plan := Decide(&TranslationReport{Link: link.String(), Source: link.Source, Target: link.Target, Groups: translations})
	m, l := cfg.Metrics, link.String()
	snaps := make([]Snapshot, 0, len(plan.Groups))
	for i := range plan.Groups {
		gs := &plan.Groups[i]
		if gs.Action == SyncCommit {
			applyGroupWith(link, gs, g.fence.commit(gs.Group, gs.Changes))
			if gs.Committed {
				m.CommittedPartitions.WithLabelValues(l, gs.Group).Add(float64(len(gs.Changes)))
				cfg.Log.Debug("group synced", "group", gs.Group, "partitions", len(gs.Changes))
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
	if err := writeSnapshots(ctx, g.prod, &g.sending, link, snaps, gone); err != nil {
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
func (g *Syncer) report(gs *Group) {
	cfg := g.cfg
	switch gs.Action {
	case SyncSkippedActive:
		cfg.Metrics.SkippedActive.WithLabelValues(cfg.Link.String(), gs.Group).Inc()
		if !g.skipping[gs.Group] {
			cfg.Log.Warn("group sync skips a group that is active on the standby", "group", gs.Group, "reason", gs.Reason)
		}
		g.skipping[gs.Group] = true
		return
	case SyncFailed:
		cfg.Errors.WithLabelValues(cfg.Link.String(), "group-sync").Inc()
		cfg.Log.Warn("group sync failed for a group", "group", gs.Group, "reason", gs.Reason)
	}
	if g.skipping[gs.Group] {
		cfg.Log.Info("group sync resumes for a group no longer active on the standby", "group", gs.Group)
		delete(g.skipping, gs.Group)
	}
}

// init prepares the first round: admins, the snapshot topic and producer,
// and what the last snapshot says (so SyncedAt survives a restart and
// groups deleted while no process ran still get their tombstone).
func (g *Syncer) init(ctx context.Context) error {
	if g.ready {
		return nil
	}
	link := g.cfg.Link
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
		if g.prod, err = newSnapshotProducer(g.cfg.Topology.Clusters[link.Target]); err != nil {
			return err
		}
	}
	snaps, err := LoadSnapshot(ctx, g.dst, link)
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
func (g *Syncer) poll(ctx context.Context) error {
	err := g.follower.Poll(ctx, g.dst)
	if errors.Is(err, offsettranslate.ErrTruncated) || errors.Is(err, offsettranslate.ErrInconsistent) {
		g.cfg.Log.Warn("re-reading the offset map", "reason", err)
		g.follower = offsettranslate.NewFollower(g.cfg.Link.OffsetsTopic())
		err = g.follower.Poll(ctx, g.dst)
		if errors.Is(err, offsettranslate.ErrInconsistent) {
			g.cfg.Errors.WithLabelValues(g.cfg.Link.String(), "offset-map").Inc()
			g.cfg.Log.Error("offset map inconsistent; those partitions are not synced", "err", err)
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("target %s: %w", g.cfg.Link.Target, err)
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
func (g *Syncer) prune(positions []groupPositions) {
	big := map[topology.TopicPartition]bool{}
	for _, st := range g.follower.Index().Partitions() {
		if st.Runs > pruneAbove {
			big[st.TopicPartition] = true
		}
	}
	if len(big) == 0 {
		return
	}
	lowest := map[topology.TopicPartition]int64{}
	for _, gp := range positions {
		for tp, off := range gp.offsets {
			key := topology.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}
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
