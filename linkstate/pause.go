package linkstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kvstore"
	"github.com/drctl/drctl/topology"
)

// Pause asks the mirror daemons of a link to stop copying while they go on
// observing the source's ends: an unplanned drill rehearses the loss of
// the active this way without touching its brokers (the records written
// meanwhile are what the failover's RPO reports and its salvage recovers).
//
// A pause is scoped: it holds only for its link at its epoch (a failover
// moves the epoch, so a pause never outlives the roles it was made for),
// only until Until (a drill that died cannot leave the mirror paused for
// longer), and only until it is released (Released). Daemons read it from
// every reachable cluster, like the role state.
type Pause struct {
	Topology string `json:"topology"`
	Source   string `json:"source"`
	Target   string `json:"target"`
	Epoch    int64  `json:"epoch"`
	// ID names who paused (the drill id); Holder the process.
	ID     string    `json:"id"`
	Holder string    `json:"holder,omitempty"`
	At     time.Time `json:"at"`
	Until  time.Time `json:"until"`
	// Released ends the pause before Until.
	Released bool `json:"released,omitempty"`
}

// Holds reports whether the pause stops the copying of link at epoch now.
func (p Pause) Holds(link topology.Link, epoch int64, now time.Time) bool {
	return !p.Released && p.Topology == link.Topology && p.Source == link.Source && p.Target == link.Target &&
		p.Epoch == epoch && now.Before(p.Until)
}

func pauseKey(topoName string, l topology.Link) string { return topoName + "/" + l.String() }

// PutPause records p in every client's cluster; it fails unless the
// target of its link took it (the daemons of a link whose source is lost
// still read the target).
func PutPause(ctx context.Context, clients map[string]sarama.Client, p Pause) error {
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	key := pauseKey(p.Topology, topology.Link{Topology: p.Topology, Source: p.Source, Target: p.Target})
	if _, ok := clients[p.Target]; !ok {
		return fmt.Errorf("pause %s: the link's target %s is not reachable", key, p.Target)
	}
	for name, c := range clients {
		// The source's copy is a courtesy: a failure there is not fatal.
		if err := kvstore.Put(ctx, c, topology.MirrorPausesTopic, key, raw); err != nil && name == p.Target {
			return fmt.Errorf("pause %s on %s: %w", key, name, err)
		}
	}
	return nil
}

// Pauses returns the topology's pause records in the clusters of clients
// (the newest of a key across clusters), released and expired ones
// included.
func Pauses(ctx context.Context, clients map[string]sarama.Client, topoName string) ([]Pause, error) {
	type read struct {
		name string
		all  map[string][]byte
		err  error
	}
	reads := make(chan read, len(clients))
	for name, c := range clients { // at once: each read is a few round trips
		go func() {
			all, err := kvstore.All(ctx, c, topology.MirrorPausesTopic)
			reads <- read{name, all, err}
		}()
	}
	newest := map[string]Pause{}
	var errs []error
	ok := 0
	for range clients {
		r := <-reads
		if r.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.name, r.err))
			continue
		}
		ok++
		for key, raw := range r.all {
			p, err := DecodePause(raw)
			if err != nil || p.Topology != topoName {
				continue
			}
			if old, seen := newest[key]; !seen || p.At.After(old.At) || (p.At.Equal(old.At) && p.Released) {
				newest[key] = p
			}
		}
	}
	out := make([]Pause, 0, len(newest))
	for _, p := range newest {
		out = append(out, p)
	}
	if ok == 0 && len(errs) > 0 {
		return out, errors.Join(errs...)
	}
	return out, nil
}

// DecodePause decodes a pause record read back from a cluster; a record
// that names no link is refused.
func DecodePause(raw []byte) (Pause, error) {
	var p Pause
	if err := json.Unmarshal(raw, &p); err != nil {
		return Pause{}, err
	}
	if p.Topology == "" || p.Source == "" || p.Target == "" || p.Source == p.Target {
		return Pause{}, errors.New("pause record without a link")
	}
	return p, nil
}

// PausedBy returns the id of the pause that holds link at epoch now ("":
// none).
func PausedBy(ps []Pause, link topology.Link, epoch int64, now time.Time) string {
	for _, p := range ps {
		if p.Holds(link, epoch, now) {
			return p.ID
		}
	}
	return ""
}
