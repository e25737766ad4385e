package rolestate

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/drctl/drctl/topology"
)

// Phase says where a topology is in its failover/failback cycle. The
// vocabulary is short and stable; it appears in JSON output and in the state
// records themselves.
type Phase string

const (
	// PhaseSteady: the roles are settled and no run is in progress; the
	// mirror copies from Active to Standby.
	PhaseSteady Phase = "steady"
	// PhaseFailingOver: a failover run is moving the active role to the
	// other cluster.
	PhaseFailingOver Phase = "failing-over"
	// PhaseWiping: the active role has moved; the standby (the old active)
	// is stale and must be salvaged and wiped before anything is mirrored
	// into it. No mirror runs in this phase.
	PhaseWiping Phase = "wiping"
	// PhaseReseeding: the stale cluster was wiped and the mirror re-seeds
	// it from the active one, from the earliest offset, to make it the
	// standby again.
	PhaseReseeding Phase = "reseeding"
	// PhaseFailingBack: a failback run is moving the active role back to
	// the home active cluster named in the topology file.
	PhaseFailingBack Phase = "failing-back"
)

// Phases lists every phase, in cycle order.
var Phases = []Phase{PhaseSteady, PhaseFailingOver, PhaseFailingBack, PhaseWiping, PhaseReseeding}

// RunKind is the kind of a run that changes roles or rebuilds a cluster.
type RunKind string

const (
	RunFailover RunKind = "failover"
	RunFailback RunKind = "failback"
	RunReseed   RunKind = "reseed"
)

// Run is a run in progress, recorded so that `drctl resume` can finish it
// from any machine.
type Run struct {
	ID   string  `json:"id"`
	Kind RunKind `json:"kind"`
	// Step is the index of the step the run is at, as the run's plan
	// numbers its steps.
	Step      int       `json:"step"`
	StartedAt time.Time `json:"started_at"`
	// By is who started the run, as user@host.
	By string `json:"by"`
}

// State is a topology's live role state, as stored (JSON) in each cluster.
// The field names are a stable schema.
type State struct {
	Topology string `json:"topology"`
	// Epoch orders role changes: every change of roles writes a higher
	// epoch, and of two states the higher epoch wins. The state implied by
	// the topology file has epoch 0.
	Epoch   int64  `json:"epoch"`
	Active  string `json:"active"`
	Standby string `json:"standby"`
	Phase   Phase  `json:"phase"`
	// Run is the run in progress; nil exactly when Phase is steady.
	Run *Run `json:"run"`
	// ClusterIDs records the Kafka cluster id of each cluster as the run
	// that wrote this state knew it (absent before any run). A cluster
	// that later answers with another id was rebuilt or replaced: what
	// only it held is gone.
	ClusterIDs map[string]string `json:"cluster_ids,omitempty"`
	UpdatedAt  time.Time         `json:"updated_at"`
	// UpdatedBy is who wrote this state, as user@host.
	UpdatedBy string `json:"updated_by"`
}

// Initial returns the state implied by the topology file's home roles:
// epoch 0, steady, no run. It is the state of a topology that no cluster
// holds state for yet.
func Initial(topo *topology.Topology) State {
	return State{Topology: topo.Name, Epoch: 0, Active: topo.Active, Standby: topo.Standby, Phase: PhaseSteady}
}

// Validate checks a state's internal consistency: named topology, two
// distinct clusters, a known phase, a non-negative epoch, and a run exactly
// when the phase is not steady.
func (s State) Validate() error {
	var errs []error
	if s.Topology == "" {
		errs = append(errs, errors.New("no topology name"))
	}
	if s.Epoch < 0 {
		errs = append(errs, fmt.Errorf("negative epoch %d", s.Epoch))
	}
	if s.Active == "" || s.Standby == "" {
		errs = append(errs, errors.New("active or standby cluster missing"))
	} else if s.Active == s.Standby {
		errs = append(errs, fmt.Errorf("active and standby are both %q", s.Active))
	}
	switch s.Phase {
	case PhaseSteady:
		if s.Run != nil {
			errs = append(errs, fmt.Errorf("phase steady with run %s in progress", s.Run.ID))
		}
	case PhaseFailingOver, PhaseReseeding, PhaseFailingBack, PhaseWiping:
		if s.Run == nil {
			errs = append(errs, fmt.Errorf("phase %s without a run", s.Phase))
		}
	default:
		errs = append(errs, fmt.Errorf("unknown phase %q (known: steady, failing-over, failing-back, wiping, reseeding)", s.Phase))
	}
	if r := s.Run; r != nil {
		if r.ID == "" {
			errs = append(errs, errors.New("run without an id"))
		}
		switch r.Kind {
		case RunFailover, RunFailback, RunReseed:
		default:
			errs = append(errs, fmt.Errorf("run %s: unknown kind %q (known: failover, failback, reseed)", r.ID, r.Kind))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid role state: %w", err)
	}
	return nil
}

// String describes the state in a few words for people and logs.
func (s State) String() string {
	str := fmt.Sprintf("epoch %d (active %s, standby %s, %s", s.Epoch, s.Active, s.Standby, s.Phase)
	if s.Run != nil {
		// The stored Run.Step is where the run began, not where it is: the
		// run record (drctl status) knows the real step.
		str += fmt.Sprintf(", %s run %s in progress", s.Run.Kind, s.Run.ID)
	}
	return str + ")"
}

// Actor returns who this process acts for, as user@host.
func Actor() string {
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	} else if env := os.Getenv("USER"); env != "" {
		name = env
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return name + "@" + host
}

// stamp fills UpdatedAt and UpdatedBy when they are unset, so that every
// stored state says when and by whom it was written.
func stamp(s State) State {
	if s.UpdatedAt.IsZero() {
		s.UpdatedAt = time.Now().UTC().Truncate(time.Millisecond)
	}
	if s.UpdatedBy == "" {
		s.UpdatedBy = Actor()
	}
	return s
}
