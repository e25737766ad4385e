package drill

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

// childDrill is what TestDrillChild runs in a child process.
type childDrill struct {
	Topology string        `json:"topology"`
	Journal  string        `json:"journal"`
	Kind     string        `json:"kind"`
	Hold     time.Duration `json:"hold"`
}

// TestDrillChild runs one disruptive drill when the parent test started
// this binary for it (DRCTL_DRILL_CHILD), so that the parent can SIGKILL
// a real drill process at a disruptive point.
func TestDrillChild(t *testing.T) {
	raw := os.Getenv("DRCTL_DRILL_CHILD")
	if raw == "" {
		t.Skip("run by the tests that kill a drill")
	}
	var c childDrill
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		t.Fatal(err)
	}
	topo, err := topology.Load(c.Topology)
	if err != nil {
		t.Fatal(err)
	}
	d := topology.DefaultDrill(topology.DrillKind(c.Kind))
	d.Params.Records, d.Params.Rate, d.Params.Hold = 30, 20, c.Hold
	_, err = Run(context.Background(), kfaketest.Session(t, topo), d, Options{JournalDir: c.Journal, Yes: true})
	t.Fatalf("the drill was to be killed; it ended: %v", err)
}

// startDrillChild starts a drill of kind in a child process and returns it.
func startDrillChild(t *testing.T, topo *topology.Topology, journal, kind string, hold time.Duration) *exec.Cmd {
	t.Helper()
	raw, _ := json.Marshal(childDrill{Topology: topo.Path, Journal: journal, Kind: kind, Hold: hold})
	cmd := exec.Command(os.Args[0], "-test.run", "^TestDrillChild$", "-test.v")
	cmd.Env = append(os.Environ(), "DRCTL_DRILL_CHILD="+string(raw))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// waitRoles polls the live roles until ok says so.
func waitRoles(t *testing.T, ctx context.Context, topo *topology.Topology, what string, ok func(inspect.Roles) bool) inspect.Roles {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r, err := inspect.CollectRoles(ctx, kfaketest.Session(t, topo))
		if err == nil && ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: roles %+v %v", what, r, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func sigkill(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// TestKilledDrillRestoredByNextDrill: a failover drill SIGKILLed during
// its hold (west active, its failover run done) records nothing more, but
// the record it stored as started holds its run; the next failover drill
// finds it, makes east active again first (nobody moved the roles since),
// completes the killed drill's record, then runs and passes.
func TestKilledDrillRestoredByNextDrill(t *testing.T) {
	p := newPair(t, "drills: {allow_disruptive: true}\n")
	topo := p.Topology
	startMirror(t, topo)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	child := startDrillChild(t, topo, dir, "failover", 5*time.Minute)
	waitRoles(t, ctx, topo, "the drill's failover to west, finished on both clusters", func(s inspect.Roles) bool {
		if s.Active != "west" || s.Phase != rolestate.PhaseSteady {
			return false
		}
		_, err := failover.ResumeID(ctx, kfaketest.Session(t, topo), "")
		return errors.Is(err, failover.ErrNothingToResume)
	})
	sigkill(t, child)

	hist, err := History(ctx, kfaketest.Session(t, topo), HistoryOptions{JournalDir: dir})
	if err != nil || len(hist) != 1 || !hist[0].Unfinished || len(hist[0].RunIDs) != 1 || hist[0].Active != "east" {
		t.Fatalf("the killed drill's record: %+v %v", hist, err)
	}
	killed := hist[0]
	var out strings.Builder
	d := topology.DefaultDrill(topology.DrillFailover)
	d.Params.Rate, d.Params.Hold = 20, time.Second
	next, err := Run(ctx, kfaketest.Session(t, topo), d, Options{JournalDir: dir, Yes: true, Out: &out})
	if err != nil || next.Verdict != Pass || next.Active != "east" {
		t.Fatalf("the next drill: %v %+v\n%s", err, next, out.String())
	}
	if !strings.Contains(out.String(), "drill "+killed.ID+" had stopped with west active") {
		t.Errorf("the next drill did not say it restored the roles:\n%s", out.String())
	}
	assertCleanAfter(t, ctx, topo, "the drill after a killed one")
	got, err := Find(ctx, kfaketest.Session(t, topo), killed.ID, HistoryOptions{JournalDir: dir})
	if err != nil || got.Unfinished || got.Verdict != Fail || !hasReason(got, "killed?") || got.FinishedAt.IsZero() {
		t.Errorf("the killed drill's record after the clean-up: %+v %v", got, err)
	}
}

// TestKilledUnplannedDrillCleanedUpByResume: an unplanned drill SIGKILLed
// in its unplanned failover run, right after the flip, leaves west active,
// the run in progress and its mirror pause recorded. What drctl resume
// does (resume the run, then the drill clean-up) finishes the run (east
// salvaged and re-seeded), releases the pause, and makes east active
// again.
func TestKilledUnplannedDrillCleanedUpByResume(t *testing.T) {
	p := newPair(t, "drills: {allow_disruptive: true}\n")
	topo := p.Topology
	startMirror(t, topo)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	child := startDrillChild(t, topo, dir, "unplanned", time.Second)
	st := waitRoles(t, ctx, topo, "the unplanned run's flip", func(s inspect.Roles) bool {
		return s.Active == "west" && s.Run != nil
	})
	sigkill(t, child)
	runID := st.Run.ID

	if _, err := failover.ResumeID(ctx, kfaketest.Session(t, topo), ""); err != nil {
		t.Fatalf("after the kill a run should be in progress: %v", err)
	}
	if ps, err := pausesOf(ctx, topo); err != nil || len(ps) != 1 || ps[0].Released {
		t.Fatalf("the killed drill's pause should still be recorded: %+v %v", ps, err)
	}
	id, did := resumeLikeCLI(t, ctx, topo, dir)
	if id != runID {
		t.Errorf("resumed %s, the drill's run was %s", id, runID)
	}
	if !strings.Contains(strings.Join(did, "\n"), "made east active again") {
		t.Errorf("the clean-up did not restore the roles: %q", did)
	}
	assertCleanAfter(t, ctx, topo, "resume after a killed unplanned drill")
	ps, err := pausesOf(ctx, topo)
	if err != nil || len(ps) != 1 || !ps[0].Released {
		t.Errorf("pauses after the clean-up: %+v %v", ps, err)
	}
	// Nothing is left: a second resume says so and changes nothing.
	if _, err := failover.ResumeID(ctx, kfaketest.Session(t, topo), ""); !errors.Is(err, failover.ErrNothingToResume) {
		t.Errorf("a second resume: %v", err)
	}
	if did, err := Cleanup(ctx, kfaketest.Session(t, topo), CleanupOptions{JournalDir: dir}); err != nil || len(did) != 0 {
		t.Errorf("a second clean-up: %q %v", did, err)
	}
	if next := runDrill(t, topo, smallCanary(), dir); next.Verdict != Pass {
		t.Errorf("a canary after the clean-up: %v", next.Reasons)
	}
}

// TestInterruptMidFailoverReachesTheRun: the drill's interrupt, given
// while its failover run is under way, stops that run after its current
// step, resumable; the drill records the step as failed, naming the run to
// resume; what drctl resume does then finishes the run and restores the
// roles the drill found.
func TestInterruptMidFailoverReachesTheRun(t *testing.T) {
	p := newPair(t, "drills: {allow_disruptive: true}\n")
	topo := p.Topology
	startMirror(t, topo)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	in := &plans.Interrupts{}
	go func() {
		for ctx.Err() == nil {
			if r, err := inspect.CollectRoles(ctx, kfaketest.Session(t, topo)); err == nil && r.Run != nil {
				in.Interrupt()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	d := topology.DefaultDrill(topology.DrillFailover)
	d.Params.Rate, d.Params.Hold = 20, time.Second
	rec, err := Run(ctx, kfaketest.Session(t, topo), d, Options{JournalDir: dir, Yes: true, Interrupts: in})
	if !errors.Is(err, plans.ErrInterrupted) || rec == nil || rec.Verdict != Fail || len(rec.RunIDs) != 1 {
		t.Fatalf("interrupted mid-failover: %v %+v", err, rec)
	}
	runID := rec.RunIDs[0]
	if !hasReason(rec, "drctl resume "+runID+" finishes it") {
		t.Errorf("the drill's reasons do not name the run to resume: %q", rec.Reasons)
	}
	roles, err := inspect.CollectRoles(ctx, kfaketest.Session(t, topo))
	if err != nil || roles.Run == nil || roles.Run.ID != runID {
		t.Fatalf("the run should have stopped resumable: %+v %v", roles, err)
	}
	id, did := resumeLikeCLI(t, ctx, topo, dir)
	if id != runID || !strings.Contains(strings.Join(did, "\n"), "made east active again") {
		t.Errorf("resumed %s (want %s), clean-up %q", id, runID, did)
	}
	assertCleanAfter(t, ctx, topo, "resume after an interrupted failover drill")
}

// resumeLikeCLI does what drctl resume does: resume the run in progress,
// then clean up after the stopped drill.
func resumeLikeCLI(t *testing.T, ctx context.Context, topo *topology.Topology, dir string) (string, []string) {
	t.Helper()
	id, err := failover.ResumeID(ctx, kfaketest.Session(t, topo), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := failover.Resume(ctx, kfaketest.Session(t, topo), id, failover.RunOptions{JournalDir: dir, Yes: true}); err != nil {
		t.Fatalf("resume %s: %v", id, err)
	}
	did, err := Cleanup(ctx, kfaketest.Session(t, topo), CleanupOptions{JournalDir: dir})
	if err != nil {
		t.Fatalf("clean-up: %v (did %q)", err, did)
	}
	return id, did
}

func pausesOf(ctx context.Context, topo *topology.Topology) ([]linkstate.Pause, error) {
	var ps []linkstate.Pause
	clusters := kafkaconn.Open(ctx, topo)
	defer clusters.Close()
	err := withClients(ctx, clusters, func(cs map[string]sarama.Client) error {
		var err error
		ps, err = linkstate.Pauses(ctx, cs, topo.Name)
		return err
	})
	return ps, err
}
