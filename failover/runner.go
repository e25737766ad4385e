package failover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
	"github.com/drctl/drctl/topology"
)

// RunOptions tune Execute.
type RunOptions struct {
	// Out receives human progress lines (nil: none); JSON, if set,
	// receives the event stream instead.
	Out  io.Writer
	JSON io.Writer
	// JournalDir holds the local journals (default: $XDG_STATE_HOME/drctl/runs
	// or ~/.local/state/drctl/runs).
	JournalDir string
	Confirm    Confirm
	// Yes: the operator answered every question in advance (--yes);
	// Confirm is not asked, and the run says it was confirmed by --yes.
	Yes bool
	// SalvageTo, when set, makes the run's salvage save the records into
	// files under this directory (SalvageToDir) instead of quarantine
	// topics on the active cluster (--salvage-to).
	SalvageTo  string
	Interrupts *plans.Interrupts
	// Hooks are more views of the run (the TUI); they are not required:
	// their failures only warn.
	Hooks []plans.Hook
}

// JournalDir returns the default journal directory.
func JournalDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "drctl", "runs")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "drctl", "runs")
	}
	return filepath.Join(os.TempDir(), "drctl-runs")
}

// Execute runs plan p from its first step, or resumes it when the clusters
// or the local journal know it already. Progress goes to the local journal
// (a step that cannot be journaled does not run), to both clusters (at
// least one must record each step), and to the human or JSON view.
func Execute(ctx context.Context, clusters *kafkaconn.Clusters, p *plans.Plan, o RunOptions) error {
	topo := clusters.Topology()
	if err := p.Validate(); err != nil {
		return err
	}
	var in Inputs
	if err := p.DecodeInputs(&in); err != nil {
		return err
	}
	if in.Topology != topo.Name {
		return fmt.Errorf("%w: the plan is for topology %s, the file %s describes %s; apply it with the topology file it was made with (-c), or plan again", plans.ErrStalePlan, in.Topology, topo.Path, topo.Name)
	}
	// A plan runs only as drctl made it: re-derived from its
	// inputs before anything, even the journal, is written.
	if err := verifyPlan(topo, p, in); err != nil {
		return err
	}
	// The run goes through one session, its caller's: every step, the
	// guard's role checks and the run's record; a cluster that failed is
	// dialled again when next needed, the others never.
	clusters.Redial(ctx)
	rec := runrecord.Load(ctx, clusters, p.ID)
	if rec != nil && rec.Plan != nil {
		if err := sameRunPlan(p, rec.Plan, in); err != nil {
			return err
		}
	}
	// One drctl at a time runs a run: a second resume (here or on another
	// machine) is refused while this one holds the lease.
	runCtx, lost := context.WithCancelCause(ctx)
	defer lost(nil)
	lease, err := takeRunLease(ctx, clusters, p, in.To, lost)
	if err != nil {
		return err
	}
	defer lease.release()
	dir := o.JournalDir
	if dir == "" {
		dir = JournalDir()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("journal directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, p.ID+".jsonl")
	start := plans.Start{}
	var journal *plans.Journal
	if _, err := os.Stat(path); err == nil {
		j, st, err := plans.OpenJournal(path)
		if err != nil {
			return err
		}
		journal, start = j, st.Start()
	} else {
		j, err := plans.CreateJournal(path)
		if err != nil {
			return err
		}
		journal = j
	}
	defer journal.Close()
	if rec != nil {
		// The clusters may know of steps done on another machine.
		if s := rec.Start(); s.From > start.From {
			start = s
		}
	}
	store := &runStore{session: clusters, rec: &runrecord.Record{Plan: p, Done: make([]bool, len(p.Steps)), Outputs: map[int]json.RawMessage{}, Started: -1}}
	for i := 0; i < start.From; i++ {
		store.rec.Done[i] = true
	}
	maps.Copy(store.rec.Outputs, start.Outputs)
	hooks := []plans.Hook{journal, plans.Required(store)}
	switch {
	case o.JSON != nil:
		hooks = append(hooks, plans.NewJSONStream(o.JSON))
	case o.Out != nil:
		pr := plans.NewPrinter(o.Out)
		pr.Resume = "drctl resume " + p.ID
		pr.ChangesNothing = ChangesNothing
		hooks = append(hooks, pr)
	}
	hooks = append(hooks, o.Hooks...)
	ex := &plans.Executor{
		Registry:   registry(clusters, answers{confirm: o.Confirm, yes: o.Yes, salvageTo: o.SalvageTo}),
		Hooks:      hooks,
		Guard:      guard(topo, in, clusters),
		Actor:      plans.LocalActor(),
		Interrupts: o.Interrupts,
	}
	err = ex.RunFrom(runCtx, p, start)
	if cause := context.Cause(runCtx); errors.Is(cause, ErrRunTakenOver) {
		return fmt.Errorf("%w; this drctl stopped: %w", cause, err)
	}
	return err
}

// guard refuses to go on when the topology file changed, or when the role
// state moved on without this run.
func guard(topo *topology.Topology, in Inputs, session *kafkaconn.Clusters) plans.Guard {
	return func(ctx context.Context, p *plans.Plan, next int) error {
		if topo.Digest != in.TopologyDigest {
			return plans.Stale("the topology file %s changed since the plan was made; plan again", topo.Path)
		}
		w := within(ctx, session)
		if len(w.clients) == 0 {
			return nil // the step itself reports the unreachable clusters
		}
		cur := w.view(ctx).Current
		if cur.Run != nil && cur.Run.ID == p.ID {
			if !writesState(p, cur) {
				return plans.Stale("the role state is %s, which this plan never writes: %v; plan again", cur, ErrPlanChanged)
			}
			return nil
		}
		if cur.Epoch == in.Epoch && cur.Active == in.Active && cur.Standby == in.Standby && cur.Phase == in.Phase && cur.Run == nil {
			return nil
		}
		// A state this plan writes itself, up to the step about to run,
		// is this run's own doing (a finish killed after it took effect
		// on one cluster).
		for i := 0; i <= next && i < len(p.Steps); i++ {
			var sp stateParams
			if p.Steps[i].DecodeParams(&sp) == nil && sp.State.Topology != "" && sameState(cur, sp.State) {
				return nil
			}
		}
		return plans.Stale("the role state is now %s, the plan was made at epoch %d (active %s); run drctl status and plan again", cur, in.Epoch, in.Active)
	}
}

// runStore is the required hook that records run progress in the clusters.
type runStore struct {
	session *kafkaconn.Clusters
	mu      sync.Mutex
	rec     *runrecord.Record
}

func (s *runStore) Handle(ctx context.Context, e plans.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch e.Type {
	case plans.EventStepStarted:
		s.rec.Started = e.Index
	case plans.EventStepDone:
		s.rec.Done[e.Index] = true
		if len(e.Outputs) > 0 {
			s.rec.Outputs[e.Index] = e.Outputs
		}
	case plans.EventStepFailed:
		s.rec.Error = e.Error
	case plans.EventRunDone:
		s.rec.Outcome = e.Outcome
		s.rec.Finished = e.Outcome == plans.OutcomeSucceeded
		if e.Error != "" {
			s.rec.Error = e.Error
		}
	default:
		return nil
	}
	// A run that stopped before it changed anything (stale, preflight, a
	// failed before hook, a "no" at its question) leaves no record in the
	// clusters.
	if !s.changedAny() {
		return nil
	}
	s.session.Redial(ctx)
	return runrecord.Put(ctx, s.session, s.rec)
}

// changedAny reports whether the run started or finished a step that
// changes the clusters.
func (s *runStore) changedAny() bool {
	steps := s.rec.Plan.Steps
	if i := s.rec.Started; i >= 0 && i < len(steps) && !ChangesNothing(steps[i].Name) {
		return true
	}
	for i, d := range s.rec.Done {
		if d && !ChangesNothing(steps[i].Name) {
			return true
		}
	}
	return false
}

// ChangesNothing reports whether a step of that name only reads or asks:
// the checks, the before hooks (the operator's own scripts) and the
// question. Every run starts with such steps, so a run stopped among them
// left the clusters as they were.
func ChangesNothing(step string) bool {
	switch step {
	case StepPreflight, StepHooksBefore, StepConfirmStopped:
		return true
	}
	return false
}

// ErrNothingToResume means no run is in progress (drctl resume).
var ErrNothingToResume = errors.New("no run is in progress; nothing to resume")

// ErrNothingToAbort means no run is in progress (drctl abort).
var ErrNothingToAbort = errors.New("no run is in progress; nothing to abort")

// ResumeID returns the run to resume: id if given, else the run the live
// role state names (ErrNothingToResume when none).
func ResumeID(ctx context.Context, clusters *kafkaconn.Clusters, id string) (string, error) {
	return runInProgress(ctx, clusters, id, ErrNothingToResume)
}

// runInProgress is id if given, else the run the live role state names;
// none is an error wrapping nothing, with the live state.
func runInProgress(ctx context.Context, clusters *kafkaconn.Clusters, id string, nothing error) (string, error) {
	topo := clusters.Topology()
	if id != "" {
		return id, nil
	}
	w := within(ctx, clusters)
	defer w.Close()
	if len(w.clients) == 0 {
		return "", fmt.Errorf("no cluster reachable to find the run in progress: %v", w.Errors())
	}
	v := w.view(ctx)
	cur := v.Current
	if cur.Run == nil {
		// A run whose last write reached one cluster only: the other still
		// names it at the same epoch.
		for _, name := range topo.ClusterNames() {
			if cs := v.Clusters[name]; cs.Found && cs.State.Run != nil && cs.State.Epoch == cur.Epoch {
				return cs.State.Run.ID, nil
			}
		}
		return "", fmt.Errorf("%w (%s)", nothing, cur)
	}
	return cur.Run.ID, nil
}

// Resume finishes run id: it takes the plan from the local journal or,
// failing that, from the clusters, and runs what is left.
func Resume(ctx context.Context, clusters *kafkaconn.Clusters, id string, o RunOptions) error {
	dir := o.JournalDir
	if dir == "" {
		dir = JournalDir()
	}
	var p *plans.Plan
	if st, err := plans.ReadJournal(filepath.Join(dir, id+".jsonl")); err == nil {
		p = st.Plan
		if st.Finished {
			return nil
		}
		if st.Outcome == plans.OutcomeAborted {
			return fmt.Errorf("%w: run %s (%s); check drctl status and plan again", ErrAborted, id, st.LastError)
		}
	}
	rec := runrecord.Load(ctx, clusters, id)
	if rec != nil && rec.Aborted != nil {
		return fmt.Errorf("%w: run %s was aborted by %s at %s (%s); check drctl status and plan again", ErrAborted, id,
			rec.Aborted.By, rec.Aborted.At.Format(time.RFC3339), rec.Aborted.Reason)
	}
	if p == nil {
		if rec == nil {
			return fmt.Errorf("run %s is known neither to the local journal in %s nor to the clusters (a run refused before its first change leaves no record): run the saved plan with drctl apply, or plan again", id, dir)
		}
		if rec.Finished {
			return nil
		}
		p = rec.Plan
	}
	return Execute(ctx, clusters, p, o)
}

// sameRunPlan refuses a plan that is not the one the clusters recorded for
// the same run (its digest covers the kind, inputs and every step).
func sameRunPlan(p, recorded *plans.Plan, in Inputs) error {
	d1, err1 := p.Digest()
	d2, err2 := recorded.Digest()
	if err1 != nil || err2 != nil || d1 != d2 {
		return fmt.Errorf("%w: run %s's plan differs from the one the clusters recorded when it started (digest %s, recorded %s); make a new plan with %s",
			ErrPlanChanged, p.ID, d1, d2, replanCommand(p.Kind, in))
	}
	return nil
}
