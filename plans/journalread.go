package plans

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// JournalState is a run as its journal tells it.
type JournalState struct {
	Path   string
	Plan   *Plan
	Digest string
	// Done[i] says step i completed (or was skipped by a run that started
	// after it).
	Done []bool
	// Outputs of completed steps, by index.
	Outputs map[int]json.RawMessage
	// Summaries of completed steps (their step-done line), by index.
	Summaries map[int]string
	// LastCompleted is the highest completed step, -1 if none.
	LastCompleted int
	// Next is the first step not done: where a resume starts. len(Plan.Steps)
	// when all are done.
	Next int
	// Rerun says step Next was started and never recorded done: the run was
	// killed, failed or was cancelled while it ran. A resume runs it again.
	Rerun bool
	// Outcome is the last run-done's outcome; empty when the last run never
	// wrote one (it was killed) or when no run has ended yet.
	Outcome Outcome
	// LastError is the error of the last failed step or stopped run.
	LastError string
	// Finished says the run completed every step; EndedAt is when its last
	// run ended (the last run-done; zero when none wrote one).
	Finished bool
	EndedAt  time.Time
	// Actor is who ran the plan last.
	Actor string
	// Warnings are problems that were tolerated: a torn last line.
	Warnings []string

	validLen       int64 // bytes up to the end of the last good record
	missingNewline bool  // the last good record lacks its newline
	started        []bool
}

// Start is where Executor.RunFrom continues this run.
func (s *JournalState) Start() Start {
	prior := make(map[int]json.RawMessage)
	for i, raw := range s.Outputs {
		if i < s.Next {
			prior[i] = raw
		}
	}
	return Start{From: s.Next, Outputs: prior, Rerun: s.Rerun}
}

// ReadJournal reconstructs a run from its journal. A torn last line (a crash
// while writing it) is ignored with a warning in Warnings; any other line
// that does not parse is an error naming the line, since the records after
// it cannot be trusted.
func ReadJournal(path string) (*JournalState, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	return parseJournal(path, data)
}

func parseJournal(name string, data []byte) (*JournalState, error) {
	st := &JournalState{Path: name, Outputs: map[int]json.RawMessage{}, Summaries: map[int]string{}, LastCompleted: -1}
	off, line := 0, 0
	for off < len(data) {
		line++
		end := len(data)
		next := len(data)
		complete := false
		if nl := bytes.IndexByte(data[off:], '\n'); nl >= 0 {
			end, next, complete = off+nl, off+nl+1, true
		}
		var ev Event
		err := json.Unmarshal(data[off:end], &ev)
		if err == nil && ev.Type == "" {
			err = errors.New("no event type")
		}
		if err != nil {
			if next == len(data) {
				st.Warnings = append(st.Warnings, fmt.Sprintf("journal %s: line %d is torn (a crash while writing it?) and was ignored: %v", name, line, err))
				break
			}
			return nil, fmt.Errorf("journal %s: line %d is corrupt: %v (only a torn last line is tolerated)", name, line, err)
		}
		if err := st.apply(ev); err != nil {
			return nil, fmt.Errorf("journal %s: line %d: %w", name, line, err)
		}
		off = next
		st.validLen = int64(next)
		st.missingNewline = !complete
	}
	if st.Plan == nil {
		return nil, fmt.Errorf("journal %s holds no plan: the run never started", name)
	}
	st.Next = len(st.Done)
	for i, done := range st.Done {
		if done {
			st.LastCompleted = i
		} else if st.Next == len(st.Done) {
			st.Next = i
		}
	}
	st.Rerun = st.Next < len(st.Done) && st.started[st.Next]
	st.Finished = st.Outcome == OutcomeSucceeded && st.Next == len(st.Done)
	return st, nil
}

func (s *JournalState) apply(ev Event) error {
	if ev.Version > EventVersion {
		return fmt.Errorf("record version %d is newer than this drctl reads (%d)", ev.Version, EventVersion)
	}
	if s.Plan == nil {
		if ev.Type != EventRunStarted || ev.Plan == nil {
			return fmt.Errorf("the first record is %s without a plan, want run-started with the plan", ev.Type)
		}
		if err := ev.Plan.Validate(); err != nil {
			return err
		}
		d, err := ev.Plan.Digest()
		if err != nil {
			return err
		}
		if d != ev.Digest {
			return fmt.Errorf("the plan's digest is %s, the record says %s: the journal was altered", d, ev.Digest)
		}
		s.Plan, s.Digest = ev.Plan, d
		s.Done = make([]bool, len(ev.Plan.Steps))
		s.started = make([]bool, len(ev.Plan.Steps))
		for i, raw := range ev.Prior {
			if i < 0 || i >= ev.Index {
				return fmt.Errorf("prior outputs for step %d, which is not before step %d", i+1, ev.Index+1)
			}
			s.Outputs[i] = raw
		}
	}
	n := len(s.Done)
	if ev.Index < 0 || ev.Index > n || (ev.Index == n && ev.Type != EventRunStarted && ev.Type != EventRunDone) {
		return fmt.Errorf("%s for step %d, the plan has %d steps", ev.Type, ev.Index+1, n)
	}
	if ev.Actor != "" {
		s.Actor = ev.Actor
	}
	switch ev.Type {
	case EventRunStarted:
		if ev.Digest != s.Digest {
			return fmt.Errorf("run-started for plan %s in the journal of plan %s", ev.Digest, s.Digest)
		}
		for i := 0; i < ev.Index; i++ {
			s.Done[i] = true
		}
		s.Outcome, s.LastError = "", ""
	case EventStepStarted:
		s.started[ev.Index] = true
		s.Done[ev.Index] = false
		delete(s.Outputs, ev.Index)
		delete(s.Summaries, ev.Index)
	case EventStepDone:
		s.Done[ev.Index] = true
		s.started[ev.Index] = false
		if nonNull(ev.Outputs) != nil {
			s.Outputs[ev.Index] = ev.Outputs
		}
		if ev.Summary != "" {
			s.Summaries[ev.Index] = ev.Summary
		}
	case EventStepFailed:
		s.LastError = ev.Error
	case EventRunDone:
		s.Outcome, s.EndedAt = ev.Outcome, ev.Time
		if ev.Error != "" {
			s.LastError = ev.Error
		}
	}
	// step-progress and types from a newer minor schema change nothing.
	return nil
}
