package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
)

// TestAbortExitCodes: an abort refused past the point of no return, or
// with no run in progress, read both clusters to know it: exit 1, not
// exit 2 ("bad input, nothing contacted"); an edited plan is bad input.
func TestAbortExitCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
	}{
		{fmt.Errorf("%w: run failover-x has started step 5/14 (flip-roles)", failover.ErrPastPointOfNoReturn), exitFailure},
		{fmt.Errorf("%w (epoch 0)", failover.ErrNothingToAbort), exitFailure},
		{fmt.Errorf("%w: step 11 wipe", failover.ErrPlanChanged), exitBadInput},
	} {
		ee, ok := errors.AsType[*exitError](abortError(c.err))
		if !ok || ee.code != c.code {
			t.Errorf("abort error %q: exit %v, want %d", c.err, ee, c.code)
		}
	}
}

// TestAbortWithNothingInProgress: drctl abort on clusters with no run says
// there is nothing to abort (not "nothing to resume") and exits 1.
func TestAbortWithNothingInProgress(t *testing.T) {
	p := kfaketest.NewPair(t, kfaketest.Options{})
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	_, stderr, code := drctl(t, "-c", p.Path, "abort", "--yes")
	if code != exitFailure || !strings.Contains(stderr, "nothing to abort") || strings.Contains(stderr, "resume") {
		t.Errorf("drctl abort with no run: exit %d, stderr %q; want exit 1 saying there is nothing to abort", code, stderr)
	}
}
