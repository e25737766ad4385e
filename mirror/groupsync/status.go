package groupsync

import (
	"context"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/topology"
)

// Status is where one group's sync stands on the standby, for
// drctl status. It is computed from the standby alone (the snapshot and
// the standby's committed offsets), so it is available when the source is
// gone, and costs no read of the offset map.
type Status struct {
	Group string `json:"group" yaml:"group"`
	// InSync is true when the last sync round left the standby holding the
	// translation of the source offsets it observed, and the standby's
	// committed offsets still equal that translation. A live group that
	// commits on the source between rounds stays in sync in this sense;
	// BehindSeconds says how far its standby position trails.
	InSync bool `json:"in_sync" yaml:"in_sync"`
	// BehindSeconds is the age of the source offsets whose translation the
	// standby holds (now minus SyncedAt): about one sync interval when all
	// is well. -1 when the standby never held a translation.
	BehindSeconds float64 `json:"behind_seconds" yaml:"behind_seconds"`
	// ObservedAt is when the mirror last read the group on the source.
	ObservedAt time.Time `json:"observed_at" yaml:"observed_at"`
	// SyncedAt is when the source offsets behind the standby positions
	// were read; nil when never.
	SyncedAt *time.Time `json:"synced_at,omitempty" yaml:"synced_at,omitempty"`
	// LastAction is what the last round did with the group.
	LastAction SyncAction `json:"last_action" yaml:"last_action"`
	// Reason says, in plain words, why the group is not in sync.
	Reason string `json:"reason,omitempty" yaml:"reason,omitempty"`

	// moved: not in sync by rule 2 of syncStatus (a standby offset
	// differs from the translation), which a re-read may settle.
	moved bool
}

// StatusFrom returns, keyed by group, the sync status of every
// group of the link's snapshot that topo selects, reading only the target
// through dst (a client of link.Target; it is not closed). Groups the
// snapshot does not hold are absent: the mirror never saw them committed on
// the source. A link whose group sync never ran (no snapshot topic) is an
// error wrapping sarama.ErrUnknownTopicOrPartition. A group whose standby
// offsets cannot be read is reported not in sync, with the reason.
func StatusFrom(ctx context.Context, dst sarama.Client, topo *topology.Topology, link topology.Link) (map[string]Status, error) {
	return statusFrom(statusReads{
		snapshot: func() (map[string]Snapshot, error) { return LoadSnapshot(ctx, dst, link) },
		committed: func(group string) (map[topology.TopicPartition]CommittedOffset, error) {
			return FetchCommitted(ctx, dst, group, false)
		},
	}, topo, link.Target, time.Now)
}

// statusReads are the two reads of a status: the link's snapshot and a
// group's committed offsets on the standby.
type statusReads struct {
	snapshot  func() (map[string]Snapshot, error)
	committed func(group string) (map[topology.TopicPartition]CommittedOffset, error)
}

// statusRereads is how many times a group whose standby offsets differ
// from its snapshot's translation is read again before it is called out of
// sync.
const statusRereads = 2

// statusFrom computes the statuses from the reads. A sync round commits on
// the standby and then writes its snapshot, so a status read between the
// two sees the round's new offsets beside the previous snapshot, and a live
// group would flap "not in sync". A group that looks moved is therefore
// read again (snapshot and offsets, at most statusRereads times): a round
// in flight settles at once, while offsets moved by someone else stay
// different and are reported.
func statusFrom(r statusReads, topo *topology.Topology, target string, now func() time.Time) (map[string]Status, error) {
	snaps, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	out := map[string]Status{}
	var moved []string
	read := func(name string, s Snapshot) {
		standby, err := r.committed(name)
		if err != nil {
			st := syncStatus(s, nil, now())
			st.InSync, st.Reason = false, fmt.Sprintf("cannot read its offsets on %s: %v", target, err)
			out[name] = st
			return
		}
		st := syncStatus(s, standby, now())
		if st.moved {
			moved = append(moved, name)
		}
		out[name] = st
	}
	for name, s := range snaps {
		if topo.SyncsGroup(name) {
			read(name, s)
		}
	}
	for range statusRereads {
		if len(moved) == 0 {
			break
		}
		again, err := r.snapshot()
		if err != nil {
			break // keep what the first read found
		}
		names := moved
		moved = nil
		for _, name := range names {
			if s, ok := again[name]; ok {
				read(name, s)
			}
		}
	}
	return out, nil //nolint:nilerr // a failed re-read keeps what the first read found
}

// syncStatus compares a group's snapshot with its committed offsets on the
// standby. The rules, in order:
//
//  1. a last round that did not leave the standby synced (skipped, failed,
//     stale) means not in sync, for the round's reason;
//  2. a translated partition whose standby offset differs from the
//     translation means not in sync (something else moved it since);
//  3. otherwise the group is in sync (also with nothing to sync).
func syncStatus(s Snapshot, standby map[topology.TopicPartition]CommittedOffset, now time.Time) Status {
	st := Status{Group: s.Group, ObservedAt: s.ObservedAt, SyncedAt: s.SyncedAt, LastAction: s.Action, BehindSeconds: -1}
	if s.SyncedAt != nil {
		st.BehindSeconds = max(now.Sub(*s.SyncedAt).Seconds(), 0)
	}
	switch s.Action {
	case SyncCommit, SyncInSync, SyncNothing:
	default:
		st.Reason = s.Reason
		if st.Reason == "" {
			st.Reason = "the last sync round ended " + string(s.Action)
		}
		return st
	}
	for _, o := range s.Offsets {
		if o.Target < 0 {
			continue
		}
		cur := int64(-1)
		if c, ok := standby[topology.TopicPartition{Topic: o.Topic, Partition: o.Partition}]; ok {
			cur = c.Offset
		}
		if cur != o.Target {
			st.Reason = fmt.Sprintf("%s/%d is at %d on the standby, the translation of the last observed position is %d", o.Topic, o.Partition, cur, o.Target)
			st.moved = true
			return st
		}
	}
	st.InSync = true
	return st
}
