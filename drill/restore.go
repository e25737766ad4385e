package drill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/internal/drilllease"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/runrecord"
	"github.com/drctl/drctl/topology"
)

// restoreRoles puts the roles back where the newest drill found them when
// that drill was disruptive and stopped (interrupted, failed, killed) with
// them moved and nobody moved them since: a failover to the cluster it
// found active. "Nobody since" means no run in the clusters started after
// the drill but the runs it recorded as its own (Record.RunIDs, each
// recorded before it started; a run of its own that drctl resume finished
// later counts as its own). A drill killed before it recorded a result
// (its started record stayed, see Record.Unfinished) gets its record
// completed, so that it is put right once.
// It runs under the caller's lease, before the caller's own drill, and
// returns the refreshed roles and what it did ("" when nothing). A history
// or run list that cannot be read restores nothing.
func restoreRoles(ctx context.Context, clusters *kafkaconn.Clusters, roles rolestate.State, o Options) (rolestate.State, string, error) {
	topo := clusters.Topology()
	hist, err := History(ctx, clusters, HistoryOptions{JournalDir: o.journalDir()})
	if err != nil || len(hist) == 0 {
		return roles, "", nil //nolint:nilerr // no readable history: nothing to restore, the drill goes on
	}
	last := hist[0] // newest first
	if !topology.DrillKind(last.Kind).Disruptive() || last.Verdict == Pass || last.Active == "" || topo.Clusters[last.Active] == nil {
		return roles, "", nil
	}
	others, err := runsSince(ctx, clusters, last)
	if err != nil {
		return roles, "", nil //nolint:nilerr // cannot tell who moved the roles: leave them
	}
	var note, done string
	now := roles
	switch {
	case len(others) > 0:
		note = fmt.Sprintf("the roles were not restored: run(s) %s changed them since the drill started", strings.Join(others, ", "))
	case last.Active == roles.Active:
		note = fmt.Sprintf("the roles were as it found them (%s active)", last.Active)
	default:
		if now, done, err = failBackTo(ctx, clusters, roles, last, o); err != nil {
			return roles, "", err
		}
		note = done
	}
	if !last.Unfinished {
		return now, done, nil
	}
	fin := last
	fin.Unfinished, fin.FinishedAt, fin.Verdict = false, time.Now().UTC(), Fail
	fin.Reasons = append(append([]string(nil), last.Reasons...), "stopped without recording a result (killed?); "+note)
	if err := Store(ctx, clusters, &fin, o.journalDir()); err != nil {
		return now, done, fmt.Errorf("complete the record of the stopped drill %s: %w", last.ID, err)
	}
	if done == "" {
		done = fmt.Sprintf("drill %s had stopped without a result; %s", last.ID, note)
	}
	return now, done, nil
}

// runsSince returns the runs the clusters recorded that started after
// drill last did and are not its own, sorted.
func runsSince(ctx context.Context, clusters *kafkaconn.Clusters, last Record) ([]string, error) {
	runs, err := runrecord.List(ctx, clusters)
	if err != nil {
		return nil, err
	}
	own := slices.Clone(last.RunIDs)
	for _, d := range last.Directions { // records of drills before RunIDs
		own = append(own, d.RunID)
	}
	var others []string
	for _, r := range runs {
		if r.Plan.CreatedAt.After(last.StartedAt) && !slices.Contains(own, r.Plan.ID) {
			others = append(others, r.Plan.ID)
		}
	}
	slices.Sort(others)
	return others, nil
}

// failBackTo runs the failover that makes the cluster last found active
// active again.
func failBackTo(ctx context.Context, clusters *kafkaconn.Clusters, roles rolestate.State, last Record, o Options) (rolestate.State, string, error) {
	topo := clusters.Topology()
	req := failover.FailoverRequest{To: last.Active}
	if last.Active == topo.Active {
		req.Kind = rolestate.RunFailback
	}
	p, err := failover.PlanFailover(ctx, clusters, req)
	if err != nil {
		return roles, "", fmt.Errorf("drill %s stopped with %s active; plan its restore to %s: %w", last.ID, roles.Active, last.Active, err)
	}
	if err := failover.Execute(ctx, clusters, p, failover.RunOptions{JournalDir: o.journalDir(), Yes: true, Out: o.Out, Interrupts: o.Interrupts}); err != nil {
		return roles, "", fmt.Errorf("drill %s stopped with %s active; its restore to %s (run %s): %w (drctl resume %s finishes it)", last.ID, roles.Active, last.Active, p.ID, err, p.ID)
	}
	now, err := liveRoles(ctx, clusters)
	if err != nil {
		return roles, "", err
	}
	return now, fmt.Sprintf("drill %s had stopped with %s active; run %s made %s active again", last.ID, roles.Active, p.ID, last.Active), nil
}

// CleanupOptions tune Cleanup.
type CleanupOptions struct {
	Out        io.Writer
	JournalDir string
}

// Cleanup puts right what a stopped disruptive drill left, as the next
// disruptive drill would before it runs: it releases the mirror pauses
// still holding and restores the roles the drill found (see restoreRoles).
// drctl resume calls it once no run is left in progress. It takes the
// drills' running lease for the time: while a drill runs, it does nothing
// and says so. It returns what it did, one line each (none: nothing was
// left).
func Cleanup(ctx context.Context, clusters *kafkaconn.Clusters, o CleanupOptions) ([]string, error) {
	roles, err := liveRoles(ctx, clusters)
	if err != nil {
		return nil, err
	}
	if roles.Phase != rolestate.PhaseSteady || roles.Run != nil {
		return nil, nil // a run is in progress: resume it first
	}
	if _, err := failover.ResumeID(ctx, clusters, ""); err == nil {
		return nil, nil // a run's last state reached one cluster only: resume it first
	}
	if !leftBehind(ctx, clusters, roles, o.JournalDir) {
		return nil, nil // nothing to put right: change nothing, not even the lease
	}
	holder := NewHolder()
	lease, err := AcquireFor(ctx, clusters, drilllease.RunningKey, holder, "drctl resume (clean-up after a stopped drill)", time.Hour)
	if err != nil {
		if errors.Is(err, drilllease.ErrLocked) {
			return []string{"a drill is running; nothing of it was cleaned up (" + err.Error() + ")"}, nil
		}
		return nil, err
	}
	defer func() { _ = lease.Release(context.WithoutCancel(ctx)) }()
	ctx = drilllease.WithHolder(ctx, holder)
	var did []string
	released, err := ReleasePauses(ctx, clusters)
	if err != nil {
		return did, fmt.Errorf("release the mirror pauses a stopped drill left: %w", err)
	}
	if len(released) > 0 {
		did = append(did, "released the mirror pause(s) a stopped drill left: "+pauseNames(released))
	}
	_, restored, err := restoreRoles(ctx, clusters, roles, Options{Out: o.Out, JournalDir: o.JournalDir})
	if restored != "" {
		did = append(did, restored)
	}
	return did, err
}

// leftBehind reports, reading only, whether a stopped drill may have left
// something to put right: a mirror pause still holding, or a newest drill
// that is disruptive, did not pass, and recorded no result or found
// another cluster active.
func leftBehind(ctx context.Context, clusters *kafkaconn.Clusters, roles rolestate.State, dir string) bool {
	topo := clusters.Topology()
	holding := false
	_ = withClients(ctx, clusters, func(cs map[string]sarama.Client) error {
		ps, err := linkstate.Pauses(ctx, cs, topo.Name)
		for _, p := range ps {
			holding = holding || (!p.Released && time.Now().Before(p.Until))
		}
		return err
	})
	if holding {
		return true
	}
	hist, err := History(ctx, clusters, HistoryOptions{JournalDir: dir, Limit: 1})
	if err != nil || len(hist) == 0 {
		return false
	}
	last := hist[0]
	return topology.DrillKind(last.Kind).Disruptive() && last.Verdict != Pass && (last.Unfinished || (last.Active != "" && last.Active != roles.Active))
}
