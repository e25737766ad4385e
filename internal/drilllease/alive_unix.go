//go:build unix

package drilllease

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process with pid exists (signal 0 checks
// without signalling; EPERM means it exists under another user).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
