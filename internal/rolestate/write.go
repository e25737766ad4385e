package rolestate

import (
	"context"
	"fmt"
	"sync"

	"github.com/IBM/sarama"
)

// Target is one cluster a state is written to.
type Target struct {
	Cluster string
	Client  sarama.Client
	// Config is the cluster's client configuration the writer starts
	// from; nil means Client's.
	Config *sarama.Config
	// Expected is the epoch the cluster must hold for the write to happen
	// (ClusterState.Epoch of a View).
	Expected int64
}

// WriteResult is the outcome of writing to one cluster; Err is nil on
// success, and otherwise names the cluster (a *StaleError stays visible to
// errors.As and errors.Is).
type WriteResult struct {
	Cluster string
	Err     error
}

// WriteAll compare-and-sets the same next state on every target
// concurrently (stamped once, so every cluster stores identical values)
// and reports each cluster's outcome, in target order. One cluster's
// failure does not stop the writes to the others.
func WriteAll(ctx context.Context, targets []Target, next State) []WriteResult {
	next = stamp(next)
	results := make([]WriteResult, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			results[i].Cluster = t.Cluster
			if err := CompareAndSet(ctx, t.Client, t.Config, t.Expected, next); err != nil {
				results[i].Err = fmt.Errorf("cluster %s: %w", t.Cluster, err)
			}
		})
	}
	wg.Wait()
	return results
}
