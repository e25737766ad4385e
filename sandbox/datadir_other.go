//go:build !unix

package sandbox

import (
	"fmt"
	"os"
)

// lockDataDir only creates dir: without flock, two sandboxes sharing a data
// directory are not detected on this platform.
func lockDataDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox: create data directory: %w", err)
	}
	return func() {}, nil
}

// lockDir cannot lock on this platform: every sandbox gets the directory.
func lockDir(string) (unlock func(), ok bool, err error) { return func() {}, true, nil }
