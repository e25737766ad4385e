package groupsync

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/drctl/drctl/offsettranslate"
	"github.com/drctl/drctl/topology"
)

// ErrGroupActive is wrapped by errors about a group that has members on
// the standby: drctl never changes the committed offsets of such a group.
var ErrGroupActive = errors.New("consumer group is active on the standby")

// GroupPartition is one partition of a group's translation.
type GroupPartition struct {
	Topic     string `json:"topic" yaml:"topic"`
	Partition int32  `json:"partition" yaml:"partition"`
	// SourceCommitted is the group's committed offset on the source: the
	// offset of the next record it reads there.
	SourceCommitted int64 `json:"source_committed" yaml:"source_committed"`
	// Metadata is the metadata string of the source commit; a sync
	// commits it along with the translated offset.
	Metadata string `json:"metadata,omitempty" yaml:"metadata,omitempty"`
	// Target is the translated offset on the target, -1 when there is none
	// (Status unmapped).
	Target int64 `json:"target" yaml:"target"`
	// Status says how Target relates to the offset map (see
	// offsettranslate.Status).
	Status offsettranslate.Status `json:"status" yaml:"status"`
	// Exact is true when a consumer at Target reads next exactly the
	// record the group reads next on the source (now, or once the mirror
	// copies it): status exact, or clamped-to-end with the group not ahead
	// of the mirror.
	Exact bool `json:"exact" yaml:"exact"`
	// TargetEnd is the target partition's last stable offset (where a
	// read_committed consumer stops), -1 when not measured.
	TargetEnd int64 `json:"target_end" yaml:"target_end"`
	// StandbyCommitted is the group's committed offset on the standby,
	// -1 when it has none.
	StandbyCommitted int64 `json:"standby_committed" yaml:"standby_committed"`
}

// StandbyGroup is what the standby's group coordinator says of a group.
type StandbyGroup struct {
	Exists bool `json:"exists" yaml:"exists"`
	// State is Kafka's word for the group state (Empty, Stable,
	// PreparingRebalance, ...), "" when the group does not exist.
	State   string `json:"state,omitempty" yaml:"state,omitempty"`
	Members int    `json:"members" yaml:"members"`
}

// Active reports whether the group may have consumers on the standby: it
// has members, or is in any state but Empty and Dead. Offsets of an active
// group are never changed.
func (s StandbyGroup) Active() bool {
	if s.Members > 0 {
		return true
	}
	switch s.State {
	case "", "Empty", "Dead":
		return false
	}
	return true
}

// GroupTranslation is the translation of one group's committed source
// positions.
type GroupTranslation struct {
	Group string `json:"group" yaml:"group"`
	// ObservedAt is when the source positions were read: now for a live
	// read, or when the mirror last observed them for a snapshot.
	ObservedAt time.Time `json:"observed_at" yaml:"observed_at"`
	// FromSnapshot is true when the positions come from the standby's
	// snapshot of the source groups (LoadSnapshot), not the source.
	FromSnapshot bool         `json:"from_snapshot" yaml:"from_snapshot"`
	Standby      StandbyGroup `json:"standby" yaml:"standby"`
	// Partitions are the group's committed partitions of mirrored topics,
	// ordered by topic and partition. Partitions without a committed
	// offset (or with -1) are absent.
	Partitions []GroupPartition `json:"partitions" yaml:"partitions"`
	// Unmirrored lists the topics the group committed offsets for that
	// the mirror does not copy (mirror.topics); they are not translated.
	Unmirrored []string `json:"unmirrored_topics,omitempty" yaml:"unmirrored_topics,omitempty"`
	// Error is why the group could not be read or translated; the other
	// fields are then partial.
	Error string `json:"error,omitempty" yaml:"error,omitempty"`
}

// TranslationReport is the translation of a set of groups over one link.
type TranslationReport struct {
	Link         string             `json:"link" yaml:"link"`
	Source       string             `json:"source" yaml:"source"`
	Target       string             `json:"target" yaml:"target"`
	TranslatedAt time.Time          `json:"translated_at" yaml:"translated_at"`
	Groups       []GroupTranslation `json:"groups" yaml:"groups"`
	// Problems lists what makes the whole report less than exact, such
	// as offset-map partitions that are inconsistent.
	Problems []string `json:"problems,omitempty" yaml:"problems,omitempty"`
}

// CommittedOffset is one committed offset as a group coordinator returns it.
type CommittedOffset struct {
	Offset   int64
	Metadata string
}

// groupPositions are the committed source positions of one group.
type groupPositions struct {
	group        string
	offsets      map[topology.TopicPartition]CommittedOffset
	observedAt   time.Time
	fromSnapshot bool
}

// translator is what translateGroup needs of an offset map: an
// *offsettranslate.Index.
type translator interface {
	Translate(topic string, partition int32, sourcePos int64) offsettranslate.Result
}

// translateGroup translates pos through x. Only partitions of topics that
// mirrored accepts are translated; the others are listed as unmirrored.
// Negative committed offsets ("no offset") are left out. standby holds the
// group's committed offsets on the standby (nil: none), targetEnds the
// target's last stable offsets (missing: not measured).
func translateGroup(pos groupPositions, x translator, mirrored func(topic string) bool, sg StandbyGroup,
	standby map[topology.TopicPartition]CommittedOffset, targetEnds map[topology.TopicPartition]int64) GroupTranslation {
	gt := GroupTranslation{Group: pos.group, ObservedAt: pos.observedAt, FromSnapshot: pos.fromSnapshot, Standby: sg, Partitions: []GroupPartition{}}
	unmirrored := map[string]bool{}
	for tp, c := range pos.offsets {
		if c.Offset < 0 {
			continue
		}
		if !mirrored(tp.Topic) {
			unmirrored[tp.Topic] = true
			continue
		}
		r := x.Translate(tp.Topic, tp.Partition, c.Offset)
		gp := GroupPartition{
			Topic: tp.Topic, Partition: tp.Partition, SourceCommitted: c.Offset, Metadata: c.Metadata,
			Target: r.Target, Status: r.Status, Exact: r.Status != offsettranslate.Unmapped && r.IsExact(c.Offset),
			TargetEnd: -1, StandbyCommitted: -1,
		}
		if r.Status == offsettranslate.Unmapped {
			gp.Target = -1
		}
		if end, ok := targetEnds[tp]; ok {
			gp.TargetEnd = end
		}
		if s, ok := standby[tp]; ok && s.Offset >= 0 {
			gp.StandbyCommitted = s.Offset
		}
		gt.Partitions = append(gt.Partitions, gp)
	}
	slices.SortFunc(gt.Partitions, func(a, b GroupPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	for t := range unmirrored {
		gt.Unmirrored = append(gt.Unmirrored, t)
	}
	slices.Sort(gt.Unmirrored)
	return gt
}

// SyncAction says what a group sync does, or did, with one group. The
// vocabulary is short and stable; it appears in JSON output.
type SyncAction string

const (
	// SyncCommit: the standby's offsets differ from the translation;
	// Changes lists what the sync commits.
	SyncCommit SyncAction = "commit"
	// SyncInSync: the standby already holds every translated position.
	SyncInSync SyncAction = "in-sync"
	// SyncNothing: no partition has a translated position (no committed
	// offsets on mirrored partitions, or none of them mapped yet).
	SyncNothing SyncAction = "nothing-to-sync"
	// SyncSkippedActive: the group has members on the standby; its offsets
	// are never touched.
	SyncSkippedActive SyncAction = "skipped-active"
	// SyncStale: the standby's offsets changed between the plan and its
	// application; nothing was committed. Plan again.
	SyncStale SyncAction = "stale"
	// SyncFailed: reading, translating or committing failed (Error).
	SyncFailed SyncAction = "failed"
)

// OffsetChange is one committed offset a sync moves on the standby.
type OffsetChange struct {
	Topic     string `json:"topic" yaml:"topic"`
	Partition int32  `json:"partition" yaml:"partition"`
	// Before is the standby's committed offset now, -1 when none.
	Before int64 `json:"before" yaml:"before"`
	// After is the translated position the sync commits.
	After    int64                  `json:"after" yaml:"after"`
	Status   offsettranslate.Status `json:"status" yaml:"status"`
	Exact    bool                   `json:"exact" yaml:"exact"`
	Metadata string                 `json:"-" yaml:"-"`
}

// Group is the sync of one group: what it changes (a plan) or changed
// (a result).
type Group struct {
	Group  string     `json:"group" yaml:"group"`
	Action SyncAction `json:"action" yaml:"action"`
	// Reason explains a skipped, stale or failed group in plain words.
	Reason  string         `json:"reason,omitempty" yaml:"reason,omitempty"`
	Changes []OffsetChange `json:"changes" yaml:"changes"`
	// Unchanged counts the partitions already at their translated
	// position; Untranslated those without one (unmapped), left as they
	// are on the standby.
	Unchanged    int `json:"unchanged" yaml:"unchanged"`
	Untranslated int `json:"untranslated" yaml:"untranslated"`
	// ObservedAt is when the source positions behind the changes were read.
	ObservedAt time.Time `json:"observed_at" yaml:"observed_at"`
	// Committed is set by Apply: the changes are on the standby.
	Committed bool `json:"committed" yaml:"committed"`
}

// Synced reports whether the standby holds the group's translated
// positions: already, or after the changes were committed.
func (g Group) Synced() bool {
	return g.Action == SyncInSync || g.Action == SyncCommit && g.Committed
}

// Sync is what a group sync changes on the standby, group by group.
// It is data: Decide builds it without contacting a cluster,
// Apply commits exactly its changes.
type Sync struct {
	Link    string    `json:"link" yaml:"link"`
	Source  string    `json:"source" yaml:"source"`
	Target  string    `json:"target" yaml:"target"`
	Planned time.Time `json:"planned_at" yaml:"planned_at"`
	Groups  []Group   `json:"groups" yaml:"groups"`
}

// Changes counts the offsets the plan moves.
func (p *Sync) Changes() int {
	n := 0
	for _, g := range p.Groups {
		if g.Action == SyncCommit {
			n += len(g.Changes)
		}
	}
	return n
}

// NotSynced lists the groups the plan or its result leaves out of sync
// (skipped, stale, failed, or committed with an error), with their reasons.
func (p *Sync) NotSynced() []Group {
	var out []Group
	for _, g := range p.Groups {
		switch g.Action {
		case SyncSkippedActive, SyncStale, SyncFailed:
			out = append(out, g)
		}
	}
	return out
}

// Decide decides, from a translation report, what a sync commits on
// the standby. The rules, in order, for each group:
//
//  1. A group whose translation failed is failed.
//  2. A group active on the standby (StandbyGroup.Active) is skipped: its
//     offsets are never changed, whatever they are.
//  3. Each partition with a translated position (status exact,
//     clamped-to-end or before-start) whose standby offset differs from
//     it is a change Before -> After; moving backwards too, since the
//     standby must hold what the source holds (a reset on the source is
//     carried over). Unmapped partitions are left as they are.
//  4. A group with changes is committed; one without changes but with
//     translated partitions is in sync; any other has nothing to sync.
//
// Decide is pure: it reads only rep.
func Decide(rep *TranslationReport) *Sync {
	p := &Sync{Link: rep.Link, Source: rep.Source, Target: rep.Target, Planned: time.Now().UTC(), Groups: []Group{}}
	for _, gt := range rep.Groups {
		p.Groups = append(p.Groups, planGroup(gt, rep.Target))
	}
	return p
}

func planGroup(gt GroupTranslation, target string) Group {
	gs := Group{Group: gt.Group, Changes: []OffsetChange{}, ObservedAt: gt.ObservedAt}
	switch {
	case gt.Error != "":
		gs.Action, gs.Reason = SyncFailed, gt.Error
		return gs
	case gt.Standby.Active():
		gs.Action, gs.Reason = SyncSkippedActive, activeReason(gt.Group, target, gt.Standby)
		return gs
	}
	for _, p := range gt.Partitions {
		switch {
		case p.Status == offsettranslate.Unmapped || p.Target < 0:
			gs.Untranslated++
		case p.StandbyCommitted == p.Target:
			gs.Unchanged++
		default:
			gs.Changes = append(gs.Changes, OffsetChange{Topic: p.Topic, Partition: p.Partition, Before: p.StandbyCommitted,
				After: p.Target, Status: p.Status, Exact: p.Exact, Metadata: p.Metadata})
		}
	}
	switch {
	case len(gs.Changes) > 0:
		gs.Action = SyncCommit
	case gs.Unchanged > 0:
		gs.Action = SyncInSync
	default:
		gs.Action = SyncNothing
	}
	return gs
}

func activeReason(group, target string, sg StandbyGroup) string {
	return fmt.Sprintf("group %s has %d members on the standby %s (state %s): its offsets are never changed while it is active; stop those consumers, then sync again",
		group, sg.Members, target, sg.State)
}
