//go:build unix

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDataDir takes an exclusive lock on dir, so two sandboxes on different
// ports cannot write the same cluster files. The operating system drops the
// lock when the process dies, so a crash never leaves it behind.
func lockDataDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox: create data directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, ".drctl-sandbox.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("sandbox: lock data directory %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("sandbox: data directory %s: %w", dir, ErrDataDirInUse)
		}
		return nil, fmt.Errorf("sandbox: lock data directory %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}

// lockDir takes an exclusive lock on the directory itself (no lock file is
// left behind) and reports false, with no error, when another process or
// sandbox holds it. The lock lasts until unlock or the process's end.
func lockDir(dir string) (unlock func(), ok bool, err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, false, fmt.Errorf("sandbox: lock %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("sandbox: lock %s: %w", dir, err)
	}
	return func() { f.Close() }, true, nil
}
