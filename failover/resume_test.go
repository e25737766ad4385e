package failover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/kvstore"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/mirror"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
	"github.com/drctl/drctl/topology"
)

// The world of every kill-and-resume case: two topics, two groups that
// committed part way on east, the mirror daemon in this process (its
// group sync effectively off, so that the failover's translate-groups
// step is the only writer of the groups' positions on west), fence none
// and a short quiet period.
const (
	resumeMirrorYAML   = "  topics: {include: [\"orders\", \"refunds\"]}\n  groups: {include: [\"billing\", \"audit\"]}\n  group_sync_interval: 1h"
	resumeFailoverYAML = "failover: {fence: none, drain_timeout: 60s, quiet_period: 300ms}\n"
	caseTime           = 2 * time.Minute
)

var (
	resumeTopics = map[string]int32{"orders": 3, "refunds": 2}
	resumeGroups = []string{"audit", "billing"}
)

// killCase is one place to kill drctl at, and how to resume.
type killCase struct {
	step string
	// event is the boundary the child is killed at: step-started (before
	// the step's action runs) or step-done (before the next step's guard).
	// Empty: the child is killed while the step runs (mid-step).
	event plans.EventType
	// sameJournal resumes with the child's journal directory; otherwise
	// with an empty one, as on another machine, where only the clusters'
	// run record knows the run.
	sameJournal bool
	// recordLost (with step-done, from another machine): the kill fell
	// after the journal recorded the step done and before the clusters'
	// run record did, so the resume runs the finished step again.
	recordLost bool
}

func (c killCase) name() string {
	at := "mid-" + c.step
	switch c.event {
	case plans.EventStepStarted:
		at = "started-" + c.step
	case plans.EventStepDone:
		at = "done-" + c.step
	}
	switch {
	case c.sameJournal:
		return at + "/same-journal"
	case c.recordLost:
		return at + "/record-lost"
	}
	return at + "/other-machine"
}

// midSteps are the steps a case can kill in the middle of.
var midSteps = []string{StepBegin, StepDrain, runrecord.StepFlip, StepTranslateGroups, runrecord.StepWipe, StepReseedStart, StepFinish}

// TestKillAndResume proves that a planned failover east -> west is
// resumable everywhere: drctl (this test binary in a child process, running the saved
// plan) is SIGKILLed at a step boundary or in the middle of a step, and
// failover.Resume, from the same journal directory or from an empty one
// (another machine), finishes the run with the end state of an
// uninterrupted run: the same roles on both clusters, every group reading
// exactly the records it had not read, east re-seeded with west's records,
// nothing salvaged.
//
// By default it kills after every step (resuming one way or the other in
// turn); after a few steps that the journal recorded done and the
// clusters did not; and in the middle of the drain (while producers still
// write), of the role flip (west written, east's write left in an open
// transaction), of the translation (between the commits of two groups)
// and of the wipe (its groups deleted, its topics not).
// DRCTL_RESUME_ALL=1 kills before and after every step, after every step
// with the clusters' record lost, and in the middle of those four steps
// and of begin, reseed-start and finish (each role-state step is killed
// with its write done on west and left open on east), each resumed both
// ways.
func TestKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("kills drctl processes on kfake clusters")
	}
	steps := plannedSteps(t)
	var cases []killCase
	if os.Getenv("DRCTL_RESUME_ALL") != "" {
		for _, s := range steps {
			for _, ev := range []plans.EventType{plans.EventStepStarted, plans.EventStepDone} {
				cases = append(cases, killCase{step: s, event: ev, sameJournal: true}, killCase{step: s, event: ev})
			}
			cases = append(cases, killCase{step: s, event: plans.EventStepDone, recordLost: true})
		}
		for _, s := range midSteps {
			cases = append(cases, killCase{step: s, sameJournal: true}, killCase{step: s})
		}
	} else {
		for i, s := range steps {
			cases = append(cases, killCase{step: s, event: plans.EventStepDone, sameJournal: i%2 == 0})
		}
		for _, s := range []string{runrecord.StepFlip, StepTranslateGroups, runrecord.StepWipe, StepReseedStart} {
			cases = append(cases, killCase{step: s, event: plans.EventStepDone, recordLost: true})
		}
		cases = append(cases, killCase{step: StepDrain, sameJournal: true}, killCase{step: runrecord.StepFlip},
			killCase{step: StepTranslateGroups}, killCase{step: runrecord.StepWipe}, killCase{step: StepFinish})
	}

	var baseline string
	t.Run("uninterrupted", func(t *testing.T) {
		w := setUpResume(t)
		child := startChild(t, w.pair.Path, w.planPath, t.TempDir(), nil)
		child.waitExit(t, caseTime)
		t.Logf("the failover ran in %v", time.Since(child.started).Round(time.Millisecond))
		baseline = w.checkEndState(t)
	})
	for _, c := range cases {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel() // each case has clusters of its own
			w := setUpResume(t)
			w.killAndResume(t, c)
			if shape := w.checkEndState(t); baseline != "" && shape != baseline {
				t.Errorf("the clusters differ from the uninterrupted run's:\n%s\nuninterrupted:\n%s", shape, baseline)
			}
		})
	}
}

// plannedSteps returns the step names of a planned failover east -> west.
func plannedSteps(t *testing.T) []string {
	pair := kfaketest.NewPair(t, kfaketest.Options{Mirror: resumeMirrorYAML, Extra: resumeFailoverYAML})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := PlanFailover(ctx, kfaketest.Session(t, pair.Topology), FailoverRequest{To: "west"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range p.Steps {
		names = append(names, s.Name)
	}
	for _, need := range []string{StepBegin, StepDrain, StepTranslateGroups, runrecord.StepWipe, StepFinish} {
		if !slices.Contains(names, need) {
			t.Fatalf("a planned failover has no %s step: %v", need, names)
		}
	}
	return names
}

// resumeWorld is one case's clusters, data and plan.
type resumeWorld struct {
	pair       *kfaketest.Pair
	topo       *topology.Topology
	east, west sarama.Client
	prod       *appProducer
	// consumed holds, per group, the records it read on east before the
	// failover (those below its committed positions).
	consumed map[string]map[string]bool
	plan     *plans.Plan
	planPath string
	// epoch is the role-state epoch the plan starts from; a planned
	// failover ends two above it (begin, flip).
	epoch int64
}

func setUpResume(t *testing.T) *resumeWorld {
	t.Helper()
	pair := kfaketest.NewPair(t, kfaketest.Options{Mirror: resumeMirrorYAML, Extra: resumeFailoverYAML})
	w := &resumeWorld{pair: pair, topo: pair.Topology, consumed: map[string]map[string]bool{}}
	w.east, w.west = kfaketest.Dial(t, w.topo, "east"), kfaketest.Dial(t, w.topo, "west")
	admin, err := sarama.NewClusterAdminFromClient(w.east)
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range slices.Sorted(maps.Keys(resumeTopics)) {
		if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: resumeTopics[topic], ReplicationFactor: 1}, false); err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	d := mirror.NewDaemon(w.topo, mirror.DaemonOptions{StatePoll: 200 * time.Millisecond,
		Engine: mirror.Options{Shards: 2, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond}})
	stopped := make(chan error, 1)
	go func() { stopped <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-stopped
	})

	w.prod = newProducer(t, w.topo.Clusters["east"])
	w.prod.send(t, "orders", 30)
	w.prod.send(t, "refunds", 16)
	// billing read everything so far, audit half of each partition.
	for _, g := range resumeGroups {
		w.consumed[g] = map[string]bool{}
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer rcancel()
	for _, topic := range slices.Sorted(maps.Keys(resumeTopics)) {
		for part := int32(0); part < resumeTopics[topic]; part++ {
			recs := readRecords(t, rctx, w.east, topic, part, 0)
			at := map[string]int64{"billing": int64(len(recs)), "audit": int64(len(recs) / 2)}
			for _, g := range resumeGroups {
				kfaketest.CommitOn(t, w.east, g, topic, map[int32]int64{part: at[g]})
				for _, r := range recs {
					if r.Offset < at[g] {
						w.consumed[g][string(r.Value)] = true
					}
				}
			}
		}
	}
	w.prod.send(t, "orders", 30)
	w.prod.send(t, "refunds", 16)
	waitResumeMirrored(t, w.topo)

	pctx, pcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer pcancel()
	if w.plan, err = PlanFailover(pctx, kfaketest.Session(t, w.topo), FailoverRequest{To: "west"}); err != nil {
		t.Fatal(err)
	}
	var in Inputs
	if err := w.plan.DecodeInputs(&in); err != nil {
		t.Fatal(err)
	}
	w.epoch = in.Epoch
	w.planPath = filepath.Join(t.TempDir(), "plan.json")
	if err := plans.SavePlan(w.planPath, w.plan); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *resumeWorld) index(t *testing.T, step string) int {
	t.Helper()
	for i, s := range w.plan.Steps {
		if s.Name == step {
			return i
		}
	}
	t.Fatalf("plan %s has no step %s", w.plan.ID, step)
	return -1
}

// killAndResume runs the plan in a child, kills it at c, checks that the
// journal and the clusters' run record say where to resume, and resumes.
func (w *resumeWorld) killAndResume(t *testing.T, c killCase) {
	t.Helper()
	idx := w.index(t, c.step)
	childDir := t.TempDir()
	journal := filepath.Join(childDir, w.plan.ID+".jsonl")

	var hold *journalPoint      // where the child pauses
	var held *heldRequest       // a request of the child held in a cluster
	var arm func() *heldRequest // holds a request once the child paused
	stopProducing := func() {}
	switch {
	case c.event != "":
		hold = &journalPoint{Type: c.event, Index: idx}
	case c.step == StepDrain:
		// Producers still write (fence none, nothing stops them) while
		// the drain starts, so it cannot finish; it is killed after it
		// measured the lag once.
		hold = &journalPoint{Type: plans.EventStepProgress, Index: idx}
		stopProducing = w.prod.background(t, "orders")
	case c.step == StepTranslateGroups:
		// The commit of the first group on west is held: the kill falls
		// between the two groups' commits.
		held = holdFirst(t, w.pair.West, kmsg.OffsetCommit, false, func(r kmsg.Request) bool {
			return slices.Contains(resumeGroups, r.(*kmsg.OffsetCommitRequest).Group)
		})
	case c.step == runrecord.StepWipe:
		// The deletion of the topics on east (one batched request) is
		// held and then dropped: the groups are gone, both topics still
		// there.
		held = holdFirst(t, w.pair.East, kmsg.DeleteTopics, true, func(kmsg.Request) bool { return true })
	case slices.Contains([]string{StepBegin, runrecord.StepFlip, StepReseedStart, StepFinish}, c.step):
		// The step writes the role state on west, then on east; the
		// commit of east's transaction is held and then dropped, so east
		// keeps an open transaction of a dead writer. The child pauses
		// before the step so that earlier steps' commits pass.
		hold = &journalPoint{Type: plans.EventStepStarted, Index: idx}
		arm = func() *heldRequest {
			return holdFirst(t, w.pair.East, kmsg.EndTxn, true, func(r kmsg.Request) bool {
				return r.(*kmsg.EndTxnRequest).TransactionalID == topology.StateTransactionalID(w.topo.Name)
			})
		}
	default:
		t.Fatalf("no way to kill in the middle of %s", c.step)
	}

	child := startChild(t, w.pair.Path, w.planPath, childDir, hold)
	if hold != nil {
		waitJournal(t, journal, *hold, child, caseTime)
		child.waitHeld(t, caseTime)
	}
	if arm != nil {
		held = arm()
		child.release(t)
	}
	if held != nil {
		held.wait(t, child, "the request to hold", caseTime)
	}
	atKill, err := journalEvents(journal)
	if err != nil {
		t.Fatal(err)
	}
	child.kill()
	ran := time.Since(child.started)
	if held != nil {
		held.release()
	}
	stopProducing()

	from, rerun := idx+1, false
	if c.event != plans.EventStepDone {
		from, rerun = idx, true
		if !journalHas(atKill, journalPoint{plans.EventStepStarted, idx}) || journalHas(atKill, journalPoint{plans.EventStepDone, idx}) {
			t.Fatalf("the kill was not inside %s: journal %v", c.step, eventList(atKill))
		}
	}
	for _, ev := range atKill {
		if c.event == "" && ev.Type == plans.EventStepProgress && ev.Index == idx {
			t.Logf("%s said %q when it was killed", c.step, ev.Message)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), caseTime)
	defer cancel()
	if held != nil {
		w.checkPartial(t, ctx, c.step)
	}

	st, err := plans.ReadJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	if st.Next != from || st.Rerun != rerun || st.Finished {
		t.Errorf("killed at %s: the journal resumes at step %d (rerun %v, finished %v), want %d (rerun %v)", c.name(), st.Next, st.Rerun, st.Finished, from, rerun)
	}
	// A run killed among its first steps (the preflight and the question,
	// which change nothing) leaves no record in the clusters.
	changed := false
	for i := 0; i < from || (rerun && i == from); i++ {
		changed = changed || !ChangesNothing(w.plan.Steps[i].Name)
	}
	rec, err := loadRun(ctx, w.topo, w.plan.ID)
	switch {
	case err != nil:
		t.Fatalf("run %s in the clusters: %v", w.plan.ID, err)
	case rec == nil && changed:
		t.Fatalf("the clusters do not know run %s, killed at %s", w.plan.ID, c.name())
	case rec != nil:
		if next := leadingDone(rec.Done); next != from || (rec.Started == next) != rerun || rec.Finished {
			t.Errorf("killed at %s: the clusters' run record resumes at step %d (started %d, finished %v), want %d (rerun %v)", c.name(), next, rec.Started, rec.Finished, from, rerun)
		}
	}
	// From begin until finish the role state names the run (a begin
	// killed in the middle wrote it on west).
	named := (from-1 >= w.index(t, StepBegin) && from-1 < w.index(t, StepFinish)) || (c.event == "" && c.step == StepBegin)
	if c.recordLost && rec != nil {
		rec.Done[idx], rec.Started = false, idx
		delete(rec.Outputs, idx)
		raw, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		for _, cl := range []sarama.Client{w.east, w.west} {
			if err := kvstore.Put(ctx, cl, topology.RunsTopic, w.plan.ID, raw); err != nil {
				t.Fatal(err)
			}
		}
		from = idx
	}

	dir, how := childDir, "with the same journal"
	if !c.sameJournal {
		dir, how = t.TempDir(), "from another machine"
		// drctl resume without a run id finds the run in the role state
		// from begin until finish.
		id, err := ResumeID(ctx, kfaketest.Session(t, w.topo), "")
		switch {
		case named && (err != nil || id != w.plan.ID):
			t.Errorf("drctl resume without a run id: %q, %v; want %s", id, err, w.plan.ID)
		case !named && err == nil:
			t.Errorf("drctl resume without a run id found %s, but no role state names a run here", id)
		}
	}
	begun := time.Now()
	yes := func(string) error { return nil }
	err = Resume(ctx, kfaketest.Session(t, w.topo), w.plan.ID, RunOptions{JournalDir: dir, Confirm: yes})
	if rec == nil && !c.sameJournal {
		// Nothing changed and nothing knows the run but the dead
		// machine's journal: the other machine applies the saved plan.
		if err == nil || !strings.Contains(err.Error(), w.plan.ID) {
			t.Fatalf("resume of a run no cluster knows: %v", err)
		}
		how += ", applying the saved plan"
		from = 0 // nothing changed, so the plan runs from its first step
		p, lerr := plans.LoadPlan(w.planPath)
		if lerr != nil {
			t.Fatal(lerr)
		}
		err = Execute(ctx, kfaketest.Session(t, w.topo), p, RunOptions{JournalDir: dir, Confirm: yes})
	}
	if err != nil {
		t.Fatalf("resume %s %s: %v", w.plan.ID, how, err)
	}
	t.Logf("killed %v after start at %s; resumed %s at step %d in %v", ran.Round(time.Millisecond), c.name(), how, from, time.Since(begun).Round(time.Millisecond))
	resumed := filepath.Join(dir, w.plan.ID+".jsonl")
	if st, err := plans.ReadJournal(resumed); err != nil || !st.Finished {
		t.Errorf("the journal of the resumed run is not finished: %v %+v", err, st)
	}
	// The resumed run started where the journal or the record said, not
	// from the top.
	evs, err := journalEvents(resumed)
	if err != nil {
		t.Fatal(err)
	}
	var starts []int
	for _, ev := range evs {
		if ev.Type == plans.EventRunStarted {
			starts = append(starts, ev.Index)
		}
	}
	if len(starts) == 0 || starts[len(starts)-1] != from {
		t.Errorf("the resumed run started at steps %v, want %d last", starts, from)
	}
}

// checkPartial checks that a mid-step kill left the step half done.
func (w *resumeWorld) checkPartial(t *testing.T, ctx context.Context, step string) {
	t.Helper()
	var state string
	deadline := time.Now().Add(10 * time.Second)
	for {
		switch step {
		case StepBegin, runrecord.StepFlip, StepReseedStart, StepFinish:
			var want stateParams
			if err := w.plan.Steps[w.index(t, step)].DecodeParams(&want); err != nil {
				t.Fatal(err)
			}
			west, _, werr := rolestate.Read(ctx, w.west, w.topo.Name)
			east, _, eerr := rolestate.Read(ctx, w.east, w.topo.Name)
			if werr == nil && eerr == nil && sameState(west, want.State) && !sameState(east, want.State) {
				return
			}
			state = fmt.Sprintf("west holds %s (%v), east %s (%v); the step writes %s", west, werr, east, eerr, want.State)
		case StepTranslateGroups:
			var moved []string
			for _, g := range resumeGroups {
				if len(committedOf(t, w.west, g)) > 0 {
					moved = append(moved, g)
				}
			}
			if len(moved) == 1 {
				return
			}
			state = fmt.Sprintf("groups with positions on west: %v", moved)
		case runrecord.StepWipe:
			var left []string
			for _, topic := range slices.Sorted(maps.Keys(resumeTopics)) {
				if info, err := kafkaread.Topic(ctx, w.east, topic); err == nil && info.Exists {
					left = append(left, topic)
				}
			}
			var kept []string
			for _, g := range resumeGroups {
				if len(committedOf(t, w.east, g)) > 0 {
					kept = append(kept, g)
				}
			}
			if len(left) == len(resumeTopics) && len(kept) == 0 {
				return
			}
			state = fmt.Sprintf("topics left on east: %v, groups with positions there: %v", left, kept)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kill did not leave %s half done: %s", step, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkEndState checks the state every finished failover east -> west
// must leave and returns the shape of both clusters (topics and groups)
// for comparison with the uninterrupted run.
func (w *resumeWorld) checkEndState(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clients := map[string]sarama.Client{"east": w.east, "west": w.west}
	for _, name := range []string{"east", "west"} {
		st, found, err := rolestate.Read(ctx, clients[name], w.topo.Name)
		if err != nil || !found {
			t.Fatalf("role state on %s: found %v, %v", name, found, err)
		}
		if st.Epoch != w.epoch+2 || st.Active != "west" || st.Standby != "east" || st.Phase != rolestate.PhaseSteady || st.Run != nil {
			t.Errorf("role state on %s is %s; want epoch %d, west active, east standby, steady, no run", name, st, w.epoch+2)
		}
	}
	rec, err := loadRun(ctx, w.topo, w.plan.ID)
	if err != nil || rec == nil || !rec.Finished || rec.Outcome != plans.OutcomeSucceeded {
		t.Errorf("the clusters' record of run %s is not finished: %v %+v", w.plan.ID, err, rec)
	}

	// Each group reads on west exactly what it had not read on east.
	acked := w.prod.values()
	for _, g := range resumeGroups {
		committed := committedOf(t, w.west, g)
		seen := map[string]int{}
		for _, topic := range slices.Sorted(maps.Keys(resumeTopics)) {
			for part := int32(0); part < resumeTopics[topic]; part++ {
				at, ok := committed[fmt.Sprintf("%s/%d", topic, part)]
				if !ok {
					t.Errorf("group %s has no position on west for %s/%d", g, topic, part)
					continue
				}
				for _, r := range readRecords(t, ctx, w.west, topic, part, at) {
					seen[string(r.Value)]++
				}
			}
		}
		var dup, extra, missing []string
		for v, n := range seen {
			switch {
			case !acked[v] || w.consumed[g][v]:
				extra = append(extra, v)
			case n > 1:
				dup = append(dup, v)
			}
		}
		for v := range acked {
			if !w.consumed[g][v] && seen[v] == 0 {
				missing = append(missing, v)
			}
		}
		if len(dup)+len(extra)+len(missing) > 0 {
			sort.Strings(dup)
			sort.Strings(extra)
			sort.Strings(missing)
			t.Errorf("group %s on west: %d records read twice %v, %d read again or never produced %v, %d never read %v",
				g, len(dup), firstOf(dup), len(extra), firstOf(extra), len(missing), firstOf(missing))
		}
	}

	// West holds every record once; east holds exactly west's records,
	// partition by partition, in order.
	onWest := map[string]int{}
	for _, topic := range slices.Sorted(maps.Keys(resumeTopics)) {
		for part := int32(0); part < resumeTopics[topic]; part++ {
			want := readRecords(t, ctx, w.west, topic, part, 0)
			got := readRecords(t, ctx, w.east, topic, part, 0)
			for _, r := range want {
				onWest[string(r.Value)]++
			}
			if err := sameRecords(got, want); err != nil {
				t.Errorf("%s/%d on east is not a copy of west: %v", topic, part, err)
			}
		}
		if n, err := w.east.Partitions(topic); err != nil || len(n) != int(resumeTopics[topic]) {
			t.Errorf("%s on east: partitions %v, %v", topic, n, err)
		}
	}
	for v := range acked {
		if onWest[v] != 1 {
			t.Errorf("record %s is on west %d times", v, onWest[v])
		}
	}
	if len(onWest) != len(acked) {
		t.Errorf("west holds %d distinct records, %d were produced", len(onWest), len(acked))
	}

	var shape strings.Builder
	for _, name := range []string{"east", "west"} {
		admin, err := sarama.NewClusterAdminFromClient(clients[name])
		if err != nil {
			t.Fatal(err)
		}
		topics, err := admin.ListTopics()
		if err != nil {
			t.Fatal(err)
		}
		for topic := range topics {
			if strings.HasSuffix(topic, w.topo.Failover.SalvageTopicSuffix) {
				t.Errorf("a planned failover salvaged into %s on %s", topic, name)
			}
		}
		groups, err := admin.ListConsumerGroups()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&shape, "%s topics %v\n%s groups %v\n", name, slices.Sorted(maps.Keys(topics)), name, slices.Sorted(maps.Keys(groups)))
	}
	return shape.String()
}

// appProducer writes numbered records (value = key = topic-seq) and
// remembers what was acknowledged.
type appProducer struct {
	p     sarama.SyncProducer
	mu    sync.Mutex
	seq   int
	acked map[string]bool
}

func newProducer(t *testing.T, c *topology.Cluster) *appProducer {
	t.Helper()
	cfg, err := c.SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	p, err := sarama.NewSyncProducer(c.Bootstrap, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return &appProducer{p: p, acked: map[string]bool{}}
}

func (p *appProducer) send(t *testing.T, topic string, n int) {
	t.Helper()
	if err := p.trySend(topic, n); err != nil {
		t.Fatal(err)
	}
}

func (p *appProducer) trySend(topic string, n int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var msgs []*sarama.ProducerMessage
	for i := range n {
		v := fmt.Sprintf("%s-%05d", topic, p.seq+i)
		msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(v), Value: sarama.StringEncoder(v)})
	}
	if err := p.p.SendMessages(msgs); err != nil {
		return fmt.Errorf("produce to %s: %w", topic, err)
	}
	for _, m := range msgs {
		p.acked[string(m.Value.(sarama.StringEncoder))] = true
	}
	p.seq += n
	return nil
}

// background writes small batches to topic until the returned function
// is called; it returns once the producer stopped.
func (p *appProducer) background(t *testing.T, topic string) (stop func()) {
	done, stopped := make(chan struct{}), make(chan error, 1)
	go func() {
		for {
			if err := p.trySend(topic, 4); err != nil {
				stopped <- err
				return
			}
			select {
			case <-done:
				stopped <- nil
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return sync.OnceFunc(func() {
		close(done)
		if err := <-stopped; err != nil {
			t.Error(err)
		}
	})
}

func (p *appProducer) values() map[string]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]bool, len(p.acked))
	for v := range p.acked {
		out[v] = true
	}
	return out
}

// committedOf returns group's committed positions ("topic/partition" ->
// offset) on a cluster; a group unknown there has none.
func committedOf(t *testing.T, cl sarama.Client, group string) map[string]int64 {
	t.Helper()
	admin, err := sarama.NewClusterAdminFromClient(cl)
	if err != nil {
		t.Fatal(err)
	}
	tps := map[string][]int32{}
	for topic, n := range resumeTopics {
		for part := range n {
			tps[topic] = append(tps[topic], part)
		}
	}
	resp, err := admin.ListConsumerGroupOffsets(group, tps)
	if errors.Is(err, sarama.ErrGroupIDNotFound) {
		return map[string]int64{} // kfake's answer for a group it does not know
	}
	if err != nil {
		t.Fatalf("positions of %s: %v", group, err)
	}
	out := map[string]int64{}
	for topic, parts := range resp.Blocks {
		for part, b := range parts {
			if b.Err == sarama.ErrNoError && b.Offset >= 0 {
				out[fmt.Sprintf("%s/%d", topic, part)] = b.Offset
			}
		}
	}
	return out
}

// readRecords returns the committed records of a partition from offset from.
func readRecords(t *testing.T, ctx context.Context, cl sarama.Client, topic string, part int32, from int64) []kafkaread.Record {
	t.Helper()
	var out []kafkaread.Record
	if _, err := kafkaread.ReadCommitted(ctx, cl, topic, part, from, func(r kafkaread.Record) error {
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameRecords compares keys and values, in order.
func sameRecords(got, want []kafkaread.Record) error {
	for i := range min(len(got), len(want)) {
		if string(got[i].Key) != string(want[i].Key) || string(got[i].Value) != string(want[i].Value) {
			return fmt.Errorf("record %d is %s, want %s", i, got[i].Value, want[i].Value)
		}
	}
	if len(got) != len(want) {
		return fmt.Errorf("%d records, want %d", len(got), len(want))
	}
	return nil
}

// waitResumeMirrored waits until east -> west copied everything.
func waitResumeMirrored(t *testing.T, topo *topology.Topology) {
	t.Helper()
	link := topo.Link("east", "west")
	partitions := 0
	for _, n := range resumeTopics {
		partitions += int(n)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		rep, err := linkstate.MeasureLag(ctx, kfaketest.Session(t, topo), link)
		cancel()
		if err == nil && rep.Caught() && allMirrored(rep) && len(rep.Partitions) == partitions {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never caught up: %v %+v", link, err, rep)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// leadingDone returns the first step not done.
func leadingDone(done []bool) int {
	n := 0
	for n < len(done) && done[n] {
		n++
	}
	return n
}

func eventList(evs []plans.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, journalPoint{ev.Type, ev.Index}.String())
	}
	return out
}

func firstOf(s []string) []string {
	return s[:min(len(s), 5)]
}
