package plans

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// setup is an executor with every kind of hook: a journal file, the human
// printer, the JSON stream and a recorder, on a manual clock.
type setup struct {
	w       *world
	clk     *clock
	ex      *Executor
	journal *Journal
	path    string
	human   *bytes.Buffer
	stream  *bytes.Buffer
	rec     *recorder
	warns   []error
}

func newSetup(t *testing.T) *setup {
	t.Helper()
	s := &setup{w: &world{}, clk: newClock(), human: &bytes.Buffer{}, stream: &bytes.Buffer{}, rec: &recorder{}}
	s.path = filepath.Join(t.TempDir(), "r1.jsonl")
	j, err := CreateJournal(s.path)
	must(t, err)
	t.Cleanup(func() { j.Close() })
	s.journal = j
	printer := NewPrinter(s.human)
	printer.Resume = "drctl resume r1"
	s.ex = &Executor{
		Registry: s.w.registry(t),
		// The journal is listed last on purpose: required hooks run first.
		Hooks: []Hook{printer, NewJSONStream(s.stream), s.rec, j},
		Actor: "alice@ops-1",
		Now:   s.clk.Now,
		Warn:  func(err error) { s.warns = append(s.warns, err) },
	}
	// Every step takes 1.5s of the manual clock.
	s.w.before = func(ctx context.Context, step Step, rc *RunContext) error {
		s.clk.Advance(1500 * time.Millisecond)
		return nil
	}
	return s
}

func (s *setup) state(t *testing.T) *JournalState {
	t.Helper()
	st, err := ReadJournal(s.path)
	must(t, err)
	return st
}

func TestRunHappyPathAllHooks(t *testing.T) {
	s := newSetup(t)
	must(t, s.ex.Run(context.Background(), testPlan(t)))

	if got, want := s.w.callLog(), "check drain fence flip"; got != want {
		t.Errorf("calls = %q, want %q", got, want)
	}
	if got, want := s.w.flipSaw, "drained=1200 acls=deny-write-orders"; got != want {
		t.Errorf("step 4 read %q from earlier outputs, want %q", got, want)
	}
	wantTrace := []string{"run-started:0",
		"step-started:0", "step-done:0", "step-started:1", "step-done:1",
		"step-started:2", "step-done:2", "step-started:3", "step-done:3",
		"run-done:4"}
	if got := s.rec.trace(); !reflect.DeepEqual(got, wantTrace) {
		t.Errorf("hook events:\n%v\nwant\n%v", got, wantTrace)
	}
	if got := traceOf(decodeEvents(t, s.stream.String())); !reflect.DeepEqual(got, wantTrace) {
		t.Errorf("JSON stream events:\n%v\nwant\n%v", got, wantTrace)
	}
	last := s.rec.last()
	if last.Outcome != OutcomeSucceeded || last.Actor != "alice@ops-1" || last.ElapsedMS != 6000 {
		t.Errorf("run-done = %+v", last)
	}

	wantHuman := `Run r1: failover, 4 steps
[1/4] Check both clusters ... done (1.5s): both reachable
[2/4] Drain the mirror ... done (1.5s): 0 records left
[3/4] Fence east against writes ... done (1.5s): fenced east
[4/4] Flip roles ... done (1.5s): west is active at epoch 8
Run r1 finished in 6.0s.
`
	if got := s.human.String(); got != wantHuman {
		t.Errorf("human output:\n%s\nwant:\n%s", got, wantHuman)
	}

	st := s.state(t)
	if !st.Finished || st.Next != 4 || st.LastCompleted != 3 || st.Rerun || st.Outcome != OutcomeSucceeded || len(st.Warnings) > 0 {
		t.Errorf("journal state = %+v", st)
	}
	if string(st.Outputs[1]) != `{"drained":1200}` || string(st.Outputs[2]) != `{"acls":["deny-write-orders"]}` {
		t.Errorf("journaled outputs = %q %q", st.Outputs[1], st.Outputs[2])
	}
	if d, _ := testPlan(t).Digest(); st.Digest != d || st.Plan.ID != "r1" || st.Actor != "alice@ops-1" {
		t.Errorf("journal plan = %s %s %s", st.Digest, st.Plan.ID, st.Actor)
	}
	if len(s.warns) > 0 {
		t.Errorf("warnings: %v", s.warns)
	}
	// A finished run resumes to nothing.
	must(t, s.ex.Resume(context.Background(), st))
	if got := s.w.callLog(); got != "check drain fence flip" {
		t.Errorf("resuming a finished run ran %q", got)
	}
}

func TestStepFailureHaltsAndJournals(t *testing.T) {
	s := newSetup(t)
	broken := errors.New("CreateAcls: CLUSTER_AUTHORIZATION_FAILED")
	s.w.before = func(ctx context.Context, step Step, rc *RunContext) error {
		if step.Name == "fence" && !rc.Rerun {
			return broken
		}
		return nil
	}
	err := s.ex.Run(context.Background(), testPlan(t))

	var se *StepError
	if !errors.As(err, &se) || se.Index != 2 || se.Name != "fence" || !errors.Is(err, broken) {
		t.Fatalf("err = %v, want a StepError for step 3", err)
	}
	if next, ok := NextStep(err); !ok || next != 2 {
		t.Errorf("NextStep = %d, %v", next, ok)
	}
	if got := s.w.callLog(); got != "check drain fence" {
		t.Errorf("calls = %q: the run went on after a failure", got)
	}
	st := s.state(t)
	if st.Next != 2 || !st.Rerun || st.Finished || st.Outcome != OutcomeFailed || !strings.Contains(st.LastError, "CLUSTER_AUTHORIZATION_FAILED") {
		t.Errorf("journal state = %+v", st)
	}
	if !strings.HasSuffix(s.human.String(), "[3/4] Fence east against writes ... failed (0.0s): CreateAcls: CLUSTER_AUTHORIZATION_FAILED\nRun r1 failed at step 3/4 (fence).\nTo finish the run later: drctl resume r1\n") {
		t.Errorf("human output:\n%s", s.human.String())
	}

	// Once the cause is fixed, a resume runs the failed step again, then the rest.
	j, st, err := OpenJournal(s.path)
	must(t, err)
	defer j.Close()
	s.ex.Hooks = []Hook{j}
	must(t, s.ex.Resume(context.Background(), st))
	if got := s.w.callLog(); got != "check drain fence fence(again) flip" {
		t.Errorf("calls = %q", got)
	}
	if st := s.state(t); !st.Finished {
		t.Errorf("not finished after resume: %+v", st)
	}
}

func TestJournalFailurePreventsTheStep(t *testing.T) {
	startOfStep2 := func(line string) bool {
		return strings.Contains(line, `"type":"step-started"`) && strings.Contains(line, `"index":1,`)
	}
	for _, c := range []struct {
		name     string
		syncFail bool
	}{{"write fails", false}, {"fsync fails", true}} {
		t.Run(c.name, func(t *testing.T) {
			w := &world{}
			fw := &failingWriter{fail: startOfStep2, syncFail: c.syncFail}
			var human bytes.Buffer
			ex := &Executor{Registry: w.registry(t), Hooks: []Hook{NewPrinter(&human), NewJournal("/var/lib/drctl/runs/r1.jsonl", fw)}}
			err := ex.Run(context.Background(), testPlan(t))

			var he *HookError
			if !errors.As(err, &he) || he.Event != EventStepStarted || he.Index != 1 || !errors.Is(err, errDiskFull) {
				t.Fatalf("err = %v, want a HookError at the start of step 2", err)
			}
			if !strings.Contains(err.Error(), "step 2/4 not run: journal /var/lib/drctl/runs/r1.jsonl could not record its start") {
				t.Errorf("the error does not name the step and the file: %v", err)
			}
			if got := w.callLog(); got != "check" {
				t.Errorf("calls = %q: a step that could not be journaled ran", got)
			}
			if strings.Contains(human.String(), "[2/4]") {
				t.Errorf("step 2 was shown as started:\n%s", human.String())
			}
			if !strings.Contains(human.String(), "Run r1 halted before step 2/4 (drain): ") {
				t.Errorf("human output:\n%s", human.String())
			}
		})
	}
}

func TestFirstInterruptFinishesTheStepAndStops(t *testing.T) {
	s := newSetup(t)
	in := &Interrupts{}
	s.ex.Interrupts = in
	s.w.before = func(ctx context.Context, step Step, rc *RunContext) error {
		if step.Name == "drain" {
			in.Interrupt() // Ctrl-C while the drain runs
			if ctx.Err() != nil {
				return errors.New("the first interrupt cancelled the step")
			}
		}
		return nil
	}
	err := s.ex.Run(context.Background(), testPlan(t))

	var ie *InterruptError
	if !errors.As(err, &ie) || !errors.Is(err, ErrInterrupted) || errors.Is(err, ErrCancelled) || ie.Next != 2 {
		t.Fatalf("err = %v, want ErrInterrupted with next step 3", err)
	}
	if got := s.w.callLog(); got != "check drain" {
		t.Errorf("calls = %q", got)
	}
	st := s.state(t)
	if st.Next != 2 || st.Rerun || st.Outcome != OutcomeInterrupted || string(st.Outputs[1]) != `{"drained":1200}` {
		t.Errorf("journal state = %+v", st)
	}
	if !strings.HasSuffix(s.human.String(), "[2/4] Drain the mirror ... done (0.0s): 0 records left\nRun r1 stopped before step 3/4 (fence) (interrupted).\nTo finish the run later: drctl resume r1\n") {
		t.Errorf("human output:\n%s", s.human.String())
	}
}

func TestSecondInterruptCancelsTheStep(t *testing.T) {
	s := newSetup(t)
	in := &Interrupts{}
	s.ex.Interrupts = in
	s.w.before = func(ctx context.Context, step Step, rc *RunContext) error {
		if step.Name != "fence" || rc.Rerun {
			return nil
		}
		in.Interrupt()
		in.Interrupt()
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for ACLs: %w", ctx.Err())
		case <-time.After(10 * time.Second):
			return errors.New("the second interrupt did not cancel the step's context")
		}
	}
	err := s.ex.Run(context.Background(), testPlan(t))

	var ie *InterruptError
	if !errors.As(err, &ie) || !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) || ie.Next != 2 {
		t.Fatalf("err = %v, want ErrCancelled at step 3", err)
	}
	if got := s.w.callLog(); got != "check drain fence" {
		t.Errorf("calls = %q", got)
	}
	st := s.state(t)
	if st.Next != 2 || !st.Rerun || st.Outcome != OutcomeCancelled {
		t.Errorf("journal state = %+v", st)
	}
	// The cancelled step runs again on resume.
	s.ex.Interrupts = nil
	j, st, err := OpenJournal(s.path)
	must(t, err)
	defer j.Close()
	s.ex.Hooks = []Hook{j}
	must(t, s.ex.Resume(context.Background(), st))
	if got := s.w.callLog(); got != "check drain fence fence(again) flip" {
		t.Errorf("calls = %q", got)
	}
}

func TestInterruptBeforeTheRun(t *testing.T) {
	s := newSetup(t)
	in := &Interrupts{}
	in.Interrupt()
	s.ex.Interrupts = in
	err := s.ex.Run(context.Background(), testPlan(t))
	if n, _ := NextStep(err); !errors.Is(err, ErrInterrupted) || n != 0 {
		t.Fatalf("err = %v", err)
	}
	if s.w.callLog() != "" {
		t.Errorf("steps ran: %s", s.w.callLog())
	}
}

func TestCallerContextCancelsTheStep(t *testing.T) {
	s := newSetup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.w.before = func(stepCtx context.Context, step Step, rc *RunContext) error {
		if step.Name == "drain" {
			cancel()
			<-stepCtx.Done()
			return stepCtx.Err()
		}
		return nil
	}
	err := s.ex.Run(ctx, testPlan(t))
	if n, _ := NextStep(err); !errors.Is(err, ErrCancelled) || n != 1 {
		t.Fatalf("err = %v", err)
	}
	// Hooks still recorded why the run stopped, though ctx was done.
	if st := s.state(t); st.Outcome != OutcomeCancelled || st.Next != 1 || !st.Rerun {
		t.Errorf("journal state = %+v", st)
	}
}

func TestProgressReachesHooks(t *testing.T) {
	s := newSetup(t)
	s.journal.ProgressEvery = 5 * time.Second
	reg := s.ex.Registry
	drain := ActionFunc(func(ctx context.Context, step Step, rc *RunContext) (Result, error) {
		// A drain reporting every second for 8 seconds; one report comes
		// from another goroutine.
		for left := 8; left > 0; left-- {
			msg := fmt.Sprintf("%d,000 records, %d.0 s left", left, left)
			if left == 4 {
				done := make(chan struct{})
				go func() { rc.Progress(msg, float64(8-left)/8); close(done) }()
				<-done
			} else {
				rc.Progress(msg, float64(8-left)/8)
			}
			s.clk.Advance(time.Second)
		}
		return NewResult("0 records left", map[string]int{"drained": 8000})
	})
	reg.actions["drain"] = drain
	must(t, s.ex.Run(context.Background(), testPlan(t)))

	var msgs []string
	for _, e := range s.rec.events {
		if e.Type == EventStepProgress {
			if e.Index != 1 || e.Name != "drain" || e.Fraction == nil {
				t.Errorf("progress event %+v", e)
			}
			msgs = append(msgs, e.Message)
		}
	}
	if len(msgs) != 8 || msgs[0] != "8,000 records, 8.0 s left" {
		t.Errorf("the recorder got %d progress events: %q", len(msgs), msgs)
	}
	var streamed int
	for _, e := range decodeEvents(t, s.stream.String()) {
		if e.Type == EventStepProgress {
			streamed++
		}
	}
	if streamed != 8 {
		t.Errorf("the JSON stream got %d progress events, want 8", streamed)
	}
	// The printer shows one line per 2 s, the journal one record per 5 s.
	wantHuman := `[2/4] Drain the mirror ...
      8,000 records, 8.0 s left (0%)
      6,000 records, 6.0 s left (25%)
      4,000 records, 4.0 s left (50%)
      2,000 records, 2.0 s left (75%)
[2/4] Drain the mirror ... done (8.0s): 0 records left
`
	if !strings.Contains(s.human.String(), wantHuman) {
		t.Errorf("human output:\n%s\nwant it to contain:\n%s", s.human.String(), wantHuman)
	}
	data := readFile(t, s.path)
	if got := strings.Count(data, `"type":"step-progress"`); got != 2 {
		t.Errorf("journal has %d progress records, want 2 (at 0 s and 5 s)", got)
	}
}

func TestStaleGuardStopsTheRun(t *testing.T) {
	s := newSetup(t)
	var checked []int
	s.ex.Guard = Guards(
		func(ctx context.Context, p *Plan, next int) error {
			if _, ok := ctx.Deadline(); !ok {
				return errors.New("the guard got no deadline")
			}
			return nil
		},
		func(ctx context.Context, p *Plan, next int) error {
			checked = append(checked, next)
			if next == 2 {
				return Stale("epoch is 8, the plan was built at 7: build a new plan")
			}
			return nil
		})
	err := s.ex.Run(context.Background(), testPlan(t))

	var ge *GuardError
	if !errors.Is(err, ErrStalePlan) || !errors.As(err, &ge) || ge.Index != 2 {
		t.Fatalf("err = %v, want ErrStalePlan before step 3", err)
	}
	if !strings.Contains(err.Error(), "stopped before step 3/4: plan check: plan is stale: epoch is 8, the plan was built at 7: build a new plan") {
		t.Errorf("err = %v", err)
	}
	if !reflect.DeepEqual(checked, []int{0, 1, 2}) {
		t.Errorf("guard checked before steps %v", checked)
	}
	if got := s.w.callLog(); got != "check drain" {
		t.Errorf("calls = %q", got)
	}
	if st := s.state(t); st.Outcome != OutcomeStale || st.Next != 2 || st.Rerun {
		t.Errorf("journal state = %+v", st)
	}
}

func TestGuardTimeout(t *testing.T) {
	s := newSetup(t)
	s.ex.GuardTimeout = 20 * time.Millisecond
	s.ex.Guard = func(ctx context.Context, p *Plan, next int) error {
		<-ctx.Done() // a cluster that does not answer
		return ctx.Err()
	}
	err := s.ex.Run(context.Background(), testPlan(t))
	if !errors.Is(err, ErrTimeout) || errors.Is(err, ErrStalePlan) || errors.Is(err, ErrCancelled) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if s.w.callLog() != "" {
		t.Errorf("steps ran: %s", s.w.callLog())
	}
}

func TestRequiredHookFailureHalts(t *testing.T) {
	storeDown := errors.New("run-progress store: NOT_COORDINATOR")
	cases := []struct {
		name      string
		failOn    EventType
		wantCalls string
		wantNext  int
	}{
		{"before the first step", EventStepStarted, "", 0},
		{"after a step", EventStepDone, "check", 0},
		{"on progress", EventStepProgress, "check", 2}, // drain is not logged here
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSetup(t)
			s.ex.Registry.actions["drain"] = ActionFunc(func(ctx context.Context, step Step, rc *RunContext) (Result, error) {
				rc.Progress("half way", 0.5)
				return NewResult("", map[string]int{"drained": 1})
			})
			var store atomic.Int32
			s.ex.Hooks = append(s.ex.Hooks, Required(HookFunc(func(ctx context.Context, e Event) error {
				store.Add(1)
				if e.Type == c.failOn {
					return storeDown
				}
				return nil
			})))
			err := s.ex.Run(context.Background(), testPlan(t))
			var he *HookError
			if !errors.As(err, &he) || he.Event != c.failOn || !errors.Is(err, storeDown) {
				t.Fatalf("err = %v, want a HookError on %s", err, c.failOn)
			}
			if next, _ := NextStep(err); next != c.wantNext {
				t.Errorf("next = %d, want %d", next, c.wantNext)
			}
			if got := s.w.callLog(); got != c.wantCalls {
				t.Errorf("calls = %q, want %q", got, c.wantCalls)
			}
			if s.rec.last().Outcome != OutcomeHalted {
				t.Errorf("run-done = %+v", s.rec.last())
			}
		})
	}
}

func TestOptionalHookFailureWarns(t *testing.T) {
	s := newSetup(t)
	s.ex.Hooks = append(s.ex.Hooks, HookFunc(func(ctx context.Context, e Event) error {
		return errors.New("tui: program exited")
	}))
	must(t, s.ex.Run(context.Background(), testPlan(t)))
	if len(s.warns) != 10 || !strings.Contains(s.warns[0].Error(), "tui: program exited") {
		t.Errorf("warnings = %v", s.warns)
	}
}

func TestHookTimeout(t *testing.T) {
	s := newSetup(t)
	s.ex.HookTimeout = 20 * time.Millisecond
	s.ex.Hooks = append(s.ex.Hooks, Required(HookFunc(func(ctx context.Context, e Event) error {
		if e.Type != EventStepStarted {
			return nil
		}
		<-ctx.Done() // a store that does not answer
		return ctx.Err()
	})))
	err := s.ex.Run(context.Background(), testPlan(t))
	if !errors.Is(err, ErrTimeout) || s.w.callLog() != "" {
		t.Fatalf("err = %v, calls %q", err, s.w.callLog())
	}
}

func TestCallbacks(t *testing.T) {
	s := newSetup(t)
	var got []string
	note := func(what string) func(Event) error {
		return func(e Event) error { got = append(got, fmt.Sprintf("%s %d", what, e.Index)); return nil }
	}
	s.ex.Hooks = []Hook{Callbacks{BeforeStep: note("before"), AfterStep: note("after"), RunDone: note("done")}}
	s.ex.Registry.actions["check"] = ActionFunc(func(ctx context.Context, step Step, rc *RunContext) (Result, error) {
		return Result{}, errors.New("east unreachable")
	})
	s.ex.Hooks = append(s.ex.Hooks, Callbacks{StepFailed: note("failed")})
	err := s.ex.Run(context.Background(), testPlan(t))
	if err == nil {
		t.Fatal("no error")
	}
	if want := []string{"before 0", "failed 0", "done 0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("callbacks = %v, want %v", got, want)
	}
}

func TestUnknownStepRefusedBeforeAnything(t *testing.T) {
	s := newSetup(t)
	p := testPlan(t)
	must(t, p.Add(StepSpec{Name: "frobnicate", Title: "Frobnicate"}))
	err := s.ex.Run(context.Background(), p)
	if err == nil || !strings.Contains(err.Error(), "no action for step 5 (frobnicate)") {
		t.Fatalf("err = %v", err)
	}
	if len(s.rec.events) != 0 || s.w.callLog() != "" {
		t.Errorf("something ran: %v %q", s.rec.trace(), s.w.callLog())
	}
}

func TestPanickingStepFails(t *testing.T) {
	s := newSetup(t)
	s.ex.Registry.actions["check"] = ActionFunc(func(ctx context.Context, step Step, rc *RunContext) (Result, error) {
		var m map[string]int
		m["boom"]++ //nolint:staticcheck // SA5000: the nil-map write is the panic under test
		return Result{}, nil
	})
	err := s.ex.Run(context.Background(), testPlan(t))
	var se *StepError
	if !errors.As(err, &se) || se.Index != 0 || !strings.Contains(err.Error(), "panic: assignment to entry in nil map") {
		t.Fatalf("err = %v", err)
	}
	if st := s.state(t); st.Outcome != OutcomeFailed || !st.Rerun {
		t.Errorf("journal state = %+v", st)
	}
}

func TestRunFromChecksItsStart(t *testing.T) {
	s := newSetup(t)
	if err := s.ex.RunFrom(context.Background(), testPlan(t), Start{From: 5}); err == nil {
		t.Error("started past the end")
	}
	if err := s.ex.RunFrom(context.Background(), testPlan(t), Start{From: 1, Outputs: outputs(2, `{}`)}); err == nil {
		t.Error("accepted outputs of a later step")
	}
	if len(s.rec.events) != 0 {
		t.Errorf("hooks were called: %v", s.rec.trace())
	}
}
