package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/drctl/drctl/internal/aclfence"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

// DefaultListen is the default address of the daemon's /metrics, /healthz
// and /readyz. Port 7483 is not in Prometheus' exporter port list (whose
// 9100-9999 range is full) nor a well-known default of another tool; 9464,
// used before, is the OpenTelemetry Prometheus exporter's.
const DefaultListen = "127.0.0.1:7483"

// DaemonOptions tune `drctl mirror run`.
type DaemonOptions struct {
	// Listen is the address of /metrics, /healthz and /readyz ("" = none).
	Listen string
	// StatePoll is how often the live roles are read (1s); transitionPoll
	// while they move. A failover's first steps take about a second, so a
	// daemon that reads the roles less often than that starts the reseed's
	// link late: it learns of the run only at its next read.
	StatePoll time.Duration
	// Engine is the base of every link's engine options; Epoch, Allowed
	// and CopyOwnOrigin are set from the live roles.
	Engine Options
	// Version and Commit label drctl_build_info.
	Version, Commit string
	// Started, if set, receives the bound listen address once serving.
	Started func(addr string)
	// Register, if set, adds collectors to the daemon's /metrics (the
	// drill gauges `drctl mirror run` keeps from the clusters' records).
	Register func(prometheus.Registerer)
	// Beside, if set, runs beside every link the daemon runs, from its
	// start until the link stops (ctx ends then): the front-end's
	// verifier, which checks the engine's work and shares none of its
	// state. leads reports whether this process owns the link's shard 0,
	// so that one process of those sharing a link does the work.
	Beside func(ctx context.Context, link topology.Link, leads func() bool)
}

// Daemon follows the live role state and runs the mirror link it allows:
// active -> standby while the phase is steady, the same link while a
// failover or failback drains it, and, while reseeding, the new active ->
// the stale cluster with loop prevention off (the stale cluster was wiped
// and must get everything back). When the epoch or the direction changes it
// stops the old link before it starts the new one.
type Daemon struct {
	topo *topology.Topology
	opts DaemonOptions
	log  *slog.Logger
	reg  *prometheus.Registry

	mu      sync.Mutex
	current *Engine
	key     linkKey
	// pauses are the pause records last read (see linkstate.Pause).
	pauses []linkstate.Pause

	// beside runs DaemonOptions.Beside for the current link.
	beside sync.WaitGroup

	acls aclRunner // touched by Run's goroutine only
	// roles is the session the role reads go through (Run's goroutine
	// only). It is kept from one poll to the next while every cluster
	// answers: a new session costs each cluster a connection and its
	// handshakes every poll, about 7 round trips across a WAN.
	roles *kafkaconn.Clusters
	// seenEpoch is the highest role-state epoch this process has read
	// (Run's goroutine only): the state never legitimately goes below it.
	seenEpoch int64
}

type linkKey struct {
	link  topology.Link
	epoch int64
	copy  bool
}

// NewDaemon prepares a daemon for topo.
func NewDaemon(topo *topology.Topology, opts DaemonOptions) *Daemon {
	if opts.StatePoll <= 0 {
		opts.StatePoll = time.Second
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		NewBuildInfo(opts.Version, opts.Commit))
	if opts.Engine.Metrics == nil {
		opts.Engine.Metrics = NewMetrics(reg)
	}
	log := opts.Engine.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
		opts.Engine.Logger = log
	}
	d := &Daemon{topo: topo, opts: opts, log: log, reg: reg}
	if opts.Register != nil {
		opts.Register(reg)
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "drctl_mirror_ready",
		Help: "1 when this process runs a link and owns shards of it (what /readyz reports), else 0."},
		func() float64 {
			e := d.Current()
			return b2f(e != nil && e.Ready())
		}))
	return d
}

// desired returns the link the role state allows now, and whether one is
// allowed at all.
func desired(st rolestate.State, topoName string) (linkKey, bool) {
	link := topology.Link{Topology: topoName, Source: st.Active, Target: st.Standby}
	switch st.Phase {
	case rolestate.PhaseSteady, "":
		return linkKey{link: link, epoch: st.Epoch}, true
	case rolestate.PhaseReseeding:
		return linkKey{link: link, epoch: st.Epoch, copy: true}, true
	case rolestate.PhaseFailingOver, rolestate.PhaseFailingBack:
		// Before its flip a failover drains the link active -> standby;
		// the flip moves the phase on to wiping.
		return linkKey{link: link, epoch: st.Epoch}, true
	default:
		// Wiping (the standby is stale and about to be wiped), or a phase
		// this drctl does not know: mirror nothing.
		return linkKey{}, false
	}
}

// Run serves the HTTP endpoints and follows the roles until ctx ends;
// then it stops the running link gracefully (committing what is in flight).
// A link asked for another shard count than it ran with ends it at once
// with the *ShardCountError.
func (d *Daemon) Run(ctx context.Context) error {
	if d.opts.Listen != "" {
		ln, err := net.Listen("tcp", d.opts.Listen)
		if err != nil {
			return fmt.Errorf("mirror: listen on %s: %w; pick another address with --listen", d.opts.Listen, err)
		}
		srv := &http.Server{Handler: d.handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		if d.opts.Started != nil {
			d.opts.Started(ln.Addr().String())
		}
	}
	var (
		running chan error
		cancel  context.CancelFunc
	)
	stop := func() {
		if cancel != nil {
			cancel()
			<-running //nolint:errcheck // stopping the link on purpose: it ends with ctx's cancellation
			d.beside.Wait()
			cancel, running = nil, nil
			d.mu.Lock()
			d.current, d.key = nil, linkKey{}
			d.mu.Unlock()
		}
	}
	defer stop()
	defer d.stopACLsAndWait()
	defer func() {
		if d.roles != nil {
			d.roles.Close()
			d.roles = nil
		}
	}()
	fencedStale := map[string]int64{}
	ended := false // the link ended since the last read of the roles
	for {
		view, err := d.readState(ctx)
		st := view.Current
		poll := d.opts.StatePoll
		if err == nil {
			d.opts.Engine.Metrics.observeRoles(view)
			d.fenceReturnedStale(ctx, view, fencedStale)
			if ended || transitional(st.Phase) {
				poll = min(poll, transitionPoll)
			}
		}
		ended = false
		refusal := ""
		if err == nil {
			refusal = d.refuse(view)
		}
		switch {
		case err != nil:
			d.opts.Engine.Metrics.noClusterReachable(d.topo)
			d.log.Warn("cannot read the live roles; keeping the current link", "err", err)
		case refusal != "":
			// The roles cannot be trusted: copy nothing and sync no group
			// (a link the wrong way round would write onto the live
			// active), until the state is restored.
			stop()
			d.log.Error("mirroring nothing: the live roles cannot be trusted", "why", refusal)
		default:
			d.followACLs(ctx, st)
			want, ok := desired(st, d.topo.Name)
			d.mu.Lock()
			same := d.current != nil && d.key == want
			d.mu.Unlock()
			if !ok && d.current != nil {
				stop()
				d.log.Info("the role state allows no link now; mirroring stopped", "phase", st.Phase, "epoch", st.Epoch)
			}
			if !same && ok {
				stop()
				e, err := d.start(want)
				if err != nil {
					d.log.Error("cannot start link", "link", want.link.String(), "err", err)
					break
				}
				runCtx, c := context.WithCancel(ctx)
				done := make(chan error, 1)
				go func() { done <- e.Run(runCtx) }()
				if d.opts.Beside != nil {
					d.beside.Go(func() { d.opts.Beside(runCtx, want.link, e.leads) })
				}
				cancel, running = c, done
				d.log.Info("mirroring", "link", want.link.String(), "epoch", want.epoch, "copy_own_origin", want.copy)
			}
		}
		d.applyPause()
		next := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			next.Stop()
			return nil
		case err := <-running:
			next.Stop()
			ended = true
			cancel()
			d.beside.Wait()
			cancel, running = nil, nil
			d.mu.Lock()
			d.current, d.key = nil, linkKey{}
			d.mu.Unlock()
			if errors.Is(err, ErrLinkRetired) {
				d.log.Info("link retired by a newer role state; waiting for the roles to settle", "err", err)
			}
			if _, ok := errors.AsType[*ShardCountError](err); ok {
				return err // a configuration mistake: retrying cannot help
			}
		case <-next.C:
		}
	}
}

// transitionPoll is how often the daemon reads the roles while a failover,
// failback or reseed moves them (any phase but steady) and right after its
// link ended (a failover fenced it): the next phase, reseeding above all,
// should start its link within a second, not at the next StatePoll. A read
// is a few small requests to each cluster; a failover's steps take a
// second or two, so reading five times a second while they run costs the
// clusters little and lets the reseed's link start at most 0.2 s after its
// phase is written (was 0.5 s).
const transitionPoll = 200 * time.Millisecond

// transitional reports whether phase is one a running transition passes
// through.
func transitional(phase rolestate.Phase) bool {
	return phase != rolestate.PhaseSteady && phase != ""
}

func (d *Daemon) start(k linkKey) (*Engine, error) {
	opts := d.opts.Engine
	opts.Epoch = k.epoch
	opts.CopyOwnOrigin = k.copy
	// The epoch decides, not only the direction: after a failover and a
	// failback the same direction runs again under a higher epoch, and a
	// hung shard of the old one must not pass. A target
	// whose state lags behind the epoch the link was started for (it
	// missed a write) does not stop it.
	opts.Allowed = func(st rolestate.State) bool {
		want, ok := desired(st, k.link.Topology)
		return ok && want.link == k.link && st.Epoch <= k.epoch
	}
	e, err := NewEngine(d.topo, k.link.Source, k.link.Target, opts)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.current, d.key = e, k
	d.mu.Unlock()
	d.applyPause() // before its first copy
	return e, nil
}

// fenceReturnedStale fences, once per epoch, a cluster that comes back
// holding an older role state while the roles moved away from it (an
// unplanned failover): its producers must not write to it any longer. It
// only acts with failover.fence: acl.
func (d *Daemon) fenceReturnedStale(ctx context.Context, v rolestate.View, done map[string]int64) {
	if d.topo.Failover.Fence != topology.FenceACL || v.Current.Phase != rolestate.PhaseWiping {
		return
	}
	name := v.Current.Standby
	cs, ok := v.Clusters[name]
	if !ok || !cs.Reachable || !cs.Stale || done[name] == v.Current.Epoch {
		return
	}
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	client, err := d.roles.Need(name)
	var rec *aclfence.Record
	if err == nil {
		rec, err = aclfence.Fence(fctx, client, d.topo, name)
	}
	if err != nil {
		d.log.Error("the stale cluster is back but could not be fenced", "cluster", name, "err", err)
		return
	}
	done[name] = v.Current.Epoch
	d.log.Warn("the stale cluster is back and was fenced against writes", "cluster", name, "acls_added", len(rec.Added))
}

// refuse says why the daemon must not act on view ("" when it may): the
// state is lost (no cluster holds it, yet they show a past failover), or it
// went back to an epoch lower than one this process has seen, which no run
// does (state deleted and rewritten, or a cluster restored from an old
// backup). It remembers the highest epoch seen.
func (d *Daemon) refuse(view rolestate.View) string {
	if view.Lost != "" {
		return view.Lost
	}
	ep := view.Current.Epoch
	if ep < d.seenEpoch {
		return fmt.Sprintf("the role state went back from epoch %d to %d (%s); no run lowers the epoch, so it was deleted or restored from an old copy: find which cluster the applications use and restore the roles with drctl roles restore --active CLUSTER",
			d.seenEpoch, ep, view.Current)
	}
	d.seenEpoch = ep
	return ""
}

// readState resolves the live roles from both clusters (the higher epoch
// wins; one reachable cluster is enough). The role state, the fences and
// the pauses are read at once, each a few round trips: a cluster's reads
// still follow each other on its connection (sarama sends one request at
// a time there), but the clusters' reads overlap, which matters when both
// are a WAN away.
func (d *Daemon) readState(ctx context.Context) (rolestate.View, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if d.roles == nil {
		d.roles = kafkaconn.Open(ctx, d.topo)
	}
	clusters := d.roles
	clients := clusters.Clients()
	var wg sync.WaitGroup
	if d.topo.Failover.Fence == topology.FenceACL {
		for name, c := range clients {
			wg.Go(func() {
				if held, err := aclfence.Held(ctx, c, d.topo.Name); err == nil {
					d.opts.Engine.Metrics.Roles.Fenced.WithLabelValues(name).Set(b2f(held))
				}
			})
		}
	}
	if len(clients) > 0 {
		wg.Go(func() {
			// A pause that cannot be read keeps the last one read: it expires.
			if ps, err := linkstate.Pauses(ctx, clients, d.topo.Name); err == nil {
				d.mu.Lock()
				d.pauses = ps
				d.mu.Unlock()
			}
		})
	}
	v, err := rolestate.ResolveLive(ctx, clusters)
	wg.Wait()
	if err != nil || !allReachable(v) {
		// The next poll dials every cluster anew: one that was down or
		// broke its connection gets a fresh client.
		clusters.Close()
		d.roles = nil
	}
	if err != nil {
		return rolestate.View{}, err
	}
	return v, nil
}

// allReachable reports whether every cluster of v answered.
func allReachable(v rolestate.View) bool {
	for _, cs := range v.Clusters {
		if !cs.Reachable {
			return false
		}
	}
	return true
}

// applyPause makes the running engine hold the pause that holds its link
// and epoch, or copy again when none does.
func (d *Daemon) applyPause() {
	d.mu.Lock()
	e, key, ps := d.current, d.key, d.pauses
	d.mu.Unlock()
	if e == nil {
		return
	}
	id := linkstate.PausedBy(ps, key.link, key.epoch, time.Now())
	if id != e.PausedBy() {
		e.SetPaused(id)
		if id != "" {
			d.log.Warn("copying paused by a drill (it ends when released, at its expiry, or when the roles move)", "link", key.link.String(), "pause", id)
		} else {
			d.log.Info("copying resumed", "link", key.link.String())
		}
	}
}

// Current returns the engine running now (nil when none).
func (d *Daemon) Current() *Engine {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.current
}

func (d *Daemon) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(d.reg, promhttp.HandlerOpts{}))
	// /healthz fails while the running link is stalled: behind the source
	// with no progress for Options.StallTimeout (a process that
	// copies nothing must not look healthy).
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if e := d.Current(); e != nil {
			if err := e.Stalled(); err != nil {
				http.Error(w, "unhealthy: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		e := d.Current()
		if e == nil || !e.Ready() {
			http.Error(w, "not ready: no link running or no shard owned yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "ready: %s, shards %v\n", e.Link(), e.OwnedShards())
	})
	return mux
}
