package plans

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The child process of TestResumeAfterKillMidStep: it runs testPlan with a
// journal and, inside step 3 (fence), says so and waits to be killed.
func TestCrashChild(t *testing.T) {
	path := os.Getenv("PLANS_CRASH_JOURNAL")
	if path == "" {
		t.Skip("the child of TestResumeAfterKillMidStep")
	}
	w := &world{}
	w.before = func(ctx context.Context, step Step, rc *RunContext) error {
		if step.Name == "fence" {
			fmt.Println("IN-STEP fence")
			select {} // SIGKILL comes here
		}
		return nil
	}
	j, err := CreateJournal(path)
	must(t, err)
	ex := &Executor{Registry: w.registry(t), Hooks: []Hook{j}, Actor: "alice@ops-1"}
	t.Fatalf("the run ended: %v", ex.Run(context.Background(), testPlan(t)))
}

// Kill -9 drctl in the middle of a step, then resume in another process:
// the interrupted step runs again, then the rest, and the later steps see the
// outputs the killed process produced.
func TestResumeAfterKillMidStep(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r1.jsonl")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "PLANS_CRASH_JOURNAL="+path)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	cmd.Stderr = os.Stderr
	must(t, cmd.Start())
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	// Safety net only: kill the child if it never reaches the step.
	timer := time.AfterFunc(20*time.Second, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	sc := bufio.NewScanner(stdout)
	reached := false
	for sc.Scan() {
		if strings.Contains(sc.Text(), "IN-STEP fence") {
			reached = true
			break
		}
	}
	if !reached {
		t.Fatal("the child never reached the fence step")
	}
	must(t, cmd.Process.Kill()) // SIGKILL: no deferred code, no last record
	_ = cmd.Wait()              // killed: the exit status says so
	killed = true

	// The crash also tore a record that was being written.
	appendTo(t, path, `{"v":1,"type":"step-prog`)

	j, st, err := OpenJournal(path)
	must(t, err)
	defer j.Close()
	if st.Next != 2 || !st.Rerun || st.Outcome != "" || st.Finished || len(st.Warnings) != 1 {
		t.Fatalf("state after the kill = %+v", st)
	}
	if string(st.Outputs[1]) != `{"drained":1200}` {
		t.Fatalf("outputs of step 2 = %s", st.Outputs[1])
	}

	w := &world{}
	w.before = func(ctx context.Context, step Step, rc *RunContext) error {
		if step.Name == "drain" {
			return fmt.Errorf("drain ran again after it was journaled as done")
		}
		return nil
	}
	var human strings.Builder
	ex := &Executor{Registry: w.registry(t), Hooks: []Hook{j, NewPrinter(&human)}, Actor: "bob@ops-2"}
	must(t, ex.Resume(context.Background(), st))

	if got := w.callLog(); got != "fence(again) flip" {
		t.Errorf("calls after resume = %q, want the killed step again, then the rest", got)
	}
	if w.flipSaw != "drained=1200 acls=deny-write-orders" {
		t.Errorf("flip saw %q", w.flipSaw)
	}
	if !strings.Contains(human.String(), "resuming at step 3") || !strings.Contains(human.String(), "[3/4] Fence east against writes (again) ... done") {
		t.Errorf("human output:\n%s", human.String())
	}
	end, err := ReadJournal(path)
	must(t, err)
	if !end.Finished || end.Actor != "bob@ops-2" || len(end.Warnings) != 0 {
		t.Errorf("final state = %+v", end)
	}
}
