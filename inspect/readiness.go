package inspect

import (
	"fmt"
	"strings"
)

// Readiness is the "ready to fail over?" verdict of a status snapshot: what
// `drctl status`, the TUI's overview and the drills' preflight all say. Its
// vocabulary is short and stable; reasons say why in plain words.
type Readiness string

const (
	Ready         Readiness = "READY"          // a planned failover can run now
	ReadyWarn     Readiness = "READY, CAVEATS" // it can run, read the reasons first
	NotReady      Readiness = "NOT READY"      // a planned failover would be refused or unsafe
	UnplannedOnly Readiness = "UNPLANNED ONLY" // the active is down: only an unplanned failover
	Unknown       Readiness = "UNKNOWN"        // what a verdict needs was not seen
)

// readinessRank orders the levels: the verdict is the worst any rule gave.
var readinessRank = map[Readiness]int{Ready: 0, ReadyWarn: 1, UnplannedOnly: 2, NotReady: 3, Unknown: 4}

// LagWarnSeconds is the mirror lag past which the verdict warns: below it a
// live producer's few in-flight records are normal and the drain copies
// them in moments.
const LagWarnSeconds = 10

// Verdict is a Readiness and its reasons, worst first.
type Verdict struct {
	Level   Readiness `json:"level" yaml:"level"`
	Reasons []string  `json:"reasons" yaml:"reasons"`
}

// readinessRule looks at one thing and may add a reason at a level.
type readinessRule func(s *Status, add func(Readiness, string))

// readinessRules are evaluated in order; each may add a reason at a level.
// Numbered so that tests and docs (docs/status.md) can name them. READY is
// what is left when no rule fires, so a rule must fire for everything a
// verdict could not see.
var readinessRules = []readinessRule{
	// 0. Roles nobody could read: nothing else can be judged.
	func(s *Status, add func(Readiness, string)) {
		if s.Roles.Active == RoleUnknown || s.Roles.Standby == RoleUnknown || s.Roles.Active == "" {
			why := "no cluster answered"
			for _, c := range s.Clusters {
				if c.Reachable {
					why = "the role state is missing on both clusters although they show a past failover (drctl roles restore --active CLUSTER restores it)"
				}
			}
			add(Unknown, "the live roles are unknown: "+why+", so neither a failover's source nor its target is known")
		}
	},
	// 1. A run in progress must finish (or be resumed) first.
	func(s *Status, add func(Readiness, string)) {
		if r := s.Roles.Run; r != nil {
			add(NotReady, fmt.Sprintf("run %s (%s) is in progress at step %d: resume it (drctl resume %s) or let it finish", r.ID, r.Kind, r.Step+1, r.ID))
		}
	},
	// 2. The standby must answer and hold current role state.
	func(s *Status, add func(Readiness, string)) {
		for _, c := range s.Clusters {
			if c.Role != "standby" {
				continue
			}
			if !c.Reachable {
				add(NotReady, "standby "+c.Name+" is unreachable: a failover has no target")
			} else if c.Stale {
				add(NotReady, "standby "+c.Name+" is stale: it must be reseeded first")
			}
		}
	},
	// 3. An active that does not answer leaves only an unplanned failover.
	func(s *Status, add func(Readiness, string)) {
		for _, c := range s.Clusters {
			if c.Role == "active" && !c.Reachable {
				add(UnplannedOnly, "active "+c.Name+" is unreachable: only an unplanned failover can run; what it did not mirror stays behind until a reseed salvages it")
			}
		}
	},
	// 4. Consumers on the standby would be moved under their feet.
	func(s *Status, add func(Readiness, string)) {
		for _, g := range s.Groups {
			if g.Standby.Members > 0 {
				add(NotReady, fmt.Sprintf("group %s has %d member(s) on the standby: stop them first", g.Name, g.Standby.Members))
			}
		}
	},
	// 5. The drain needs a mirror that runs and measures; a link whose
	// state was not read is not assumed caught up.
	func(s *Status, add func(Readiness, string)) {
		m := s.Mirror
		switch {
		case m == nil:
			if s.bothRolesReachable() {
				why := s.MirrorNotRead
				if why == "" {
					why = "its state could not be read"
				}
				add(Unknown, "mirror lag not measured: "+why)
			}
			return
		case m.Error != "":
			add(NotReady, "mirror "+m.Link+": "+m.Error)
		case !m.Running:
			add(ReadyWarn, "no mirror process runs for "+m.Link+": the drain cannot copy what is left")
		case m.LagSeconds > LagWarnSeconds:
			add(ReadyWarn, fmt.Sprintf("mirror lag %d records (%.1fs): the drain waits for them", m.LagRecords, m.LagSeconds))
		case m.LagRecords > 0:
			add(Ready, fmt.Sprintf("mirror lag %d records (%.1fs): the drain copies them", m.LagRecords, m.LagSeconds))
		}
		switch {
		case m.LostRecords > 0:
			add(ReadyWarn, fmt.Sprintf("%d records were lost to retention before they were mirrored", m.LostRecords))
		case m.LostUnacknowledged > 0:
			add(ReadyWarn, fmt.Sprintf("%d records lost to source retention before they were mirrored are on record, in neither cluster (drctl mirror lag lists them; drctl mirror ack-lost once accounted for)", m.LostUnacknowledged))
		}
	},
	// 6. Translation coverage: groups the standby does not hold in sync are
	// translated by the failover itself, but say so.
	func(s *Status, add func(Readiness, string)) {
		var behind []string
		for _, g := range s.Groups {
			if g.Sync != nil && !g.Sync.InSync {
				behind = append(behind, g.Name)
			}
		}
		if len(behind) > 0 {
			add(ReadyWarn, "not in sync on the standby: "+strings.Join(behind, ", ")+" (the failover translates them)")
		}
	},
	// 7. With fence: acl, the failover fences the active by adding ACLs:
	// drctl's principal needs Alter on it (what validate --online checks);
	// the standby needs it to lift a fence there and for the failback.
	func(s *Status, add func(Readiness, string)) {
		for _, c := range s.Clusters {
			if c.FencePermitted == nil || *c.FencePermitted {
				continue
			}
			switch c.Role {
			case "active":
				add(NotReady, "drctl's principal may not Alter ACLs on the active "+c.Name+": the fence step would fail; grant it Alter on the cluster (drctl validate --online checks it)")
			case "standby":
				add(ReadyWarn, "drctl's principal may not Alter ACLs on the standby "+c.Name+": a fence there cannot be lifted, nor a failback fence it")
			}
		}
	},
	// 8. A pause holds the mirror (a drill's, or one a killed drill left):
	// the drain would wait for it.
	func(s *Status, add func(Readiness, string)) {
		if p := s.Pause; p != nil {
			add(NotReady, fmt.Sprintf("the mirror is paused by %s until %s: the drain would wait for it; unless that drill still runs, drctl resume releases it", p.ID, p.Until.UTC().Format("15:04:05 MST")))
		}
	},
	// 9. A disruptive drill recorded its start and no result: it runs
	// now, or it was killed with the roles or a pause where it left them.
	func(s *Status, add func(Readiness, string)) {
		if d := s.LastDrill; d != nil && d.Unfinished {
			add(NotReady, fmt.Sprintf("drill %s started at %s and recorded no result: let it finish, or, if it was killed, drctl resume puts back what it left", d.ID, d.StartedAt.UTC().Format("15:04:05 MST")))
		}
	},
	// 10. The mirror's verifier found the standby different from the
	// source: failing over would hand the applications other records.
	func(s *Status, add func(Readiness, string)) {
		if m := s.Mirror; m != nil && m.Proof != nil && m.Proof.Differences > 0 {
			p := m.Proof.Differing[0]
			add(NotReady, fmt.Sprintf("the standby differs: the mirror's verifier found %d difference(s) on %d partition(s), first %s (%s); drctl verify --topic %s --partition %d shows them",
				m.Proof.Differences, len(m.Proof.Differing), p.TopicPartition(), p.FirstDifference, p.Topic, p.Partition))
		}
	},
}

// bothRolesReachable reports whether the active and the standby both
// answered.
func (s *Status) bothRolesReachable() bool {
	n := 0
	for _, c := range s.Clusters {
		if (c.Role == "active" || c.Role == "standby") && c.Reachable {
			n++
		}
	}
	return n == 2
}

// Assess gives the verdict for a snapshot; nil (no snapshot yet) is
// Unknown. It is the one readiness function: status, the TUI and the drills
// all call it.
func Assess(s *Status) Verdict {
	if s == nil {
		return Verdict{Level: Unknown, Reasons: []string{"no status read yet"}}
	}
	v := Verdict{Level: Ready}
	type reason struct {
		level Readiness
		text  string
	}
	var rs []reason
	for _, rule := range readinessRules {
		rule(s, func(l Readiness, text string) {
			rs = append(rs, reason{l, text})
			if readinessRank[l] > readinessRank[v.Level] {
				v.Level = l
			}
		})
	}
	for rank := readinessRank[Unknown]; rank >= 0; rank-- {
		for _, r := range rs {
			if readinessRank[r.level] == rank {
				v.Reasons = append(v.Reasons, r.text)
			}
		}
	}
	if len(v.Reasons) == 0 {
		v.Reasons = []string{"mirror caught up, groups in sync, no consumers on the standby"}
	}
	return v
}
