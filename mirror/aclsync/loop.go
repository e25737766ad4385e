package aclsync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/aclfence"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/rolestate"
	"github.com/drctl/drctl/topology"
)

// Loop keeps one link's standby in step, a round every
// topo.Mirror.ACLs.Interval, until its context ends.
type Loop struct {
	Topo           *topology.Topology
	Source, Target string
	// Epoch is the role-state epoch the link runs under: a round acts only
	// while the live state still has it.
	Epoch int64
	Log   *slog.Logger
	// OnRound, if set, sees every round's outcome (metrics, tests).
	OnRound func(Round, error)
}

// Run runs rounds until ctx ends; it returns nil then. A failed round is
// logged and retried at the next tick. With mirror.acls.enabled false it
// returns at once.
func (l *Loop) Run(ctx context.Context) error {
	if !l.Topo.Mirror.ACLs.Enabled {
		return nil
	}
	log := l.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("link", l.Source+"->"+l.Target)
	var clients map[string]sarama.Client
	closeAll := func() {
		for _, c := range clients {
			_ = c.Close()
		}
		clients = nil
	}
	defer closeAll()
	t := time.NewTicker(l.Topo.Mirror.ACLs.Interval)
	defer t.Stop()
	lastErr := ""
	var late lateness
	for {
		if clients == nil {
			clients = l.dial(ctx)
		}
		r, err := l.round(ctx, clients)
		if l.OnRound != nil {
			l.OnRound(r, err)
		}
		if !errors.Is(err, aclfence.ErrNotShown) {
			late = lateness{}
		}
		switch {
		case err == nil:
			lastErr = ""
			if !r.Applied.Empty() || r.Fenced > 0 {
				log.Info("acl sync: the standby follows the active's ACLs", "added", len(r.Applied.Add), "removed", len(r.Applied.Remove),
					"fence_acls_added", r.Fenced, "changes", changes(r.Applied))
			}
		case errors.Is(err, ErrNoAuthorizer):
			if err.Error() != lastErr {
				log.Info("acl sync idle: no ACLs to keep in step", "reason", err)
				lastErr = err.Error()
			}
		case errors.Is(err, ErrNotSteady):
			// A failover or reseed is moving the roles; the daemon starts
			// the link of the new direction once they settle.
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, aclfence.ErrNotShown):
			switch late.note(time.Now(), lateWarn) {
			case lateFirst:
				log.Info("acl sync: the standby does not show its fence yet (its broker applies other metadata first, as while it creates many partitions); checking again",
					"err", err)
			case lateTooLong:
				log.Warn("acl sync round failed; retrying: the standby still does not show its fence", "err", err,
					"for", time.Since(late.since).Round(time.Second))
			}
		default:
			closeAll()
			if err.Error() != lastErr {
				log.Warn("acl sync round failed; retrying", "err", err)
				lastErr = err.Error()
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (l *Loop) dial(ctx context.Context) map[string]sarama.Client {
	out := map[string]sarama.Client{}
	for _, name := range []string{l.Source, l.Target} {
		dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		c, err := kafkaconn.Dial(dctx, l.Topo.Clusters[name], nil)
		cancel()
		if err == nil {
			out[name] = c
		}
	}
	return out
}

func (l *Loop) round(ctx context.Context, clients map[string]sarama.Client) (Round, error) {
	src, dst := clients[l.Source], clients[l.Target]
	if src == nil || dst == nil {
		return Round{}, fmt.Errorf("acl sync %s->%s: a cluster is unreachable", l.Source, l.Target)
	}
	allowed := func(ctx context.Context) error {
		rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		st := rolestate.Resolve(rctx, l.Topo, clients).Current
		steady := st.Phase == rolestate.PhaseSteady || st.Phase == ""
		if !steady || st.Active != l.Source || st.Standby != l.Target || st.Epoch != l.Epoch {
			return fmt.Errorf("%w (epoch %d, %s active, phase %s)", ErrNotSteady, st.Epoch, st.Active, st.Phase)
		}
		return nil
	}
	return SyncOnce(ctx, l.Topo, l.Target, src, dst, allowed)
}

// changes lists a round's changes for the log (principals and resources
// only; never a secret).
func changes(p Plan) []string {
	var out []string
	for _, b := range p.Add {
		out = append(out, "+ "+b.String())
	}
	for _, b := range p.Remove {
		out = append(out, "- "+b.String())
	}
	return out
}

// lateWarn is how long the standby may go on not showing a fence the loop
// wrote before the loop warns: a busy broker shows it within seconds, one
// that never does has a problem of its own.
const lateWarn = time.Minute

// lateness follows consecutive rounds whose fence the standby accepted and
// did not show yet (aclfence.ErrNotShown); the zero value has seen none.
type lateness struct {
	since  time.Time // the first such round
	warned bool
}

// What lateness.note says to log of a round.
const (
	lateQuiet   = iota // nothing: said already
	lateFirst          // the first such round: that the standby is behind
	lateTooLong        // behind for after: warn, once
)

// note records a round at now whose fence is not shown yet and says what
// to log of it.
func (l *lateness) note(now time.Time, after time.Duration) int {
	switch {
	case l.since.IsZero():
		l.since = now
		return lateFirst
	case !l.warned && now.Sub(l.since) >= after:
		l.warned = true
		return lateTooLong
	}
	return lateQuiet
}
