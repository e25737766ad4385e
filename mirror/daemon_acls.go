package mirror

import (
	"context"
	"time"

	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/mirror/aclsync"
)

// aclRunner is the ACL sync loop (package aclsync) the daemon runs beside
// the link: only while the roles are steady, for the link's direction and
// epoch. It has its own lifetime: a link that restarts does not restart
// it, a change of roles does.
type aclRunner struct {
	key    linkKey
	cancel context.CancelFunc
	done   chan struct{}
}

// followACLs starts, moves or stops the ACL sync loop to match st.
func (d *Daemon) followACLs(ctx context.Context, st rolestate.State) {
	want, ok := desired(st, d.topo.Name)
	steady := st.Phase == rolestate.PhaseSteady || st.Phase == ""
	ok = ok && steady && !want.copy && d.topo.Mirror.ACLs.Enabled
	if ok && d.acls.cancel != nil && d.acls.key == want {
		return
	}
	d.stopACLs()
	if !ok {
		return
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	loop := &aclsync.Loop{Topo: d.topo, Source: want.link.Source, Target: want.link.Target, Epoch: want.epoch, Log: d.log}
	go func() {
		defer close(done)
		_ = loop.Run(runCtx)
	}()
	d.acls = aclRunner{key: want, cancel: cancel, done: done}
}

// stopACLs cancels the running loop without waiting for it: a round in
// flight may hold a Kafka request for many seconds, and the daemon must
// start the next link at once. A loop of an old direction cannot change
// anything after the roles moved (each change is preceded by a role
// check), so two loops overlapping briefly is harmless. Only when the
// daemon itself stops does it wait, for at most stopACLsWait.
func (d *Daemon) stopACLs() {
	if d.acls.cancel == nil {
		return
	}
	d.acls.cancel()
	d.acls = aclRunner{}
}

// stopACLsWait bounds how long the daemon's exit waits for the ACL loop.
const stopACLsWait = 5 * time.Second

func (d *Daemon) stopACLsAndWait() {
	done := d.acls.done
	d.stopACLs()
	if done == nil {
		return
	}
	select {
	case <-done:
	case <-time.After(stopACLsWait):
	}
}
