package plans

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Digest identifies what the plan does and what it was built against:
// "sha256:" and the hex SHA-256 of the canonical JSON of FormatVersion, Kind,
// Inputs and Steps.
//
// ID, CreatedAt and CreatedBy are left out on purpose: they say who built the
// plan and which run executes it, not what it does. Two builds of the same
// change against the same inputs have the same digest, so a front-end can
// rebuild a plan after confirmation and refuse if the digest moved.
//
// Canonical JSON here means: objects with keys sorted, no insignificant
// white space, numbers kept as written, HTML characters not escaped, and an
// absent value and JSON null treated alike for the plan's own optional
// fields. Re-indenting a saved plan does not change its digest.
func (p *Plan) Digest() (string, error) {
	view := struct {
		FormatVersion int             `json:"format_version"`
		Kind          string          `json:"kind"`
		Inputs        json.RawMessage `json:"inputs,omitempty"`
		Steps         []Step          `json:"steps"`
	}{p.FormatVersion, p.Kind, nonNull(p.Inputs), make([]Step, len(p.Steps))}
	for i, s := range p.Steps {
		s.Params, s.Expect, s.Intend = nonNull(s.Params), nonNull(s.Expect), nonNull(s.Intend)
		view.Steps[i] = s
	}
	raw, err := json.Marshal(view)
	if err != nil {
		return "", fmt.Errorf("digest plan %s: %w", p.ID, err)
	}
	canon, err := canonicalJSON(raw)
	if err != nil {
		return "", fmt.Errorf("digest plan %s: %w", p.ID, err)
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

func canonicalJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // maps are encoded with sorted keys
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func nonNull(raw json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil
	}
	return raw
}
