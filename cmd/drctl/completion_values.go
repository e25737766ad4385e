package main

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
)

// Completion of values: cluster names after --to and for the commands that
// take a cluster, run ids for resume and abort, drill ids for drill report,
// drill names for drill run. The values come from the topology file and
// this machine's journal directory only: a TAB never waits for a cluster.
//
// The shell scripts put the word being completed in $DRCTL_COMPLETE_CUR, so
// that "--to <TAB>" (a value) is told from "--to<TAB>" (the flag's name):
// urfave/cli sees the same words in both.
const completeCurEnv = "DRCTL_COMPLETE_CUR"

type valueKind int

const (
	noValues valueKind = iota
	clusterNames
	runIDs
	drillIDs
	drillNames
)

// flagValues names the flags whose values complete, by flag name.
var flagValues = map[string]valueKind{"to": clusterNames}

// argValues names the positional arguments that complete, by command path.
var argValues = map[string]valueKind{
	"reseed": clusterNames, "fence": clusterNames, "unfence": clusterNames,
	"resume": runIDs, "abort": runIDs,
	"drill report": drillIDs, "drill run": drillNames,
}

// completeValues prints the values for the word being completed, and says
// whether it did (false: no value completes here).
func completeValues(ctx *cli.Context, prev string) bool {
	cur, ok := os.LookupEnv(completeCurEnv)
	if !ok || strings.HasPrefix(cur, "-") {
		return false
	}
	var kind valueKind
	if strings.HasPrefix(prev, "-") {
		kind = flagValues[strings.TrimLeft(prev, "-")] // another flag's value: the shell offers files
	} else if ctx.NArg() == 0 { // each of these commands takes one argument
		kind = argValues[commandPath(ctx)]
	}
	if kind == noValues {
		return false
	}
	for _, v := range values(ctx, kind) {
		fmt.Fprintln(ctx.App.Writer, v)
	}
	return true
}

// values lists the values of kind; nothing when the topology cannot be
// loaded.
func values(ctx *cli.Context, kind valueKind) []string {
	topo, err := loadTopology(ctx)
	if err != nil {
		return nil
	}
	switch kind {
	case clusterNames:
		return topo.ClusterNames()
	case drillNames:
		return topo.Drills.DrillNames()
	case runIDs:
		return journalRunIDs(failover.JournalDir(), topo.Name)
	case drillIDs:
		hist, _ := drill.History(ctx.Context, kafkaconn.New(topo), drill.HistoryOptions{JournalDir: failover.JournalDir(), LocalOnly: true})
		ids := make([]string, len(hist))
		for i, r := range hist {
			ids[i] = r.ID
		}
		return ids
	}
	return nil
}

// journalRunIDs are the failover, failback and reseed runs of topology
// name in this machine's journal that did not finish (and were not
// aborted), newest first: what resume and abort take.
func journalRunIDs(dir, name string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	type run struct {
		id  string
		mod int64
	}
	var runs []run
	for _, f := range files {
		id := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		kind, _, _ := strings.Cut(id, "-")
		switch rolestate.RunKind(kind) {
		case rolestate.RunFailover, rolestate.RunFailback, rolestate.RunReseed:
		default:
			continue
		}
		st, err := plans.ReadJournal(f)
		if err != nil || st.Finished || st.Outcome == plans.OutcomeAborted || runrecord.TopologyOf(st.Plan) != name {
			continue
		}
		var mod int64
		if info, err := os.Stat(f); err == nil {
			mod = info.ModTime().UnixNano()
		}
		runs = append(runs, run{id, mod})
	}
	slices.SortFunc(runs, func(a, b run) int { return cmp.Compare(b.mod, a.mod) })
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.id
	}
	return ids
}
