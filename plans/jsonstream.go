package plans

import (
	"context"
	"io"
	"sync"
)

// JSONStream is the hook behind `-o json`: one Event per line, as JSON.
type JSONStream struct {
	mu sync.Mutex
	w  io.Writer
}

// NewJSONStream returns a JSONStream writing to w.
func NewJSONStream(w io.Writer) *JSONStream { return &JSONStream{w: w} }

// Handle writes e as one line.
func (s *JSONStream) Handle(_ context.Context, e Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	line, err := jsonLine(e)
	if err != nil {
		return err
	}
	_, err = s.w.Write(line)
	return err
}
