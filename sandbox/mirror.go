package sandbox

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/mirror"
	"github.com/drctl/drctl/topology"
	"github.com/drctl/drctl/verify"
)

// mirrorStartTimeout bounds the wait for the mirror's listener.
const mirrorStartTimeout = 10 * time.Second

// drillMetricsEvery is how often the sandbox's drill gauges are read from
// the drill records: its canary runs every minute.
const drillMetricsEvery = 15 * time.Second

// startMirror runs the mirror daemon in-process, as `drctl mirror run`
// would, until stopMirror is called. It follows the live roles, so after a
// failover it mirrors the other way. It returns once the daemon serves
// /metrics (s.mirrorAddr is then the bound address), so the instructions
// can print it; a listener that cannot bind is an error.
func (s *Sandbox) startMirror() error {
	ctx, cancel := context.WithCancel(context.Background())
	bound := make(chan string, 1)
	// The drill gauges (drctl_drill_*) on the mirror's /metrics, as drctl
	// mirror run exports them: the sandbox's scheduler serves none.
	var (
		drills *drill.Metrics
		proofs *verify.Metrics
	)
	d := mirror.NewDaemon(s.Topology, mirror.DaemonOptions{
		Listen:  s.opts.MirrorListen,
		Engine:  mirror.Options{Shards: 4, Logger: s.log.mirrorLogger(), TopicSyncInterval: 2 * time.Second},
		Started: func(addr string) { bound <- addr },
		Register: func(reg prometheus.Registerer) {
			drills, proofs = drill.NewMetrics(reg), verify.NewMetrics(reg)
		},
		// The verifier beside the link, as drctl mirror run runs it, through
		// a session of its own.
		Beside: func(ctx context.Context, link topology.Link, leads func() bool) {
			if s.Topology.Mirror.Verify.Mode == topology.VerifyOff {
				return
			}
			clusters := kafkaconn.Open(ctx, s.Topology, link.Source, link.Target)
			defer clusters.Close()
			_ = verify.Follow(ctx, clusters, link, verify.FollowOptions{Verify: s.Topology.Mirror.Verify, Metrics: proofs, Leads: leads, Logger: s.log.mirrorLogger()})
		},
	})
	if drills != nil {
		go drill.WatchMetrics(ctx, s.Topology, drills, drillMetricsEvery, nil)
	}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var stopped sync.Once
	s.stopMirror = func() {
		stopped.Do(func() {
			cancel()
			if err := <-done; err != nil {
				s.log.printf("mirror stopped: %v", err)
			}
		})
	}
	if s.opts.MirrorListen == "" {
		return nil
	}
	select {
	case s.mirrorAddr = <-bound:
		return nil
	case err := <-done:
		cancel()
		s.stopMirror = func() {}
		return fmt.Errorf("sandbox: the mirror cannot serve /metrics on %s (another sandbox or drctl mirror run may use it): "+
			"pick a free address with --mirror-listen, or \"\" for none: %w", s.opts.MirrorListen, err)
	case <-time.After(mirrorStartTimeout):
		s.stopMirror()
		return fmt.Errorf("sandbox: the mirror did not start serving on %s within %s", s.opts.MirrorListen, mirrorStartTimeout)
	}
}

// liveActive returns an ActiveFn that names the live active cluster, read
// from the role state in the clusters (the higher epoch wins), or "" (the
// traffic pauses) while a failover moves the roles. On a transient error it
// keeps the last answer.
func liveActive(topo *topology.Topology) func(context.Context) string {
	var mu sync.Mutex
	last := topo.Active
	return func(ctx context.Context) string {
		clusters := kafkaconn.Open(ctx, topo)
		defer clusters.Close()
		v, err := rolestate.ResolveLive(ctx, clusters)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			return last
		}
		switch v.Current.Phase {
		case rolestate.PhaseFailingOver, rolestate.PhaseFailingBack, rolestate.PhaseWiping:
			// A failover is moving the roles and the group positions: the
			// demo application stops, as an operator would stop it.
			return ""
		}
		if v.Current.Active != "" {
			last = v.Current.Active
		}
		return last
	}
}
