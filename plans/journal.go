package plans

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// SyncWriter is where a Journal writes: an *os.File, or a test double.
type SyncWriter interface {
	io.Writer
	Sync() error
}

// Journal is the required hook that records a run in an append-only file of
// JSON lines, one Event per line, synced to disk after every line. Its first
// line is the run-started event with the whole plan; a resumed run appends a
// run-started without the plan (same digest) and carries on. ReadJournal
// reconstructs the run from it.
//
// The journal writes exactly what it is given: whoever builds plans and
// writes Actions keeps secrets out of inputs, params, outputs and errors.
//
// Once a write or sync fails the journal stops accepting records (a later
// write could follow a torn line, and after a failed fsync the kernel may
// have dropped the data): the run halts, and ReadJournal tolerates the torn
// last line.
type Journal struct {
	// ProgressEvery is the least time between two progress records of one
	// step; 0 means 10s, a negative value records no progress.
	ProgressEvery time.Duration

	mu       sync.Mutex
	name     string
	w        SyncWriter
	closer   io.Closer
	digest   string // the plan this journal holds; empty before the first record
	err      error  // sticky
	progStep int
	progAt   time.Time
}

// CreateJournal creates a new journal file (never overwriting one) with
// permissions 0600, and syncs its directory so that the file survives a crash.
func CreateJournal(path string) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create journal: %w", err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		f.Close()
		return nil, fmt.Errorf("create journal %s: %w", path, err)
	}
	j := NewJournal(path, f)
	j.closer = f
	return j, nil
}

// OpenJournal opens an existing journal to resume its run: it reads the
// state, cuts off a torn last line (see JournalState.Warnings), and appends
// from there.
func OpenJournal(path string) (*Journal, *JournalState, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open journal: %w", err)
	}
	st, err := parseJournal(path, data)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open journal: %w", err)
	}
	fail := func(err error) (*Journal, *JournalState, error) {
		f.Close()
		return nil, nil, fmt.Errorf("repair journal %s: %w", path, err)
	}
	if st.validLen < int64(len(data)) {
		if err := f.Truncate(st.validLen); err != nil {
			return fail(err)
		}
	}
	if st.missingNewline {
		if _, err := f.Write([]byte("\n")); err != nil {
			return fail(err)
		}
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	j := NewJournal(path, f)
	j.closer = f
	j.digest = st.Digest
	return j, st, nil
}

// NewJournal returns a journal that writes to w; name identifies it in
// errors. It expects an empty w.
func NewJournal(name string, w SyncWriter) *Journal {
	return &Journal{name: name, w: w, progStep: -1}
}

// Required reports true: a run must not go on without its journal.
func (j *Journal) Required() bool { return true }

// String names the journal for errors.
func (j *Journal) String() string { return "journal " + j.name }

// Path is the name given when the journal was made (the file path).
func (j *Journal) Path() string { return j.name }

// Handle records e and syncs it to disk before returning.
func (j *Journal) Handle(_ context.Context, e Event) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return fmt.Errorf("unusable since an earlier failure: %w", j.err)
	}
	digest := j.digest
	switch {
	case e.Type == EventRunStarted && j.digest == "":
		if e.Plan == nil || e.Digest == "" {
			return errors.New("the first record must carry the plan and its digest")
		}
		digest = e.Digest
	case e.Type == EventRunStarted:
		if e.Digest != j.digest {
			return fmt.Errorf("it records plan %s, not %s", j.digest, e.Digest)
		}
		e.Plan, e.Prior = nil, nil // written once, in the first record
	case j.digest == "":
		return fmt.Errorf("no run started before %s", e.Type)
	case e.Type == EventStepProgress:
		every := j.ProgressEvery
		if every == 0 {
			every = 10 * time.Second
		}
		if every < 0 || (e.Index == j.progStep && e.Time.Sub(j.progAt) < every) {
			return nil
		}
		j.progStep, j.progAt = e.Index, e.Time
	}
	line, err := jsonLine(e)
	if err != nil {
		return err
	}
	if _, err := j.w.Write(line); err != nil {
		j.err = fmt.Errorf("write %s record: %w", e.Type, err)
		return j.err
	}
	if err := j.w.Sync(); err != nil {
		j.err = fmt.Errorf("sync %s record: %w", e.Type, err)
		return j.err
	}
	j.digest = digest
	return nil
}

// Close closes the file of a journal made by CreateJournal or OpenJournal.
func (j *Journal) Close() error {
	if j.closer == nil {
		return nil
	}
	return j.closer.Close()
}

func jsonLine(e Event) ([]byte, error) {
	line, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode %s event: %w", e.Type, err)
	}
	return append(line, '\n'), nil
}
