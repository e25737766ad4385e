package drill

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/internal/drilllease"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

// Errors callers branch on (the CLI maps them to exit codes).
var (
	// ErrBadInput: the drill cannot run as asked (unknown name, a
	// disruptive drill the topology does not allow, no confirmation).
	// Nothing was contacted or changed.
	ErrBadInput = errors.New("bad drill request")
	// ErrBusy: a failover, failback, reseed or another drill is running.
	ErrBusy = errors.New("another run is in progress")
)

// Options tune Run.
type Options struct {
	// Out receives human progress lines (nil: none); JSON, if set, the
	// plans event stream instead.
	Out  io.Writer
	JSON io.Writer
	// JournalDir holds the local journals and results (default:
	// failover.JournalDir()).
	JournalDir string
	Interrupts *plans.Interrupts
	// Confirm, for a disruptive drill, shows question and must return nil
	// only when the operator typed answer (the target cluster's name);
	// Yes skips it (a disruptive drill still runs only where the topology
	// allows it, whatever Yes says).
	Confirm func(question, answer string) error
	Yes     bool
	// Hooks are more views of the drill's run (the TUI); they are not
	// required: their failures only warn.
	Hooks []plans.Hook
	// Holder names this process in the drill lease (default: NewHolder()).
	Holder string
	// Slot is the scheduled time a scheduler runs the drill for (zero: run
	// by hand).
	Slot time.Time
	// WaitBusy is how long a drill waits for another drill's lease (a
	// scheduled canary that runs a few seconds each minute) before it is
	// refused; zero refuses at once.
	WaitBusy time.Duration
}

func (o Options) journalDir() string {
	if o.JournalDir != "" {
		return o.JournalDir
	}
	return failover.JournalDir()
}

// Resolve returns the drill named name in topo, or the default drill of
// kind when name is empty.
func Resolve(topo *topology.Topology, name string, kind topology.DrillKind) (*topology.NamedDrill, error) {
	if name != "" {
		d, ok := topo.Drills.Named[name]
		if !ok {
			return nil, fmt.Errorf("%w: no drill %q in drills.named of %s; use one of %v, or --kind canary", ErrBadInput, name, topo.Path, topo.Drills.DrillNames())
		}
		return d, nil
	}
	if kind == "" {
		kind = topology.DrillCanary
	}
	switch kind {
	case topology.DrillCanary, topology.DrillFailover, topology.DrillUnplanned:
	default:
		return nil, fmt.Errorf("%w: --kind %q is not a drill kind; use canary, failover or unplanned", ErrBadInput, kind)
	}
	return topology.DefaultDrill(kind), nil
}

// Run runs drill d and returns its judged, recorded result. An error means
// the drill could not run (ErrBadInput, kafkaconn.ErrUnreachable, ErrBusy) and no
// verdict exists; a failed check is a Record with verdict fail.
func Run(ctx context.Context, clusters *kafkaconn.Clusters, d *topology.NamedDrill, o Options) (*Record, error) {
	topo := clusters.Topology()
	if d.Kind.Disruptive() {
		if !topo.Drills.AllowDisruptive {
			return nil, fmt.Errorf("%w: a %s drill moves the active role; %s does not allow it (set drills.allow_disruptive: true, for staging or a maintenance window)", ErrBadInput, d.Kind, topo.Path)
		}
	}
	holder := o.Holder
	if holder == "" {
		holder = NewHolder()
	}
	roles, lease, err := acquireRunning(ctx, clusters, d, holder, o)
	if err != nil {
		return nil, err
	}
	defer func() { _ = lease.Release(context.WithoutCancel(ctx)) }()
	// A failover, failback or reseed looks for the lease at its preflight
	// and records itself a step later: one started within the same second
	// as this drill (a canary a minute beside an operator's failback) may
	// have passed its preflight before the lease was taken. What it
	// recorded by now is seen here; the check after a canary covers the rest.
	if err := rolesMoved(ctx, clusters, roles); err != nil {
		return nil, err
	}
	// The drill's own failovers run under its lease; any other is refused.
	ctx = drilllease.WithHolder(ctx, holder)
	if d.Kind.Disruptive() && !o.Yes {
		if o.Confirm == nil {
			return nil, fmt.Errorf("%w: a %s drill moves the active role to %s; run it on a terminal to confirm, or pass --yes", ErrBadInput, d.Kind, roles.Standby)
		}
		q := fmt.Sprintf("This %s drill makes %s the active cluster, then fails back. Type %s to go on: ", d.Kind, roles.Standby, roles.Standby)
		if d.Kind == topology.DrillUnplanned {
			q = fmt.Sprintf("This unplanned drill pauses the mirror %s->%s, makes %s the active cluster as if %s were lost (%s is fenced, what it holds that never reached %s is salvaged, then it is wiped and re-seeded), then fails back. Type %s to go on: ",
				roles.Active, roles.Standby, roles.Standby, roles.Active, roles.Active, roles.Standby, roles.Standby)
		}
		if err := o.Confirm(q, roles.Standby); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadInput, err)
		}
	}
	if d.Kind.Disruptive() {
		// This drill holds the running lease: a pause still holding is a
		// dead drill's.
		if released, err := ReleasePauses(ctx, clusters); err == nil && len(released) > 0 && o.Out != nil {
			fmt.Fprintf(o.Out, "released the mirror pause(s) a stopped drill left: %s\n", pauseNames(released))
		}
		var restored string
		if roles, restored, err = restoreRoles(ctx, clusters, roles, o); err != nil {
			return nil, err
		}
		if restored != "" && o.Out != nil {
			fmt.Fprintln(o.Out, restored)
		}
	}
	id := newDrillID(d.Kind)
	rec := &Record{ID: id, Drill: d.Name, Kind: string(d.Kind), Topology: topo.Name, TopologyDigest: topo.Digest,
		By: plans.LocalActor(), StartedAt: time.Now().UTC(), Active: roles.Active, Standby: roles.Standby,
		Objectives: objectivesOf(d)}
	if !o.Slot.IsZero() {
		slot := o.Slot.UTC()
		rec.ScheduledFor = &slot
	}
	var p *plans.Plan
	var reg *plans.Registry
	cleanup := func() {}
	failed := func() []Direction { return nil }
	switch d.Kind {
	case topology.DrillCanary:
		p, reg = canaryPlan(clusters, d, id, roles.Active, roles.Standby, o.journalDir())
	default:
		// Recorded as started before its first change, and again with
		// each run it starts: a drill killed outright is still found by
		// the next one and by drctl resume (see restoreRoles).
		started := *rec
		started.Unfinished, started.Verdict = true, Fail
		started.Reasons = []string{fmt.Sprintf("the drill started at %s and recorded no result: it still runs, or it was killed (the next disruptive drill or drctl resume puts the roles back)",
			rec.StartedAt.Format(time.RFC3339))}
		if err := Store(ctx, clusters, &started, o.journalDir()); err != nil {
			return nil, fmt.Errorf("a disruptive drill changes nothing before it is recorded as started: %w", err)
		}
		noteRun := func(runID string) error {
			started.RunIDs = append(started.RunIDs, runID)
			rec.RunIDs = started.RunIDs
			return Store(ctx, clusters, &started, o.journalDir())
		}
		p, reg, cleanup, failed = failoverPlan(clusters, d, id, roles.Active, roles.Standby, o, noteRun)
	}
	runErr := execute(ctx, p, reg, rec, o)
	cleanup()
	keepFailed(rec, failed())
	if d.Kind == topology.DrillCanary {
		// A canary never moves the roles: if they moved, another run did,
		// and the canary's checks (replication to the standby, the
		// failover preflight) measured that run, not the link.
		if err := rolesMoved(ctx, clusters, roles); err != nil {
			return nil, fmt.Errorf("%w; the canary ran beside it, so it records no result", err)
		}
	}
	rec.FinishedAt = time.Now().UTC()
	Judge(rec)
	if d.Kind.Disruptive() && rec.Verdict != Pass {
		nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		rec.Next = nextStep(nctx, clusters, rec)
		cancel()
	}
	if err := Store(ctx, clusters, rec, o.journalDir()); err != nil {
		return rec, err
	}
	if runErr != nil && (errors.Is(runErr, plans.ErrInterrupted) || errors.Is(runErr, plans.ErrCancelled)) {
		return rec, runErr
	}
	return rec, nil
}

// runInProgress is ErrBusy when roles show a failover, failback or reseed
// in progress.
func runInProgress(roles rolestate.State) error {
	if roles.Phase == rolestate.PhaseSteady && roles.Run == nil {
		return nil
	}
	id := ""
	if roles.Run != nil {
		id = roles.Run.ID
	}
	return fmt.Errorf("%w: run %s is in progress (phase %s); a drill never runs beside a failover, failback or reseed: finish it with drctl resume %s", ErrBusy, id, roles.Phase, id)
}

// rolesMoved is ErrBusy when the live roles are no longer before (the
// steady roles a drill began with): a run is in progress, or one ran. A
// role state that cannot be read is not taken for a move (the drill's own
// steps report an unreachable cluster).
func rolesMoved(ctx context.Context, clusters *kafkaconn.Clusters, before rolestate.State) error {
	now, err := liveRoles(ctx, clusters)
	if err != nil {
		return nil //nolint:nilerr // see above
	}
	if err := runInProgress(now); err != nil {
		return err
	}
	if now.Epoch != before.Epoch {
		return fmt.Errorf("%w: the roles moved during the drill (epoch %d -> %d, active %s)", ErrBusy, before.Epoch, now.Epoch, now.Active)
	}
	return nil
}

// leaseTTL bounds how long a drill's lease outlives a holder that died.
func leaseTTL(topo *topology.Topology, d *topology.NamedDrill) time.Duration {
	if d.Kind.Disruptive() {
		return 2*topo.Failover.DrainTimeout + d.Params.Hold + 3*time.Hour
	}
	write := time.Duration(d.Params.Records) * time.Second / time.Duration(d.Params.Rate)
	return write + canaryWait(d) + groupWait(topo) + 5*time.Minute
}

func newDrillID(kind topology.DrillKind) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("drill-%s-%s-%s", kind, time.Now().UTC().Format("20060102T150405"), hex.EncodeToString(b[:]))
}

// execute runs p with the journal, the progress view and the recorder that
// fills rec's steps and measurements.
func execute(ctx context.Context, p *plans.Plan, reg *plans.Registry, rec *Record, o Options) error {
	dir := o.journalDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("journal directory %s: %w", dir, err)
	}
	journal, err := plans.CreateJournal(filepath.Join(dir, p.ID+".jsonl"))
	if err != nil {
		return err
	}
	defer journal.Close()
	hooks := []plans.Hook{journal, &recorder{rec: rec}}
	switch {
	case o.JSON != nil:
		hooks = append(hooks, plans.NewJSONStream(o.JSON))
	case o.Out != nil:
		hooks = append(hooks, plans.NewPrinter(o.Out))
	}
	hooks = append(hooks, o.Hooks...)
	ex := &plans.Executor{Registry: reg, Hooks: hooks, Actor: rec.By, Interrupts: o.Interrupts}
	return ex.Run(ctx, p)
}

// recorder is the hook that turns a drill's events into its Record: each
// step with its timing, and each step's outputs into the measurement it
// holds.
type recorder struct {
	mu  sync.Mutex
	rec *Record
}

func (r *recorder) Handle(_ context.Context, e plans.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e.Type {
	case plans.EventRunStarted:
		for _, s := range e.Plan.Steps {
			r.rec.Steps = append(r.rec.Steps, Step{Name: s.Name, Title: s.Title, Status: "skipped"})
		}
	case plans.EventStepStarted:
		r.rec.Steps[e.Index].StartedAt = e.Time.UTC()
	case plans.EventStepDone:
		s := &r.rec.Steps[e.Index]
		s.Status, s.ElapsedMS, s.Summary = "done", e.ElapsedMS, e.Summary
		r.absorb(s.Name, e.Outputs)
	case plans.EventStepFailed:
		s := &r.rec.Steps[e.Index]
		s.Status, s.ElapsedMS, s.Error = "failed", e.ElapsedMS, e.Error
	}
	return nil
}

// absorb decodes a step's outputs into the record field it fills.
func (r *recorder) absorb(step string, raw json.RawMessage) {
	if len(raw) == 0 {
		return
	}
	switch step {
	case StepCanary:
		var c canaryOutput
		if json.Unmarshal(raw, &c) == nil {
			r.rec.Canary = &c.Result
		}
	case StepGroupSync:
		r.rec.GroupSync = decode[GroupSyncResult](raw)
	case StepFailoverPreflight:
		r.rec.Preflight = decode[PreflightResult](raw)
	case StepRPO:
		r.rec.RPO = decode[RPO](raw)
	case StepRTO:
		r.rec.RTO = decode[RTO](raw)
	case StepFailover, StepFailback, StepUnplannedFailover:
		if d := decode[Direction](raw); d != nil {
			r.rec.Directions = append(r.rec.Directions, *d)
			if rpo := unplannedRPO(*d); rpo != nil {
				r.rec.RPO = rpo
			}
		}
	case StepSettle:
		if ds := decode[[]Direction](raw); ds != nil {
			r.rec.Directions = *ds
		}
	}
}

// keepFailed adds to rec the directions whose step failed, with what they
// measured (the RPO an unplanned run reported before it stopped): a failed
// drill's evidence is what it saw, not nothing.
func keepFailed(rec *Record, failed []Direction) {
	for _, d := range failed {
		rec.Directions = append(rec.Directions, d)
		if rpo := unplannedRPO(d); rpo != nil {
			rec.RPO = rpo
		}
	}
}

// unplannedRPO is the record's RPO as the unplanned run of d reported it
// (nil for a planned direction, or when the run stopped before it).
func unplannedRPO(d Direction) *RPO {
	if !d.Unplanned || !d.RPOReported {
		return nil
	}
	return &RPO{Records: d.RPOAllRecords, Seconds: d.RPOSeconds, Link: d.From + "->" + d.To,
		LostRecords: d.LostToRetention, Losses: d.Losses, LossesRead: d.LossesRead, LossesError: d.LossesError}
}

func decode[T any](raw json.RawMessage) *T {
	var v T
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return &v
}

// liveRoles resolves the live roles through the drill's session; a drill
// needs both clusters, so either being unreachable is
// kafkaconn.ErrUnreachable.
func liveRoles(ctx context.Context, clusters *kafkaconn.Clusters) (rolestate.State, error) {
	topo := clusters.Topology()
	clusters.Redial(ctx)
	var errs []error
	for _, name := range topo.ClusterNames() {
		if _, err := clusters.Need(name); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return rolestate.State{}, fmt.Errorf("a drill needs both clusters: %w", errors.Join(errs...))
	}
	v, _ := rolestate.ResolveLive(ctx, clusters)
	return v.Current, nil
}

// acquireRunning checks that nothing else moves the roles and takes the
// drill lease, waiting up to o.WaitBusy for another drill to let go of it
// (the checks are made again after each wait: the other drill may have
// moved the roles). It returns the live roles the lease was taken under.
func acquireRunning(ctx context.Context, clusters *kafkaconn.Clusters, d *topology.NamedDrill, holder string, o Options) (rolestate.State, *drilllease.Lease, error) {
	topo := clusters.Topology()
	deadline := time.Now().Add(o.WaitBusy)
	told := false
	for {
		roles, err := liveRoles(ctx, clusters)
		if err != nil {
			return roles, nil, err
		}
		if err := runInProgress(roles); err != nil {
			return roles, nil, err
		}
		if d.Kind.Disruptive() {
			// A run killed while it wrote its last state leaves it on one
			// cluster only: the roles look steady, but a failover would be
			// refused half-way.
			if id, err := failover.ResumeID(ctx, clusters, ""); err == nil {
				return roles, nil, fmt.Errorf("%w: run %s did not finish (a cluster still records it in progress); a drill never runs beside a failover, failback or reseed: finish it with drctl resume %s", ErrBusy, id, id)
			}
		}
		lease, err := AcquireFor(ctx, clusters, drilllease.RunningKey, holder, fmt.Sprintf("drill %s (kind %s)", d.Name, d.Kind), leaseTTL(topo, d))
		if err == nil {
			return roles, lease, nil
		}
		if !errors.Is(err, drilllease.ErrLocked) {
			return roles, nil, err
		}
		if time.Now().After(deadline) {
			waited := ""
			if o.WaitBusy > 0 {
				waited = fmt.Sprintf(" after waiting %s", o.WaitBusy.Round(time.Second))
			}
			return roles, nil, fmt.Errorf("%w: another drill is running%s (%v)", ErrBusy, waited, err)
		}
		if !told && o.Out != nil {
			fmt.Fprintf(o.Out, "Another drill is running (%v): waiting up to %s for it to finish.\n", err, time.Until(deadline).Round(time.Second))
			told = true
		}
		var stopping <-chan struct{}
		if o.Interrupts != nil {
			stopping = o.Interrupts.Stopping()
		}
		select {
		case <-ctx.Done():
			return roles, nil, ctx.Err()
		case <-stopping:
			return roles, nil, fmt.Errorf("%w: stopped waiting for another drill (%v); nothing was changed", plans.ErrInterrupted, err)
		case <-time.After(time.Second):
		}
	}
}
