package failover

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/plans"
)

// UnfinishedRun returns the newest failover, failback or reseed run of
// topology topoName in the journal directory dir that neither finished nor
// was aborted, and got past its first step (nil when there is none). The clusters are the record of the
// run in progress; this is the local trace of a run killed before it
// wrote its run to them (or that wrote it to a cluster that is down), which
// `drctl resume` without an id names instead of guessing.
func UnfinishedRun(dir, topoName string) *plans.JournalState {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	type file struct {
		name string
		mod  time.Time
	}
	var files []file
	for _, e := range entries {
		kind, _, _ := strings.Cut(e.Name(), "-")
		switch rolestate.RunKind(kind) {
		case rolestate.RunFailover, rolestate.RunFailback, rolestate.RunReseed:
		default:
			continue
		}
		if info, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), ".jsonl") {
			files = append(files, file{e.Name(), info.ModTime()})
		}
	}
	slices.SortFunc(files, func(a, b file) int { return b.mod.Compare(a.mod) })
	for _, f := range files {
		st, err := plans.ReadJournal(filepath.Join(dir, f.name))
		if err != nil || st.Plan == nil {
			continue
		}
		var in Inputs
		if st.Plan.DecodeInputs(&in) != nil || in.Topology != topoName {
			continue
		}
		switch {
		case st.Finished || st.Outcome == plans.OutcomeAborted || st.Outcome == plans.OutcomeSucceeded:
			return nil // the newest run of the topology ended
		case st.Outcome == plans.OutcomeStale || changedNothing(st):
			continue // stopped before it changed anything: nothing to finish
		}
		return st
	}
	return nil
}

// changedNothing reports whether a journaled run stopped before any step
// that changes the clusters started.
func changedNothing(st *plans.JournalState) bool {
	last := st.Next // started, unless it never was
	if !st.Rerun {
		last--
	}
	for i := 0; i <= last && i < len(st.Plan.Steps); i++ {
		if !ChangesNothing(st.Plan.Steps[i].Name) {
			return false
		}
	}
	return true
}
