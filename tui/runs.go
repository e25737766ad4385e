package tui

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
)

// stepState is one step of the live run as the console saw it.
type stepState struct {
	title   string
	state   string // pending, running, done, failed
	elapsed time.Duration
	detail  string
}

// liveRun is the console's own run, built from its events.
type liveRun struct {
	id, kind string
	steps    []stepState
	current  int
	progress string
	started  time.Time
	stepAt   time.Time
	outcome  plans.Outcome
	err      string
	ended    bool
	endedAt  time.Time
	resume   string
	stopping bool // ctrl-c once: stops after this step
}

func (r *liveRun) apply(e plans.Event) {
	switch e.Type {
	case plans.EventRunStarted:
		r.id, r.kind, r.started = e.RunID, e.Kind, e.Time
		if e.Plan != nil {
			r.steps = make([]stepState, len(e.Plan.Steps))
			for i, s := range e.Plan.Steps {
				r.steps[i] = stepState{title: s.Title, state: "pending"}
				if i < e.Index {
					r.steps[i].state = "done"
					r.steps[i].detail = "before this run"
				}
			}
		}
	case plans.EventStepStarted:
		r.current, r.stepAt, r.progress = e.Index, e.Time, ""
		r.set(e.Index, "running", 0, "")
	case plans.EventStepProgress:
		r.progress = e.Message
		if e.Fraction != nil {
			r.progress += fmt.Sprintf(" (%.0f%%)", *e.Fraction*100)
		}
	case plans.EventStepDone:
		r.progress = ""
		r.set(e.Index, "done", time.Duration(e.ElapsedMS)*time.Millisecond, e.Summary)
	case plans.EventStepFailed:
		r.set(e.Index, "failed", time.Duration(e.ElapsedMS)*time.Millisecond, e.Error)
	case plans.EventRunDone:
		r.outcome, r.ended, r.endedAt = e.Outcome, true, e.Time
		if e.Error != "" {
			r.err = e.Error
		}
	}
}

func (r *liveRun) set(i int, state string, d time.Duration, detail string) {
	if i < 0 || i >= len(r.steps) {
		return
	}
	r.steps[i].state, r.steps[i].elapsed, r.steps[i].detail = state, d, detail
}

// unfinished reports whether a resume has something left to do.
func (r *liveRun) unfinished() bool {
	return r != nil && r.id != "" && (!r.ended || r.outcome != plans.OutcomeSucceeded)
}

// PastRun is a run read back from the local journal or the clusters' run
// records.
type PastRun struct {
	ID, Actor string
	// Kind is the plan's kind as the operator knows it: an unplanned
	// failover and an unplanned drill say so (runKind).
	Kind        string
	Outcome     plans.Outcome
	Done, Total int
	At          time.Time
	Error       string
	// Steps are the plan's steps as the run left them, for its details.
	Steps []PastStep
	// Aborted says who undid the run, when and why ("" when nobody did).
	Aborted string
}

// PastStep is one step of a past run.
type PastStep struct {
	Title       string
	Done        bool
	Destructive bool
	// Summary is the step's result line (the local journal keeps it).
	Summary string
}

// runKind names a plan's kind as the operator knows it. An unplanned
// drill runs a plan of kind drill-failover whose failover is unplanned;
// an unplanned failover is a failover plan whose inputs say unplanned.
func runKind(p *plans.Plan) string {
	for _, s := range p.Steps {
		if s.Name == drill.StepUnplannedFailover {
			return "drill-unplanned"
		}
	}
	if failover.IsUnplanned(p) {
		return "unplanned-" + p.Kind
	}
	return p.Kind
}

func pastSteps(p *plans.Plan, done []bool, summaries map[int]string) []PastStep {
	out := make([]PastStep, len(p.Steps))
	for i, s := range p.Steps {
		out[i] = PastStep{Title: s.Title, Destructive: s.Destructive, Done: i < len(done) && done[i], Summary: summaries[i]}
	}
	return out
}

// readJournals reads the newest local journals of topology topoName (at
// most n). The journal directory is shared by every topology run from this
// machine: another topology's runs are left out.
func readJournals(dir, topoName string, n int) ([]PastRun, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("journal directory %s: %w", dir, err)
	}
	type file struct {
		path string
		mod  time.Time
	}
	var files []file
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		if info, err := e.Info(); err == nil {
			files = append(files, file{filepath.Join(dir, e.Name()), info.ModTime()})
		}
	}
	slices.SortFunc(files, func(a, b file) int { return b.mod.Compare(a.mod) })
	var out []PastRun
	for _, f := range files {
		if len(out) == n {
			break
		}
		st, err := plans.ReadJournal(f.path)
		if err != nil || st.Plan == nil || runrecord.TopologyOf(st.Plan) != topoName {
			continue
		}
		done := 0
		for _, d := range st.Done {
			if d {
				done++
			}
		}
		out = append(out, PastRun{ID: st.Plan.ID, Kind: runKind(st.Plan), Actor: st.Actor, Outcome: st.Outcome, Done: done, Total: len(st.Plan.Steps), At: f.mod, Error: st.LastError,
			Steps: pastSteps(st.Plan, st.Done, st.Summaries)})
	}
	return out, nil
}

// mergeRuns joins the local journal's runs with the runs the clusters
// recorded (failover, failback, reseed from any machine), one per run id:
// the entry with more steps done wins, the journal's when equal (it knows
// the actor, when it last moved and its steps' results). A run aborted
// anywhere is aborted. Newest first.
func mergeRuns(journal []PastRun, recorded []*runrecord.Record) []PastRun {
	byID := map[string]int{}
	out := slices.Clone(journal)
	for i, r := range out {
		byID[r.ID] = i
	}
	for _, rec := range recorded {
		done := 0
		for _, d := range rec.Done {
			if d {
				done++
			}
		}
		outcome, aborted := rec.Outcome, ""
		if a := rec.Aborted; a != nil {
			outcome = plans.OutcomeAborted
			aborted = fmt.Sprintf("aborted by %s at %s at step %d: %s", a.By, a.At.UTC().Format("2006-01-02 15:04:05"), a.Step+1, a.Reason)
			if len(a.Undone) > 0 {
				aborted += "; undone: " + strings.Join(a.Undone, ", ")
			}
		}
		r := PastRun{ID: rec.Plan.ID, Kind: runKind(rec.Plan), Actor: rec.Plan.CreatedBy, Outcome: outcome, Done: done, Total: len(rec.Plan.Steps), At: rec.Plan.CreatedAt, Error: rec.Error,
			Steps: pastSteps(rec.Plan, rec.Done, nil), Aborted: aborted}
		i, ok := byID[r.ID]
		switch {
		case !ok:
			byID[r.ID] = len(out)
			out = append(out, r)
		case r.Done > out[i].Done || (r.Outcome != "" && out[i].Outcome == ""):
			r.At, r.Actor = out[i].At, cmp.Or(out[i].Actor, r.Actor)
			for j := range r.Steps {
				if j < len(out[i].Steps) && r.Steps[j].Done && out[i].Steps[j].Done {
					r.Steps[j].Summary = out[i].Steps[j].Summary
				}
			}
			out[i] = r
		case aborted != "":
			out[i].Outcome, out[i].Aborted = plans.OutcomeAborted, aborted
		}
	}
	slices.SortStableFunc(out, func(a, b PastRun) int { return b.At.Compare(a.At) })
	return out
}

// runsView is view 4: the run in progress with its steps, and past runs;
// enter opens a past run's steps and error.
type runsView struct {
	past   *table
	snap   *Snapshot
	run    *liveRun
	detail *pane
}

func newRunsView() *runsView {
	return &runsView{past: newTable(
		column{Title: "run", Width: 14, Keep: true},
		column{Title: "kind", Width: 8},
		column{Title: "outcome", Width: 10},
		column{Title: "steps", Width: 5, Right: true},
		column{Title: "when", Width: 11},
		column{Title: "by", Width: 8, Flex: true, Optional: true},
	).inGivenOrder("newest first")}
}

func (v *runsView) SetSnapshot(s *Snapshot) {
	v.snap = s
	if s == nil {
		return
	}
	rows := make([][]string, 0, len(s.Runs))
	for _, r := range s.Runs {
		rows = append(rows, []string{r.ID, r.Kind, runOutcome(r), fmt.Sprintf("%d/%d", r.Done, r.Total), r.At.UTC().Format("01-02 15:04"), orDash(r.Actor)})
	}
	v.past.SetRows(rows)
}

func runOutcome(r PastRun) string {
	if r.Outcome == "" {
		return "unfinished"
	}
	return string(r.Outcome)
}

// Enter opens the selected past run's details.
func (v *runsView) Enter() {
	id := v.past.SelectedKey()
	if v.snap == nil || id == "" {
		return
	}
	for _, r := range v.snap.Runs {
		if r.ID == id {
			v.detail = newPane("RUN "+r.ID+"  esc back, ↑/↓ scroll", pastRunLines(r))
			return
		}
	}
}

// pastRunLines are a past run's details: what it was, how it ended, its
// steps as it left them, its error and how to finish it.
func pastRunLines(r PastRun) []string {
	lines := []string{
		fmt.Sprintf("%s, %s, %d of %d steps done, by %s, %s", r.Kind, runOutcome(r), r.Done, r.Total, orDash(r.Actor), r.At.UTC().Format("2006-01-02 15:04:05 UTC")),
	}
	if r.Aborted != "" {
		lines = append(lines, r.Aborted)
	}
	if r.Error != "" {
		lines = append(lines, "error: "+r.Error)
	}
	lines = append(lines, "")
	stopped := false
	for i, s := range r.Steps {
		mark := "  "
		switch {
		case s.Done:
			mark = "✓ "
		case !stopped && r.Outcome != plans.OutcomeSucceeded:
			stopped = true
			mark = "✗ "
			if r.Outcome == "" || r.Outcome == plans.OutcomeAborted {
				mark = "▶ "
			}
		}
		line := fmt.Sprintf("%s%2d %s", mark, i+1, s.Title)
		if s.Destructive {
			line += " [destructive]"
		}
		if s.Summary != "" {
			line += ": " + s.Summary
		}
		lines = append(lines, line)
	}
	if r.Outcome != plans.OutcomeSucceeded && r.Outcome != plans.OutcomeAborted && r.Done < r.Total && !strings.HasPrefix(r.Kind, "drill-") {
		lines = append(lines, "", "to finish it: drctl resume "+r.ID+"  (or R here)")
	}
	return lines
}

func (v *runsView) View(width, height int, st styles, now time.Time) string {
	if v.detail != nil {
		return v.detail.View(width, height, st)
	}
	var lines []string
	if r := v.run; r != nil && r.id != "" {
		lines = append(lines, v.liveLines(width, st, now)...)
	} else if v.snap != nil && v.snap.Status != nil && v.snap.Status.Roles.Run != nil {
		rr := v.snap.Status.Roles.Run
		lines = append(lines, wrapIndent(st.title.Render("RUN IN PROGRESS "), fmt.Sprintf("%s %s at step %d, by %s since %s", rr.Kind, rr.ID, rr.Step+1, rr.By, rr.StartedAt.UTC().Format(time.RFC3339)), width)...)
		lines = append(lines, wrapIndent("  ", "not run by this console: R resumes it here (drctl resume "+rr.ID+")", width)...)
	} else {
		lines = append(lines, st.title.Render("RUN")+"  none in progress (f failover, b failback)")
	}
	lines = append(lines, "")
	head := st.title.Render("PAST RUNS") + "  from the local journal and the clusters; enter: details"
	if v.snap != nil && v.snap.RunsError != "" {
		head += "  " + st.bad.Render(v.snap.RunsError)
	}
	lines = append(lines, head)
	if v.past.Len() == 0 {
		lines = append(lines, st.dim.Render("none"))
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines, "\n") + "\n" + v.past.View(width, max(2, height-len(lines)), st)
}

func (v *runsView) liveLines(width int, st styles, now time.Time) []string {
	r := v.run
	state := "running"
	switch {
	case r.ended && r.outcome == plans.OutcomeSucceeded:
		state = st.ok.Render("succeeded")
	case r.ended:
		state = st.bad.Render(string(r.outcome))
	case r.stopping:
		state = st.warn.Render("stopping after this step")
	}
	done := 0
	for _, s := range r.steps {
		if s.state == "done" {
			done++
		}
	}
	end := now
	if r.ended {
		end = r.endedAt
	}
	lines := wrapIndent(st.title.Render("RUN "), r.id+fmt.Sprintf("  %s, step %d/%d, %s  elapsed %s", r.kind, min(r.current+1, len(r.steps)), len(r.steps), state, end.Sub(r.started).Round(time.Second)), width)
	for i, s := range r.steps {
		mark := "  "
		switch s.state {
		case "done":
			mark = st.ok.Render("✓ ")
		case "running":
			mark = st.warn.Render("▶ ")
		case "failed":
			mark = st.bad.Render("✗ ")
		}
		line := fmt.Sprintf("%s%2d %s", mark, i+1, s.title)
		if s.state == "done" || s.state == "failed" {
			line += fmt.Sprintf(" (%.1fs)", s.elapsed.Seconds())
			if s.detail != "" {
				line += ": " + s.detail
			}
		}
		lines = append(lines, truncateANSI(line, width))
		if s.state == "running" && r.progress != "" {
			lines = append(lines, "      "+truncateANSI(r.progress, width-6))
		}
	}
	if r.ended && r.outcome != plans.OutcomeSucceeded {
		if r.err != "" {
			lines = append(lines, wrap(st.bad.Render("error: ")+r.err, width)...)
		}
		// The command is typed by the operator: wrapped, never cut.
		lines = append(lines, wrapIndent(st.title.Render("to finish it: "), r.resume+"  (or R here)", width)...)
	}
	return lines
}
