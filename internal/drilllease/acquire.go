package drilllease

import (
	"context"
	"errors"
	"time"

	"github.com/drctl/drctl/internal/kafkaconn"
)

// Lease is a lease this process holds: key, claimed by Holder on Cluster
// through a command's session, which must outlive it.
type Lease struct {
	clusters *kafkaconn.Clusters
	Cluster  string
	Key      string
	Holder   string
	// What names what holds the lease, for whoever it refuses.
	What string
}

// Acquire claims key on cluster for holder until ttl from now, through the
// session (its client of cluster, dialled again if it failed before), or
// returns an error wrapping ErrLocked that names the holder. Claimed again
// by its holder, a lease is renewed.
func Acquire(ctx context.Context, clusters *kafkaconn.Clusters, cluster, key, holder, what string, ttl time.Duration) (*Lease, error) {
	l := &Lease{clusters: clusters, Cluster: cluster, Key: key, Holder: holder, What: what}
	if err := l.Renew(ctx, ttl); err != nil {
		return nil, err
	}
	return l, nil
}

// Renew claims the lease again until ttl from now.
func (l *Lease) Renew(ctx context.Context, ttl time.Duration) error {
	l.clusters.Redial(ctx, l.Cluster)
	c, err := l.clusters.Need(l.Cluster)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	return Take(ctx, c, l.clusters.Topology().Clusters[l.Cluster], Claim{Key: l.Key, Holder: l.Holder, Drill: l.What, At: now, Expires: now.Add(ttl)})
}

// Release ends the lease (best effort: an unreleased lease expires).
func (l *Lease) Release(ctx context.Context) error {
	c, err := l.clusters.Need(l.Cluster)
	if err != nil {
		return err
	}
	return Give(ctx, c, l.clusters.Topology().Clusters[l.Cluster], l.Key, l.Holder, l.What)
}

// Keep renews the lease for ttl every `every` until the returned stop is
// called (stop waits for the renewals to end). A renewal that finds
// another holder calls lost with the error (wrapping ErrLocked) and ends
// the renewals; one that cannot reach the cluster is tried again at the
// next tick (the holder's own work reports an unreachable cluster).
func (l *Lease) Keep(every, ttl time.Duration, lost func(error)) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), every)
			err := l.Renew(ctx, ttl)
			cancel()
			if errors.Is(err, ErrLocked) {
				lost(err)
				return
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}
