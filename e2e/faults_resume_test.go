//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
)

// TestFaultDrctlKilledWhileBrokerDown: east's broker is SIGKILLed and
// `drctl failover --to west --unplanned` runs while it is down; drctl
// itself is SIGKILLed the moment each step starts, and `drctl resume`
// picks the run up again, one kill per step: flip-roles, fence-mirror,
// rpo-report, translate-groups and unfence-new-active while east is down
// (a resume then stops at fence-stale, which needs east), and, once east
// is back, salvage, wipe, reseed-start and wait-reseeded. The last resume
// finishes the run: west active, east its standby, phase steady, no run;
// west holds every acknowledged record of the stream exactly once, in
// order, and east, re-seeded, holds exactly west's records.
func TestFaultDrctlKilledWhileBrokerDown(t *testing.T) {
	clock := newFoClock()
	const partitions = 3
	ft := newFoTopo(t, "kr", "1s", "{fence: acl, drain_timeout: 1m, quiet_period: 1s}")
	mt := ft.mirrorTopo()
	orders := ft.topic("orders")
	createTopic(t, "east", orders, partitions, nil)
	westID, err := kafkaconn.ClusterID(ft.dial(t, "west"))
	if err != nil {
		t.Fatal(err)
	}
	m := startMirror(t, mt, "mirror")
	s := &faultStream{Topic: orders, Partitions: partitions, Pace: 50 * time.Millisecond, BatchSize: 20}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	halt := s.start(ctx, ft.Topo.Clusters["east"], ft.Name+".stream")
	defer halt()
	kfaketest.WaitFor(t, 2*time.Minute, "the mirror copies the stream", func() error {
		if n := mirroredRecords(m); n < 300 {
			return fmt.Errorf("%.0f records copied", n)
		}
		return nil
	})
	halt()
	ft.waitLinkCaught(t, "east", "west", 3*time.Minute)
	clock.lap("setup: stream written and mirrored")

	killCluster(t, "east")
	clock.lap("east killed (SIGKILL)")

	args := []string{"failover", "--to", "west", "--unplanned", "--yes"}
	kills := 0
	runID := ""
	killAt := func(step string) {
		t.Helper()
		r, killed := ft.runKilledAt(t, 3*time.Minute, step, args...)
		if !killed {
			t.Fatalf("drctl %s ended (exit %d) before step %s started:\n%s\nstderr: %s", args[0], r.Code, step, r.timings(), r.Stderr)
		}
		kills++
		for _, e := range r.Events {
			if runID == "" && e.RunID != "" {
				runID = e.RunID
			}
		}
		if runID == "" {
			t.Fatalf("drctl %s named no run before it was killed", args[0])
		}
		// The run's id, as drctl prints it in its resume command: killed
		// before the flip's first write, the role state names no run yet.
		args = []string{"resume", runID, "--yes"}
	}
	for _, step := range []string{runrecord.StepFlip, failover.StepFenceMirror, runrecord.StepRPO, failover.StepTranslateGroups, failover.StepUnfenceNew} {
		killAt(step)
	}
	// With east still down, a resume goes as far as it can and stops.
	r := ft.run(t, 3*time.Minute, nil, "resume", runID, "--yes")
	if r.Code == 0 || r.finished(failover.StepSalvage) {
		t.Fatalf("resume finished (exit %d) with east down:\n%s", r.Code, r.timings())
	}
	clock.lap(fmt.Sprintf("%d kills while east is down; resume stops before fence-stale's end", kills))

	startCluster(t, "east")
	back := time.Now()
	clock.lap("east started again")
	for _, step := range []string{failover.StepSalvage, runrecord.StepWipe, failover.StepReseedStart, failover.StepWaitReseeded} {
		killAt(step)
	}
	r = ft.run(t, 4*time.Minute, nil, "resume", runID, "--yes")
	if r.Code != 0 || r.outcome().Outcome != plans.OutcomeSucceeded {
		t.Fatalf("the last resume: exit %d, outcome %q: %s\n%s", r.Code, r.outcome().Outcome, r.outcome().Error, r.Stderr)
	}
	finished := time.Since(back)
	clock.lap("4 kills after east is back; the last resume finishes")

	roles := faultRoles(t, ft)
	for _, c := range []string{"east", "west"} {
		if roles[c] != "west/east steady" {
			t.Errorf("%s holds roles %q, want west/east steady", c, roles[c])
		}
	}
	check := checkAgainstStream(t, ft.dial(t, "west"), "west", s)
	n, err := sameTopic(ft.dial(t, "west"), ft.dial(t, "east"), orders, westID)
	if err != nil {
		t.Errorf("east after the re-seed: %v", err)
	}
	clock.lap("roles and records checked")
	t.Logf("stream: %s", s.summary())
	t.Logf("drctl SIGKILLed %d times, once at the start of each step; time to recover: the run finished %v after east was back",
		kills, finished.Round(time.Millisecond))
	t.Logf("verdict on west: %s; east re-seeded with the same %d records", check, n)
	t.Logf("phases:\n%s", clock.report())
}

// runKilledAt runs `drctl -c topo -o json args...` like run, but SIGKILLs
// it the moment it reports that step started. It reports whether it did.
func (ft *foTopo) runKilledAt(t testing.TB, timeout time.Duration, step string, args ...string) (*foRun, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, drctlBinary(t), append([]string{"-c", ft.Path, "-o", "json"}, args...)...)
	cmd.Env = append(os.Environ(), ft.env()...)
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	r := &foRun{Started: time.Now(), Progress: map[string]string{}}
	if err := cmd.Start(); err != nil {
		t.Fatalf("drctl %v: %v", args, err)
	}
	killed := false
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e plans.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Type == "" || e.Type == plans.EventStepProgress {
			continue
		}
		r.Events = append(r.Events, e)
		if !killed && e.Type == plans.EventStepStarted && e.Name == step {
			_ = cmd.Process.Kill()
			killed = true
		}
	}
	err = cmd.Wait()
	r.Took = time.Since(r.Started)
	r.Stderr = stderr.String()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	case err != nil:
		t.Fatalf("drctl %v: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("drctl %v did not finish within %v:\n%s", args, timeout, r.timings())
	}
	what := "ran to its end"
	if killed {
		what = "SIGKILLed as step " + step + " started"
	}
	t.Logf("drctl %s: %s after %v; steps:\n%s", strings.Join(args, " "), what, r.Took.Round(time.Millisecond), r.timings())
	return r, killed
}

// faultRoles renders the role state each cluster holds for the topology,
// "active/standby phase" and the run in progress, if any.
func faultRoles(t *testing.T, ft *foTopo) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, c := range []string{"east", "west"} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		st, found, err := rolestate.Read(ctx, ft.dial(t, c), ft.Name)
		cancel()
		if err != nil {
			t.Fatalf("role state of %s: %v", c, err)
		}
		if !found {
			st = rolestate.Initial(ft.Topo)
		}
		out[c] = st.Active + "/" + st.Standby + " " + string(st.Phase)
		if st.Run != nil {
			out[c] += " run " + st.Run.ID
		}
	}
	return out
}
