package tui

import (
	"context"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/mirror/groupsync"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

// The console's I/O: each function returns a tea.Cmd that does the work
// off the Update loop, bounded by the console's timeout, and answers with a
// message.

type tickMsg struct{ id int }

type translationMsg struct {
	group string
	rep   *groupsync.TranslationReport
	err   error
}

type planMsg struct {
	what      string // failover, unplanned failover, failback
	plan      *plans.Plan
	err       error
	unplanned bool
	// wipe is what the plan's wipe would delete now (nil: no wipe step).
	wipe *failover.WipePreview
}

type resumeIDMsg struct {
	id  string
	err error
}

type syncPlanMsg struct {
	group string
	link  topology.Link
	plan  *groupsync.Sync
	err   error
}

type syncDoneMsg struct {
	group  string
	result *groupsync.Sync
	err    error
}

func (m *Model) refreshCmd() tea.Cmd {
	topo, dir, timeout, now := m.opts.Topology, m.opts.JournalDir, m.opts.Timeout, m.opts.Now
	return func() tea.Msg {
		return snapshotMsg{collect(context.Background(), topo, dir, timeout, now)}
	}
}

func tickCmd(id int, d time.Duration) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return tickMsg{id} })
}

func (m *Model) link() topology.Link {
	r := m.snap.Status.Roles
	return m.opts.Topology.Link(r.Active, r.Standby)
}

// translateCmd is `drctl offsets translate --group G`.
func (m *Model) translateCmd(group string) tea.Cmd {
	topo, link, timeout := m.opts.Topology, m.link(), m.opts.Timeout
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		clusters := kafkaconn.Open(ctx, topo, link.Source, link.Target)
		defer clusters.Close()
		rep, err := groupsync.Translate(ctx, clusters, link, groupsync.TranslateOptions{Groups: []string{group}})
		return translationMsg{group: group, rep: rep, err: err}
	}
}

// planCmd is `drctl plan failover --to TARGET [--unplanned]` (failback:
// the plan `drctl failback` builds).
func (m *Model) planCmd(what string, req failover.FailoverRequest) tea.Cmd {
	topo := m.opts.Topology
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		clusters := kafkaconn.Open(ctx, topo)
		defer clusters.Close()
		p, err := failover.PlanFailover(ctx, clusters, req)
		msg := planMsg{what: what, plan: p, err: err, unplanned: req.Mode == failover.Unplanned}
		if err == nil {
			pctx, pcancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer pcancel()
			msg.wipe = failover.PreviewWipe(pctx, clusters, p)
		}
		return msg
	}
}

// resumeIDCmd finds the run `drctl resume` would finish.
func (m *Model) resumeIDCmd() tea.Cmd {
	topo := m.opts.Topology
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		clusters := kafkaconn.Open(ctx, topo)
		defer clusters.Close()
		id, err := failover.ResumeID(ctx, clusters, "")
		return resumeIDMsg{id: id, err: err}
	}
}

// syncPlanCmd translates one group and plans its sync, as `drctl offsets
// sync --group G` does before it asks.
func (m *Model) syncPlanCmd(group string) tea.Cmd {
	topo, link, timeout := m.opts.Topology, m.link(), m.opts.Timeout
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		clusters := kafkaconn.Open(ctx, topo, link.Source, link.Target)
		defer clusters.Close()
		rep, err := groupsync.Translate(ctx, clusters, link, groupsync.TranslateOptions{Groups: []string{group}})
		if err != nil {
			return syncPlanMsg{group: group, link: link, err: err}
		}
		return syncPlanMsg{group: group, link: link, plan: groupsync.Decide(rep)}
	}
}

func (m *Model) syncApplyCmd(group string, link topology.Link, plan *groupsync.Sync) tea.Cmd {
	topo, timeout := m.opts.Topology, m.opts.Timeout
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		clusters := kafkaconn.Open(ctx, topo, link.Target)
		defer clusters.Close()
		res, err := groupsync.Apply(ctx, clusters, link, plan)
		return syncDoneMsg{group: group, result: res, err: err}
	}
}

// runFunc runs a plan through an executor that reports to h (one more
// hook), stops on in, and asks through h.confirm when a step must ask.
type runFunc func(ctx context.Context, h *runHook, in *plans.Interrupts) error

// startRun runs a plan (or resumes a run, or runs a drill) with the
// console as one more hook on its executor, in its own goroutine. resume is
// the command that finishes the run if it stops early ("" when none does).
func (m *Model) startRun(id, resume string, run runFunc) tea.Cmd {
	h := newRunHook()
	in := &plans.Interrupts{}
	m.run = &liveRun{id: id, resume: resume, started: m.opts.Now()}
	m.runs.run, m.hook, m.interrupts = m.run, h, in
	go func() {
		err := run(context.Background(), h, in)
		h.ch <- runEndedMsg{err}
	}()
	m.active = viewRuns
	return h.next()
}

// failoverRun runs plan p through failover.Execute.
func (m *Model) failoverRun(p *plans.Plan) tea.Cmd {
	topo, dir := m.opts.Topology, m.opts.JournalDir
	return m.startRun(p.ID, "drctl -c "+topo.Path+" resume "+p.ID, func(ctx context.Context, h *runHook, in *plans.Interrupts) error {
		clusters := kafkaconn.Open(ctx, topo)
		defer clusters.Close()
		return failover.Execute(ctx, clusters, p, failover.RunOptions{Hooks: []plans.Hook{h}, Interrupts: in, Confirm: h.confirm, JournalDir: dir})
	})
}

// resumeRun finishes run id through failover.Resume.
func (m *Model) resumeRun(id string) tea.Cmd {
	topo, dir := m.opts.Topology, m.opts.JournalDir
	return m.startRun(id, "drctl -c "+topo.Path+" resume "+id, func(ctx context.Context, h *runHook, in *plans.Interrupts) error {
		clusters := kafkaconn.Open(ctx, topo)
		defer clusters.Close()
		return failover.Resume(ctx, clusters, id, failover.RunOptions{Hooks: []plans.Hook{h}, Interrupts: in, Confirm: h.confirm, JournalDir: dir})
	})
}

// drillDoneMsg is a drill's judged record.
type drillDoneMsg struct{ rec *drill.Record }

// drillRun runs drill d through drill.Run (a canary drill: it touches only
// the canary topic and group). Its record comes back as a drillDoneMsg
// before the run ends.
func (m *Model) drillRun(d *topology.NamedDrill) tea.Cmd {
	topo, dir := m.opts.Topology, m.opts.JournalDir
	return m.startRun("drill "+d.Name, "", func(ctx context.Context, h *runHook, in *plans.Interrupts) error {
		clusters := kafkaconn.Open(ctx, topo)
		defer clusters.Close()
		rec, err := drill.Run(ctx, clusters, d, drill.Options{Hooks: []plans.Hook{h}, Interrupts: in, JournalDir: dir})
		if rec != nil {
			h.ch <- drillDoneMsg{rec}
		}
		return err
	})
}
