package topology

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// MaxFileSize bounds a topology file. A real topology is a few KiB; the cap
// keeps a wrong -c (a log, a dump, /dev/zero) from being read into memory:
// parsing YAML into nodes costs about a hundred times the file's size.
const MaxFileSize = 1 << 20

// MaxListItems bounds every list of the file. Each pattern of a selection
// is compiled and kept, and matched against every topic and group name.
const MaxListItems = 10000

// MaxPatternBytes bounds the text of one selection's patterns (include and
// exclude together). Compiling a regular expression costs up to about a
// thousand times its length in memory.
const MaxPatternBytes = 32 << 10

// tooLarge is the error for a file over MaxFileSize; size < 0 means the
// size is unknown (a pipe or a device that kept on giving bytes).
func tooLarge(path string, size int64) error {
	what := "more than 1 MiB"
	if size >= 0 {
		what = fmt.Sprintf("%.1f MiB", float64(size)/(1<<20))
	}
	return &Error{File: path, Msg: fmt.Sprintf("the file is %s; a topology file may be at most 1 MiB (a topology is a few KiB): check that -c or DRCTL_CONFIG names the topology YAML", what)}
}

// readFile reads a topology file of at most MaxFileSize bytes, refusing a
// larger one before reading it, and returns its permission bits.
func readFile(path string) ([]byte, fs.FileMode, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("read topology: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("read topology: %w", err)
	}
	if st.Mode().IsRegular() && st.Size() > MaxFileSize {
		return nil, 0, tooLarge(path, st.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, 0, fmt.Errorf("read topology: %w", err)
	}
	if len(data) > MaxFileSize {
		return nil, 0, tooLarge(path, -1)
	}
	return data, st.Mode().Perm(), nil
}

// maxPasswordFile bounds a sasl.password_file: it holds one password.
const maxPasswordFile = 64 << 10

// errTooLarge is readSmall's error for a file over its limit.
var errTooLarge = errors.New("it holds more than 64 KiB; the file must hold only the password")

// readSmall reads a file of at most limit bytes (a device or a pipe that
// keeps giving bytes is cut off at the limit and refused).
func readSmall(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, errTooLarge
	}
	return data, nil
}
