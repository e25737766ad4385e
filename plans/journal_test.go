package plans

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// journalAfterFailure returns the path of a journal whose run failed at
// step 3 (fence), and the world that ran it (which lets fence pass next time).
func journalAfterFailure(t *testing.T) (path string, w *world) {
	t.Helper()
	s := newSetup(t)
	s.w.before = func(ctx context.Context, step Step, rc *RunContext) error {
		if step.Name == "fence" && !rc.Rerun {
			return errors.New("broker down")
		}
		return nil
	}
	if err := s.ex.Run(context.Background(), testPlan(t)); err == nil {
		t.Fatal("the run did not fail")
	}
	return s.path, s.w
}

func TestTornLastLineIsTolerated(t *testing.T) {
	cases := []struct{ name, tail string }{
		{"half a record", `{"v":1,"type":"step-star`},
		{"half a record and a newline", `{"v":1,"type":"step-star` + "\n"},
		{"zeros from a crash before the data reached the disk", "\x00\x00\x00\x00"},
		{"an empty line", "\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, w := journalAfterFailure(t)
			clean, err := ReadJournal(path)
			must(t, err)
			appendTo(t, path, c.tail)

			st, err := ReadJournal(path)
			must(t, err)
			if len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], "is torn") {
				t.Fatalf("warnings = %q", st.Warnings)
			}
			if st.Next != clean.Next || st.Rerun != clean.Rerun || st.Outcome != clean.Outcome || len(st.Outputs) != len(clean.Outputs) {
				t.Errorf("state with a torn line %+v, without %+v", st, clean)
			}

			// Opening it to resume cuts the torn line off, and the resumed
			// run leaves a clean journal.
			j, st, err := OpenJournal(path)
			must(t, err)
			defer j.Close()
			ex := &Executor{Registry: w.registry(t), Hooks: []Hook{j}}
			must(t, ex.Resume(context.Background(), st))
			after, err := ReadJournal(path)
			must(t, err)
			if !after.Finished || len(after.Warnings) != 0 {
				t.Errorf("after resume: finished %v, warnings %q", after.Finished, after.Warnings)
			}
		})
	}
}

func TestLastRecordWithoutNewline(t *testing.T) {
	path, w := journalAfterFailure(t)
	data := readFile(t, path)
	must(t, os.WriteFile(path, []byte(strings.TrimSuffix(data, "\n")), 0o600))
	st, err := ReadJournal(path)
	must(t, err)
	if len(st.Warnings) != 0 || st.Outcome != OutcomeFailed {
		t.Fatalf("state = %+v", st)
	}
	j, st, err := OpenJournal(path)
	must(t, err)
	defer j.Close()
	ex := &Executor{Registry: w.registry(t), Hooks: []Hook{j}}
	must(t, ex.Resume(context.Background(), st))
	if after, err := ReadJournal(path); err != nil || !after.Finished {
		t.Fatalf("after resume: %+v, %v", after, err)
	}
}

func TestCorruptMiddleLineIsAnError(t *testing.T) {
	path, _ := journalAfterFailure(t)
	lines := strings.SplitAfter(readFile(t, path), "\n")
	lines[2] = `{"v":1,"type":"step-do` + "\n"
	must(t, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600))
	_, err := ReadJournal(path)
	if err == nil || !strings.Contains(err.Error(), "line 3 is corrupt") || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v", err)
	}
	if _, _, err := OpenJournal(path); err == nil {
		t.Fatal("OpenJournal accepted a corrupt journal")
	}
}

func TestReadJournalRejects(t *testing.T) {
	cases := []struct {
		name string
		edit func(lines []string) []string
		want string
	}{
		{"empty", func([]string) []string { return nil }, "holds no plan"},
		{"no plan first", func(l []string) []string { return l[1:] }, "the first record is step-started without a plan"},
		{"plan altered", func(l []string) []string {
			l[0] = strings.Replace(l[0], "Fence east against writes", "Fence west", 1)
			return l
		}, "the journal was altered"},
		{"newer record version", func(l []string) []string {
			l[1] = strings.Replace(l[1], `{"v":1,`, `{"v":9,`, 1)
			return l
		}, "record version 9 is newer"},
		{"step out of range", func(l []string) []string {
			l[1] = strings.Replace(l[1], `"index":0,`, `"index":7,`, 1)
			return l
		}, "step-started for step 8, the plan has 4 steps"},
		{"another plan's run", func(l []string) []string {
			l = append(slices.Clip(l), strings.Replace(l[0], `"digest":"sha256:`, `"digest":"sha256:0`, 1))
			return append(l, l[1])
		}, "run-started for plan sha256:0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, _ := journalAfterFailure(t)
			lines := strings.SplitAfter(strings.TrimSuffix(readFile(t, path), "\n"), "\n")
			for i := range lines {
				lines[i] = strings.TrimSuffix(lines[i], "\n")
			}
			edited := c.edit(lines)
			data := strings.Join(edited, "\n")
			if len(edited) > 0 {
				data += "\n"
			}
			must(t, os.WriteFile(path, []byte(data), 0o600))
			_, err := ReadJournal(path)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestJournalRefusesAnotherPlan(t *testing.T) {
	path, w := journalAfterFailure(t)
	j, _, err := OpenJournal(path)
	must(t, err)
	defer j.Close()
	other := testPlan(t)
	other.Kind = "failback"
	ex := &Executor{Registry: w.registry(t), Hooks: []Hook{j}}
	err = ex.Run(context.Background(), other)
	var he *HookError
	if !errors.As(err, &he) || he.Event != EventRunStarted || !strings.Contains(err.Error(), "run not started") {
		t.Fatalf("err = %v", err)
	}
	if got := w.callLog(); got != "check drain fence" {
		t.Errorf("calls = %q", got)
	}
}

func TestJournalPlanOnlyInTheFirstRecord(t *testing.T) {
	path, w := journalAfterFailure(t)
	j, st, err := OpenJournal(path)
	must(t, err)
	ex := &Executor{Registry: w.registry(t), Hooks: []Hook{j}}
	must(t, ex.Resume(context.Background(), st))
	j.Close()
	if n := strings.Count(readFile(t, path), `"plan":{`); n != 1 {
		t.Errorf("the plan is in %d records, want 1", n)
	}
}

// A run resumed on another machine starts a new journal from the
// cluster-side state: the first record carries the outputs it was given, so
// the new journal is complete on its own.
func TestNewJournalForAResumedRun(t *testing.T) {
	w := &world{}
	path := filepath.Join(t.TempDir(), "r1.jsonl")
	j, err := CreateJournal(path)
	must(t, err)
	defer j.Close()
	ex := &Executor{Registry: w.registry(t), Hooks: []Hook{j}}
	start := Start{From: 3, Outputs: outputs(1, `{"drained":5}`, 2, `{"acls":["a"]}`)}
	must(t, ex.RunFrom(context.Background(), testPlan(t), start))
	if w.flipSaw != "drained=5 acls=a" || w.callLog() != "flip" {
		t.Errorf("flip saw %q, calls %q", w.flipSaw, w.callLog())
	}
	st, err := ReadJournal(path)
	must(t, err)
	if !st.Finished || string(st.Outputs[2]) != `{"acls":["a"]}` {
		t.Errorf("state = %+v", st)
	}
}

func TestCreateJournalRefusesAnExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r1.jsonl")
	must(t, os.WriteFile(path, []byte("keep me\n"), 0o600))
	if _, err := CreateJournal(path); !errors.Is(err, os.ErrExist) {
		t.Fatalf("err = %v", err)
	}
	if readFile(t, path) != "keep me\n" {
		t.Fatal("the existing file was changed")
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	defer f.Close()
	_, err = f.WriteString(s)
	must(t, err)
}
