//go:build race

package verify_test

// The race detector multiplies a process's memory several times over:
// TestVerifyMemory's bound does not hold under it.
func init() { raceDetector = true }
