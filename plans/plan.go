package plans

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// FormatVersion is the version of the plan format this package writes and
// the only one it reads. Bump it for any change that an older reader would
// misread; readers refuse plans of another version instead of guessing.
const FormatVersion = 1

// Plan is an ordered list of steps and what they were built against.
//
// Everything a run needs is in the plan: the executor never consults the
// builder again, so a saved plan runs exactly the steps that were reviewed.
type Plan struct {
	FormatVersion int `json:"format_version"`
	// ID names the run that executes the plan (journal, resume command,
	// cluster-side progress).
	ID string `json:"id"`
	// Kind says what the plan does, e.g. "failover", "reseed".
	Kind      string    `json:"kind"`
	CreatedAt time.Time `json:"created_at"`
	// CreatedBy is the actor who built the plan, as user@host.
	CreatedBy string `json:"created_by,omitempty"`
	// Inputs is what the plan was built against, filled by the builder
	// (e.g. the topology digest and the epoch). Opaque to this package, but
	// part of the digest, and what a Guard compares with the world.
	Inputs json.RawMessage `json:"inputs,omitempty"`
	Steps  []Step          `json:"steps"`
}

// Step is one typed change. Name selects the Action that runs it; Params are
// decoded by that Action; Expect and Intend are the values the step expects
// to find before it runs and intends to leave after it, for people to review
// (and for the Action to check, if it wants).
type Step struct {
	// Index is the step's position in Plan.Steps, from 0. Humans see Index+1.
	Index int `json:"index"`
	// Name is the type of the step, e.g. "fence-active".
	Name string `json:"name"`
	// Title is one line for humans, e.g. "Fence east against writes".
	Title       string          `json:"title"`
	Params      json.RawMessage `json:"params,omitempty"`
	Expect      json.RawMessage `json:"expect,omitempty"`
	Intend      json.RawMessage `json:"intend,omitempty"`
	Destructive bool            `json:"destructive,omitempty"`
	// PointOfNoReturn marks the step from whose start the run can only be
	// finished, not undone (drctl abort refuses from there on). A plan has
	// at most one such step.
	PointOfNoReturn bool `json:"point_of_no_return,omitempty"`
}

// StepSpec is a step before its values are encoded; see Plan.Add.
type StepSpec struct {
	Name, Title            string
	Params, Expect, Intend any // encoded with encoding/json; nil means none
	Destructive            bool
	PointOfNoReturn        bool
}

// New returns an empty plan of the current format, created now by the local
// actor. Builders may overwrite any field.
func New(id, kind string) *Plan {
	return &Plan{
		FormatVersion: FormatVersion,
		ID:            id,
		Kind:          kind,
		CreatedAt:     time.Now().UTC().Truncate(time.Millisecond),
		CreatedBy:     LocalActor(),
	}
}

// SetInputs encodes v as the plan's inputs.
func (p *Plan) SetInputs(v any) error {
	raw, err := encodeValue(v)
	if err != nil {
		return fmt.Errorf("plan inputs: %w", err)
	}
	p.Inputs = raw
	return nil
}

// PointOfNoReturn is the index of the step marked as the plan's point of
// no return, or -1 when no step is.
func (p *Plan) PointOfNoReturn() int {
	for i, s := range p.Steps {
		if s.PointOfNoReturn {
			return i
		}
	}
	return -1
}

// DecodeInputs decodes the plan's inputs into v, refusing unknown fields.
func (p *Plan) DecodeInputs(v any) error {
	if err := decodeStrict(p.Inputs, v); err != nil {
		return fmt.Errorf("plan %s inputs: %w", p.ID, err)
	}
	return nil
}

// Add appends a step, encoding its values, and sets its Index.
func (p *Plan) Add(s StepSpec) error {
	if s.PointOfNoReturn && p.PointOfNoReturn() >= 0 {
		return fmt.Errorf("step %d (%s): the plan has a point of no return already (step %d)", len(p.Steps)+1, s.Name, p.PointOfNoReturn()+1)
	}
	step := Step{Index: len(p.Steps), Name: s.Name, Title: s.Title, Destructive: s.Destructive, PointOfNoReturn: s.PointOfNoReturn}
	var err error
	if step.Params, err = encodeValue(s.Params); err != nil {
		return fmt.Errorf("step %d (%s) params: %w", step.Index+1, s.Name, err)
	}
	if step.Expect, err = encodeValue(s.Expect); err != nil {
		return fmt.Errorf("step %d (%s) expect: %w", step.Index+1, s.Name, err)
	}
	if step.Intend, err = encodeValue(s.Intend); err != nil {
		return fmt.Errorf("step %d (%s) intend: %w", step.Index+1, s.Name, err)
	}
	p.Steps = append(p.Steps, step)
	return nil
}

// DecodeParams decodes the step's parameters into v, refusing unknown
// fields: a parameter the Action does not know is a plan it must not run.
func (s Step) DecodeParams(v any) error {
	if err := decodeStrict(s.Params, v); err != nil {
		return fmt.Errorf("step %d (%s) params: %w", s.Index+1, s.Name, err)
	}
	return nil
}

// Validate reports everything that makes the plan unrunnable, joined.
func (p *Plan) Validate() error {
	var errs []error
	if p.FormatVersion != FormatVersion {
		errs = append(errs, fmt.Errorf("format version %d, this drctl reads %d", p.FormatVersion, FormatVersion))
	}
	if p.ID == "" {
		errs = append(errs, errors.New("no id"))
	}
	if p.Kind == "" {
		errs = append(errs, errors.New("no kind"))
	}
	if !validRaw(p.Inputs) {
		errs = append(errs, errors.New("inputs are not valid JSON"))
	}
	for i, s := range p.Steps {
		if s.Index != i {
			errs = append(errs, fmt.Errorf("step %d has index %d, want %d", i+1, s.Index, i))
		}
		if s.Name == "" {
			errs = append(errs, fmt.Errorf("step %d has no name", i+1))
		}
		if s.Title == "" {
			errs = append(errs, fmt.Errorf("step %d (%s) has no title", i+1, s.Name))
		}
		if s.PointOfNoReturn && p.PointOfNoReturn() != i {
			errs = append(errs, fmt.Errorf("step %d (%s) is a second point of no return (step %d is the first)", i+1, s.Name, p.PointOfNoReturn()+1))
		}
		for _, f := range []struct {
			what string
			raw  json.RawMessage
		}{{"params", s.Params}, {"expect", s.Expect}, {"intend", s.Intend}} {
			if !validRaw(f.raw) {
				errs = append(errs, fmt.Errorf("step %d (%s) %s are not valid JSON", i+1, s.Name, f.what))
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("invalid plan %q: %w", p.ID, errors.Join(errs...))
}

// Encode returns the plan as indented JSON ending in a newline.
func (p *Plan) Encode() ([]byte, error) {
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode plan %s: %w", p.ID, err)
	}
	return append(data, '\n'), nil
}

// ParsePlan decodes and validates a plan. It refuses another format version,
// unknown fields and trailing data rather than run a plan it may misread.
func ParsePlan(data []byte) (*Plan, error) {
	var head struct {
		FormatVersion *int `json:"format_version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("not a plan: %w", err)
	}
	if head.FormatVersion == nil {
		return nil, errors.New("not a plan: no format_version")
	}
	if *head.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("plan format %d is not supported: this drctl reads format %d (use the drctl that made the plan, or build a new plan)", *head.FormatVersion, FormatVersion)
	}
	var p Plan
	if err := decodeStrict(data, &p); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// LoadPlan reads and parses a plan file.
func LoadPlan(path string) (*Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := ParsePlan(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// SavePlan writes a valid plan to path atomically: a reader sees the old file
// or the whole new one, also after a crash.
func SavePlan(path string, p *Plan) error {
	if err := p.Validate(); err != nil {
		return err
	}
	data, err := p.Encode()
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("save plan: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("save plan %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("save plan %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save plan %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("save plan %s: %w", path, err)
	}
	return syncDir(dir)
}

func encodeValue(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	if raw, ok := v.(json.RawMessage); ok {
		if !validRaw(raw) {
			return nil, errors.New("not valid JSON")
		}
		return raw, nil
	}
	return json.Marshal(v)
}

func decodeStrict(raw []byte, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("null")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if err := dec.Decode(&struct{}{}); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func validRaw(raw json.RawMessage) bool {
	return len(raw) == 0 || json.Valid(raw)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
