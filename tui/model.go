package tui

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

// The views, in the order of their number keys.
const (
	viewOverview = iota
	viewTopics
	viewGroups
	viewRuns
	viewDrills
	viewEvents
	viewCount
)

var viewNames = [viewCount]string{"Overview", "Topics", "Groups", "Runs", "Drills", "Events"}

// Model is the console: the shared state (snapshot, refresh, dialog, run)
// and one model per view.
type Model struct {
	opts   Options
	st     styles
	width  int
	height int
	active int

	snap, prev *Snapshot
	refreshing bool
	tickID     int
	interval   time.Duration
	paused     bool

	help      bool
	filtering bool
	filter    textinput.Model
	dialog    *dialog
	flash     string
	flashBad  bool
	// flashOn is the clusters' state (clusterState) a refusal or error
	// was about; a refresh that shows another state clears it ("" for a
	// message that is not about the clusters).
	flashOn string

	overview *overview
	topics   *topicsView
	groups   *groupsView
	runs     *runsView
	drills   *drillsView
	events   *eventsView
	history  lagHistory

	run        *liveRun
	hook       *runHook
	interrupts *plans.Interrupts

	// Resume is the command that finishes a run the console started and
	// did not finish; the front-end prints it after the console exits.
	Resume string
}

// New returns a console for opts.
func New(opts Options) *Model {
	opts = opts.withDefaults()
	ti := textinput.New()
	ti.Prompt = "/"
	m := &Model{
		opts: opts, st: newStyles(), width: 80, height: 24, interval: opts.Interval, filter: ti,
		topics: newTopicsView(), groups: newGroupsView(), drills: newDrillsView(), runs: newRunsView(), events: newEventsView(),
	}
	m.overview = &overview{history: &m.history}
	return m
}

// Init starts the first refresh.
func (m *Model) Init() tea.Cmd {
	if m.opts.NoRefresh {
		return nil
	}
	m.refreshing = true
	return m.refreshCmd()
}

// Update handles one message. It never does I/O: that happens in the
// commands it returns.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		return m, nil
	case snapshotMsg:
		return m, m.setSnapshot(msg.snap)
	case tickMsg:
		if msg.id != m.tickID || m.paused || m.refreshing || m.opts.NoRefresh {
			return m, nil
		}
		m.refreshing = true
		return m, m.refreshCmd()
	case drillsMsg:
		m.drills.Set(msg)
		return m, nil
	case drillDoneMsg:
		m.drillDone(msg.rec)
		return m, m.nextRunMsg()
	case translationMsg:
		m.groups.SetTranslation(msg)
		return m, nil
	case planMsg:
		return m, m.planReady(msg)
	case resumeIDMsg:
		return m, m.resumeReady(msg)
	case syncPlanMsg:
		return m, m.syncReady(msg)
	case syncDoneMsg:
		return m, m.syncDone(msg)
	case runEventMsg:
		m.run.apply(msg.e)
		m.logRunEvent(msg.e)
		return m, m.nextRunMsg()
	case stepQuestionMsg:
		m.askStep(msg)
		return m, m.nextRunMsg()
	case runEndedMsg:
		return m, m.runEnded(msg.err)
	case tea.KeyMsg:
		return m.key(msg)
	}
	return m, nil
}

// setSnapshot takes a finished refresh and schedules the next.
func (m *Model) setSnapshot(s *Snapshot) tea.Cmd {
	m.refreshing = false
	m.prev, m.snap = m.snap, s
	if s.Status != nil {
		var prevStatus *inspect.Status
		if m.prev != nil {
			prevStatus = m.prev.Status
		}
		m.events.Add(changes(prevStatus, s.Status, s.At)...)
		if s.Status.Mirror != nil {
			m.history.add(s.Status.Mirror.LagRecords)
		}
	}
	if m.flashOn != "" && clusterState(s) != m.flashOn {
		m.flash, m.flashOn = "", ""
	}
	m.overview.snap = s
	m.overview.rates = measureRates(m.prev, s)
	m.topics.SetSnapshot(m.prev, s)
	m.groups.SetSnapshot(s)
	m.runs.SetSnapshot(s)
	if m.paused || m.opts.NoRefresh {
		return nil
	}
	m.tickID++
	tick := tickCmd(m.tickID, m.interval)
	if m.active == viewDrills {
		return tea.Batch(tick, m.drillsCmd())
	}
	return tick
}

func (m *Model) refreshNow() tea.Cmd {
	if m.refreshing || m.opts.NoRefresh {
		return nil
	}
	m.refreshing = true
	m.tickID++
	return m.refreshCmd()
}

func (m *Model) say(bad bool, f string, a ...any) {
	m.flash, m.flashBad, m.flashOn = fmt.Sprintf(f, a...), bad, ""
}

// sayAbout says a refusal or an error that holds for the clusters as the
// last refresh saw them: it leaves the status line when a refresh shows
// them otherwise (a cluster back, the roles moved).
func (m *Model) sayAbout(f string, a ...any) {
	m.say(true, f, a...)
	m.flashOn = clusterState(m.snap)
}

// clusterState is what a refusal depends on: the live roles and which
// clusters answered.
func clusterState(s *Snapshot) string {
	if s == nil || s.Status == nil {
		return "none"
	}
	r := s.Status.Roles
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s/%d/%s", r.Active, r.Standby, r.Epoch, r.Phase)
	for _, c := range s.Status.Clusters {
		fmt.Fprintf(&b, " %s=%v", c.Name, c.Reachable)
	}
	return b.String()
}

// rolesKnown reports whether the last refresh read the live roles: both
// name clusters of the topology. Nothing is planned or translated on
// roles nobody could read ("unknown" is never a cluster name).
func (m *Model) rolesKnown() bool {
	if m.snap == nil || m.snap.Status == nil {
		return false
	}
	r := m.snap.Status.Roles
	_, a := m.opts.Topology.Clusters[r.Active]
	_, b := m.opts.Topology.Clusters[r.Standby]
	return a && b && r.Active != r.Standby
}

// rolesUnknownSay refuses an action while the roles are unknown.
func (m *Model) rolesUnknownSay(what string) {
	m.sayAbout("%s refused: the live roles are unknown (no cluster answers); r refreshes", what)
}

func (m *Model) nextRunMsg() tea.Cmd {
	if m.hook == nil {
		return nil
	}
	return m.hook.next()
}

func (m *Model) runActive() bool { return m.run != nil && !m.run.ended }

func (m *Model) key(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	if k.String() == "ctrl+c" {
		// ctrl-c at a question is "no" (a run's question gets its answer,
		// so the step does not wait for it), then the usual interrupt.
		if d := m.dialog; d != nil {
			d.close(m, false)
		}
		return m.interrupt()
	}
	if m.dialog != nil {
		return m, m.dialog.key(m, k)
	}
	if m.help {
		m.help = false
		return m, nil
	}
	if m.filtering {
		return m, m.filterKey(k)
	}
	m.flash = ""
	switch k.String() {
	case "q":
		if m.runActive() {
			m.say(true, "run %s is in progress: ctrl-c stops it after the current step", m.run.id)
			return m, nil
		}
		return m.quit()
	case "?":
		m.help = true
	case "tab":
		m.active = (m.active + 1) % viewCount
	case "shift+tab":
		m.active = (m.active + viewCount - 1) % viewCount
	case "1", "2", "3", "4", "5", "6":
		m.active = int(k.String()[0] - '1')
		if m.active == viewDrills && !m.drills.loaded && !m.opts.NoRefresh {
			return m, m.drillsCmd()
		}
	case "r":
		if m.refreshing {
			m.say(false, "a refresh is already running")
		}
		return m, m.refreshNow()
	case "+", "=":
		return m, m.stepInterval(1)
	case "-", "_":
		return m, m.stepInterval(-1)
	case "p":
		m.paused = !m.paused
		m.tickID++
		if !m.paused {
			return m, m.refreshNow()
		}
	case "/":
		if t := m.currentTable(); t != nil {
			m.filtering = true
			m.filter.SetValue(t.filter)
			m.filter.CursorEnd()
			return m, m.filter.Focus()
		}
	case "f", "F", "b", "R", "s", "d":
		return m, m.action(k.String())
	default:
		return m, m.viewKey(k)
	}
	return m, nil
}

func (m *Model) quit() (tea.Model, tea.Cmd) {
	m.Resume = m.ResumeCommand()
	return m, tea.Quit
}

// ResumeCommand is the command that finishes the run this console started,
// when it has not finished (it failed, was stopped, or still runs as the
// console is killed); "" otherwise.
func (m *Model) ResumeCommand() string {
	if m.run.unfinished() {
		return m.run.resume
	}
	return ""
}

// interrupt is ctrl-c: with a run in progress, the CLI's two stages;
// otherwise quit.
func (m *Model) interrupt() (tea.Model, tea.Cmd) {
	if !m.runActive() {
		return m.quit()
	}
	switch m.interrupts.Interrupt() {
	case 1:
		m.run.stopping = true
		m.say(true, "stopping run %s after the current step; ctrl-c again cancels the step", m.run.id)
	default:
		m.say(true, "cancelling the current step of run %s", m.run.id)
	}
	return m, nil
}

func (m *Model) stepInterval(dir int) tea.Cmd {
	i := 0
	for i < len(intervals)-1 && intervals[i] < m.interval {
		i++
	}
	i = max(0, min(len(intervals)-1, i+dir))
	m.interval = intervals[i]
	m.say(false, "refresh every %s", m.interval)
	if m.paused || m.refreshing || m.opts.NoRefresh {
		return nil
	}
	m.tickID++
	return tickCmd(m.tickID, m.interval)
}

func (m *Model) currentTable() *table {
	switch m.active {
	case viewTopics:
		return m.topics.current()
	case viewGroups:
		return m.groups.current()
	case viewRuns:
		return m.runs.past
	case viewEvents:
		return m.events.list
	case viewDrills:
		return m.drills.list
	}
	return nil
}

func (m *Model) filterKey(k tea.KeyMsg) tea.Cmd {
	t := m.currentTable()
	switch k.String() {
	case "enter":
		m.filtering = false
		m.filter.Blur()
		return nil
	case "esc":
		m.filtering = false
		m.filter.Blur()
		if t != nil {
			t.SetFilter("")
		}
		return nil
	}
	var cmd tea.Cmd
	m.filter, cmd = m.filter.Update(k)
	if t != nil {
		t.SetFilter(m.filter.Value())
	}
	return cmd
}

// openPane is the details page open in the current view (a past run's, a
// drill's); nil when none is.
func (m *Model) openPane() **pane {
	switch m.active {
	case viewRuns:
		return &m.runs.detail
	case viewDrills:
		return &m.drills.detail
	}
	return nil
}

// paneKey scrolls an open details page; esc closes it.
func (m *Model) paneKey(pp **pane, k tea.KeyMsg) {
	page := max(1, m.height-6)
	switch k.String() {
	case "esc":
		*pp = nil
	case "j", "down":
		(*pp).Scroll(1)
	case "k", "up":
		(*pp).Scroll(-1)
	case "pgdown", "ctrl+f", " ":
		(*pp).Scroll(page)
	case "pgup", "ctrl+b":
		(*pp).Scroll(-page)
	case "g", "home":
		(*pp).scroll = 0
	}
}

// viewKey handles movement and enter/esc in the current view.
func (m *Model) viewKey(k tea.KeyMsg) tea.Cmd {
	if pp := m.openPane(); pp != nil && *pp != nil {
		m.paneKey(pp, k)
		return nil
	}
	t := m.currentTable()
	page := max(1, m.height-6)
	switch k.String() {
	case "j", "down":
		if t != nil {
			t.Move(1)
		}
	case "k", "up":
		if t != nil {
			t.Move(-1)
		}
	case "pgdown", "ctrl+f", " ":
		if t != nil {
			t.Move(page)
		}
	case "pgup", "ctrl+b":
		if t != nil {
			t.Move(-page)
		}
	case "g", "home":
		if t != nil {
			t.Home()
		}
	case "G", "end":
		if t != nil {
			t.End()
		}
	case "o":
		if t != nil {
			t.NextSort()
			m.say(false, "sorted by %s", t.SortLabel())
		}
	case "enter":
		switch m.active {
		case viewTopics:
			m.topics.Enter()
		case viewRuns:
			m.runs.Enter()
		case viewDrills:
			m.drills.Enter()
		case viewGroups:
			if g := m.groups.Enter(); g != "" {
				if !m.rolesKnown() {
					m.groups.Back()
					m.rolesUnknownSay("translate " + g)
					return nil
				}
				return m.translateCmd(g)
			}
		}
	case "esc":
		switch m.active {
		case viewTopics:
			m.topics.Back()
		case viewGroups:
			m.groups.Back()
		}
	}
	return nil
}

// action starts f, F, b, R or s: each first builds what it would do, then
// asks the operator in a dialog.
func (m *Model) action(key string) tea.Cmd {
	if m.opts.ReadOnly {
		m.say(true, "read-only: actions are disabled (started with --read-only)")
		return nil
	}
	if m.runActive() {
		m.say(true, "run %s is in progress; wait for it in the Runs view (4)", m.run.id)
		return nil
	}
	if m.snap == nil || m.snap.Status == nil {
		m.say(true, "waiting for the first refresh")
		return nil
	}
	if !m.rolesKnown() {
		m.rolesUnknownSay(actionNames[key])
		return nil
	}
	r := m.snap.Status.Roles
	activeUp := m.snap.Reachable(r.Active)
	switch key {
	case "f":
		if !activeUp {
			m.sayAbout("the active %s is unreachable: a planned failover cannot drain or fence it; F plans an unplanned failover", r.Active)
			return nil
		}
		m.say(false, "planning a failover to %s ...", r.Standby)
		return m.planCmd("failover", failover.FailoverRequest{To: r.Standby})
	case "F":
		if activeUp {
			m.sayAbout("F (unplanned failover) is offered only while the active %s is unreachable; f plans a planned failover", r.Active)
			return nil
		}
		m.say(false, "planning an unplanned failover to %s ...", r.Standby)
		return m.planCmd("unplanned failover", failover.FailoverRequest{To: r.Standby, Mode: failover.Unplanned})
	case "b":
		home := m.opts.Topology.Active
		m.say(false, "planning a failback to %s ...", home)
		return m.planCmd("failback", failover.FailoverRequest{To: home, Kind: rolestate.RunFailback})
	case "R":
		m.say(false, "looking for the run in progress ...")
		return m.resumeIDCmd()
	case "d":
		d, err := drill.Resolve(m.opts.Topology, "", topology.DrillCanary)
		if err != nil {
			m.say(true, "canary drill: %v", err)
			return nil
		}
		m.dialog = newDialog("Canary drill "+d.Name,
			"It writes sequence-numbered records to the canary topic on "+r.Active+"\n"+
				"and reads them back on "+r.Standby+", checks the canary group's exact\n"+
				"translated position, runs the failover plan's preflight (not the plan),\n"+
				"and measures the RPO. It touches nothing but the canary topic and group.",
			"Run the canary drill now? [y/N] ", "", func(m *Model) tea.Cmd { return m.drillRun(d) })
		return nil
	case "s":
		g := m.groups.open
		if g == "" && m.active == viewGroups {
			g = m.groups.list.SelectedKey()
		}
		if g == "" {
			m.say(true, "s syncs the offsets of the selected group: select one in the Groups view (3)")
			return nil
		}
		m.say(false, "translating %s ...", g)
		return m.syncPlanCmd(g)
	}
	return nil
}

// actionNames name the actions in refusals.
var actionNames = map[string]string{"f": "failover", "F": "unplanned failover", "b": "failback", "R": "resume", "s": "offsets sync", "d": "canary drill"}

func (m *Model) planReady(msg planMsg) tea.Cmd {
	if msg.err != nil {
		m.sayAbout("%s: %v", msg.what, msg.err)
		return nil
	}
	m.flash = ""
	p := msg.plan
	target, err := failover.ConfirmName(p)
	if err != nil {
		m.sayAbout("%s: %v", msg.what, err)
		return nil
	}
	m.dialog = newDialog(
		strings.ToUpper(msg.what[:1])+msg.what[1:]+" plan "+p.ID,
		planSummary(p)+wipeLines(msg.wipe)+"\n\nTHE FULL PLAN (as drctl plan failover prints it; ↓/pgdn)\n"+p.Text(),
		fmt.Sprintf("Type the name of the cluster %q to run this plan (esc cancels): ", target),
		target,
		func(m *Model) tea.Cmd { return m.failoverRun(p) },
	)
	return m.dialog.input.Focus()
}

// planSummary is the compact first page of a plan: one line per step,
// destructive steps marked, so that on 80x24 everything the plan destroys
// is on screen before anyone types a name; the full plan follows it.
func planSummary(p *plans.Plan) string {
	destructive := 0
	for _, st := range p.Steps {
		if st.Destructive {
			destructive++
		}
	}
	lines := []string{fmt.Sprintf("%s, %d steps, %d destructive (marked !):", p.Kind, len(p.Steps), destructive)}
	for _, st := range p.Steps {
		mark := "  "
		if st.Destructive {
			mark = "! "
		}
		line := fmt.Sprintf("%s%2d %s", mark, st.Index+1, st.Title)
		if st.PointOfNoReturn {
			line += "  (point of no return)"
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// wipeLines are what the plan's wipe would delete now, under the summary;
// "" without a wipe step.
func wipeLines(pv *failover.WipePreview) string {
	if pv == nil {
		return ""
	}
	return "\n\n" + strings.Join(pv.Lines(), "\n")
}

func (m *Model) resumeReady(msg resumeIDMsg) tea.Cmd {
	if msg.err != nil {
		m.sayAbout("resume: %v", msg.err)
		return nil
	}
	m.flash = ""
	id := msg.id
	m.dialog = newDialog("Resume run "+id, "drctl resume "+id+" finishes the run from the step it stopped at,\nre-checking every step against the live state before it runs.",
		fmt.Sprintf("Type the run id %q to resume it (esc cancels): ", id), id,
		func(m *Model) tea.Cmd { return m.resumeRun(id) })
	return m.dialog.input.Focus()
}

func (m *Model) syncReady(msg syncPlanMsg) tea.Cmd {
	if msg.err != nil {
		m.sayAbout("offsets sync %s: %v", msg.group, msg.err)
		return nil
	}
	n := msg.plan.Changes()
	if n == 0 {
		m.say(false, "offsets sync %s: nothing to change on %s", msg.group, msg.plan.Target)
		return nil
	}
	m.flash = ""
	var b strings.Builder
	for _, g := range msg.plan.Groups {
		for _, ch := range g.Changes {
			fmt.Fprintf(&b, "%s %s/%d: %s -> %d (%s)\n", g.Group, ch.Topic, ch.Partition, offsetCell(ch.Before), ch.After, ch.Status)
		}
	}
	m.dialog = newDialog(fmt.Sprintf("Offsets sync %s on %s", msg.group, msg.plan.Target), strings.TrimRight(b.String(), "\n"),
		fmt.Sprintf("Commit %d offset(s) on %s? [y/N] ", n, msg.plan.Target), "",
		func(m *Model) tea.Cmd {
			m.say(false, "committing %d offset(s) of %s on %s ...", n, msg.group, msg.plan.Target)
			return m.syncApplyCmd(msg.group, msg.link, msg.plan)
		})
	return nil
}

func (m *Model) syncDone(msg syncDoneMsg) tea.Cmd {
	switch {
	case msg.err != nil:
		m.say(true, "offsets sync %s: %v; nothing was committed", msg.group, msg.err)
	case len(msg.result.NotSynced()) > 0:
		g := msg.result.NotSynced()[0]
		m.say(true, "offsets sync %s: %s: %s", g.Group, g.Action, g.Reason)
	default:
		m.say(false, "offsets sync %s: committed %d offset(s) on %s", msg.group, msg.result.Changes(), msg.result.Target)
	}
	return m.refreshNow()
}

func (m *Model) askStep(msg stepQuestionMsg) {
	id := m.run.id
	m.dialog = newDialog("Run "+id+" asks", msg.question, "[y/N] ", "", func(*Model) tea.Cmd {
		msg.reply <- nil
		return nil
	})
	m.dialog.cancel = func() {
		msg.reply <- fmt.Errorf("not confirmed; resume with drctl resume %s", id)
	}
	m.dialog.under = true
}

func (m *Model) logRunEvent(e plans.Event) {
	at := e.Time
	switch e.Type {
	case plans.EventRunStarted:
		m.events.Add(Event{At: at, Text: fmt.Sprintf("run %s (%s) started here, %d steps", e.RunID, e.Kind, e.Total)})
	case plans.EventStepFailed:
		m.events.Add(Event{At: at, Bad: true, Text: fmt.Sprintf("run %s: step %d/%d %s failed: %s", e.RunID, e.Index+1, e.Total, e.Title, e.Error)})
	case plans.EventRunDone:
		m.events.Add(Event{At: at, Bad: e.Outcome != plans.OutcomeSucceeded, Text: fmt.Sprintf("run %s %s", e.RunID, e.Outcome)})
	}
}

// drillDone shows a drill's verdict and reads the history again.
func (m *Model) drillDone(rec *drill.Record) {
	reason := ""
	if len(rec.Reasons) > 0 {
		reason = ": " + rec.Reasons[0]
	}
	m.events.Add(Event{At: m.opts.Now(), Bad: rec.Verdict != drill.Pass, Text: fmt.Sprintf("drill %s (%s) %s%s", rec.Drill, rec.ID, rec.Verdict, reason)})
	m.drills.loaded = false
}

func (m *Model) runEnded(err error) tea.Cmd {
	r := m.run
	r.ended = true
	if r.endedAt.IsZero() {
		r.endedAt = m.opts.Now()
	}
	if err != nil {
		if r.err == "" {
			r.err = err.Error()
		}
		if r.outcome == "" {
			r.outcome = plans.OutcomeFailed
			if errors.Is(err, plans.ErrStalePlan) {
				r.outcome = plans.OutcomeStale
			}
		}
		m.say(true, "run %s: %s", r.id, r.outcome)
	} else {
		m.say(false, "run %s succeeded", r.id)
	}
	if !m.drills.loaded && !m.opts.NoRefresh {
		return tea.Batch(m.refreshNow(), m.drillsCmd())
	}
	return m.refreshNow()
}

// View renders the console: header, tabs, the active view, the footer.
// A terminal too small for all four gets what fits, in that order of
// importance: the header, the footer (where questions and errors are
// said), the tabs, then the view; down to nothing at 0 rows.
func (m *Model) View() string {
	w, h := max(0, m.width), max(0, m.height)
	if h == 0 {
		return ""
	}
	body := max(0, h-3)
	var content string
	switch {
	case body == 0:
	case m.dialog != nil && m.dialog.under:
		top := m.dialog.view(w, body, m.st)
		n := strings.Count(top, "\n") + 1
		content = top + "\n" + m.viewBody(w, max(1, body-n))
	case m.dialog != nil:
		content = m.dialog.view(w, body, m.st)
	case m.help:
		content = helpView(w, m.st)
	default:
		content = m.viewBody(w, body)
	}
	lines := []string{m.header(w)}
	switch h {
	case 1:
	case 2:
		lines = append(lines, m.footer(w))
	case 3:
		lines = append(lines, m.tabs(w), m.footer(w))
	default:
		lines = append(lines, m.tabs(w), fit(content, w, body), m.footer(w))
	}
	return strings.Join(lines, "\n")
}

func (m *Model) viewBody(w, h int) string {
	now := m.opts.Now()
	switch m.active {
	case viewTopics:
		return m.topics.View(w, h, m.st)
	case viewGroups:
		return m.groups.View(w, h, m.st)
	case viewRuns:
		return m.runs.View(w, h, m.st, now)
	case viewDrills:
		return m.drills.View(w, h, m.st)
	case viewEvents:
		return m.events.View(w, h, m.st)
	}
	return m.overviewBody(w, h, now)
}

// overviewBody is the overview, and on a tall terminal the topics and
// groups tables under it (the first rows, as their views sort them).
func (m *Model) overviewBody(w, h int, now time.Time) string {
	out := m.overview.View(w, h, m.st, now)
	left := h - strings.Count(out, "\n") - 1
	if m.snap == nil || m.snap.Status == nil || left < 12 {
		return out
	}
	half := (left - 2) / 2
	return out + "\n\n" + m.topics.list.View(w, half, m.st) + "\n" + m.groups.list.View(w, left-2-half, m.st)
}

func (m *Model) header(w int) string {
	topo := m.opts.Topology
	left := "drctl " + topo.Name
	if m.snap != nil && m.snap.Status != nil {
		r := m.snap.Status.Roles
		if r.Active == inspect.RoleUnknown {
			left += "  roles UNKNOWN: no cluster answers"
		} else {
			left += fmt.Sprintf("  active %s  standby %s  epoch %d  %s", r.Active, r.Standby, r.Epoch, r.Phase)
		}
	}
	var right []string
	if m.opts.ReadOnly {
		right = append(right, "READ-ONLY")
	}
	every := m.interval.String()
	switch {
	case m.paused:
		right = append(right, "PAUSED")
	case m.refreshing:
		every = "↻ " + every
	default:
		every = "  " + every
	}
	right = append(right, every)
	if m.snap != nil {
		at := m.snap.At.UTC().Format("15:04:05")
		if age := m.opts.Now().Sub(m.snap.At); age > 3*m.interval+m.opts.Timeout {
			at += fmt.Sprintf(" (%s old)", age.Round(time.Second))
		}
		right = append(right, at)
	}
	r := strings.Join(right, " ")
	if lipgloss.Width(left)+lipgloss.Width(r)+3 > w {
		left = strings.TrimPrefix(left, "drctl ")
	}
	pad := w - lipgloss.Width(left) - lipgloss.Width(r) - 2
	line := " " + left + strings.Repeat(" ", max(1, pad)) + r + " "
	return m.st.header.Render(truncateANSI(line, w))
}

func (m *Model) tabs(w int) string {
	var parts []string
	for i, n := range viewNames {
		label := fmt.Sprintf("%d %s", i+1, n)
		if i == m.active {
			parts = append(parts, m.st.tabOn.Render("["+label+"]"))
		} else {
			parts = append(parts, m.st.tabOff.Render(" "+label+" "))
		}
	}
	return truncateANSI(strings.Join(parts, " "), w)
}

func (m *Model) footer(w int) string {
	switch {
	case m.filtering:
		return truncateANSI(m.filter.View()+"   enter keep, esc clear", w)
	case m.dialog != nil:
		return truncateANSI(m.dialog.input.View(), w)
	case m.flash != "":
		s := m.st.ok
		if m.flashBad {
			s = m.st.bad
		}
		return truncateANSI(s.Render(m.flash), w)
	}
	keys := "? help  / filter  o sort  r refresh  +/- interval  p pause  q quit"
	if !m.opts.ReadOnly {
		keys = "? help  f failover  b failback  R resume  d drill  / filter  q quit"
	}
	return m.st.dim.Render(truncateANSI(keys, w))
}
