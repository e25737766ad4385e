package sandbox

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/mirror"
	"github.com/drctl/drctl/topology"
)

// startMirror runs the mirror daemon in-process, as `drctl mirror run`
// would, until stop is called. It follows the live roles, so after a
// failover it mirrors the other way.
func (s *Sandbox) startMirror() {
	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(slog.NewTextHandler(s.log.writer(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	d := mirror.NewDaemon(s.Topology, mirror.DaemonOptions{
		Listen:    s.opts.MirrorListen,
		StatePoll: 2 * time.Second,
		Engine:    mirror.Options{Shards: 4, Logger: log, TopicSyncInterval: 2 * time.Second},
		Started:   func(addr string) { s.mirrorAddr = addr },
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := d.Run(ctx); err != nil {
			s.log.printf("mirror stopped: %v", err)
		}
	}()
	s.stopMirror = func() {
		cancel()
		<-done
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
		clients := map[string]sarama.Client{}
		for name, c := range topo.Clusters {
			if cl, err := kafkaconn.Dial(ctx, c, nil); err == nil {
				clients[name] = cl
				defer cl.Close()
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(clients) == 0 {
			return last
		}
		v := rolestate.Resolve(ctx, topo, clients)
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
