package tui

import (
	"context"
	"time"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/runrecord"
	"github.com/drctl/drctl/topology"
)

// Snapshot is one refresh: the status snapshot `drctl status` prints and,
// when both clusters answer, the per-partition lag `drctl mirror lag`
// prints (the same measurement the snapshot's mirror totals come from).
type Snapshot struct {
	Status *inspect.Status
	Lag    *linkstate.LagReport
	// LagError is why the lag could not be measured ("" when it was, or
	// when a cluster is down and it was not tried).
	LagError string
	// Bytes is the log size of the lagged partitions on both ends (nil
	// when lag was not measured or the brokers did not say).
	Bytes *LogBytes
	// Runs are the newest runs of the local journal and those the
	// clusters recorded, one row per run id.
	Runs      []PastRun
	RunsError string
	// At is when the refresh started; Took how long it took.
	At   time.Time
	Took time.Duration
}

// snapshotMsg carries a finished refresh.
type snapshotMsg struct{ snap *Snapshot }

// collect is the refresh: the same calls as `drctl status` and `drctl
// mirror lag`, bounded by timeout. It never fails as a whole: what a
// cluster did not answer is part of the snapshot.
func collect(ctx context.Context, topo *topology.Topology, journalDir string, timeout time.Duration, now func() time.Time) *Snapshot {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s := &Snapshot{At: now()}
	// One session for the whole refresh: each cluster is dialled once.
	clusters := kafkaconn.Open(ctx, topo)
	defer clusters.Close()
	s.Status, s.Lag = inspect.CollectStatus(ctx, clusters)
	if m := s.Status.Mirror; m != nil && s.Lag == nil && m.Error != "" {
		s.LagError = m.Error
	}
	if s.Lag != nil {
		s.Bytes, _ = measureLogBytes(ctx, clusters, s.Lag, s.Status.Roles.Active, s.Status.Roles.Standby)
	}
	runs, err := readJournals(journalDir, topo.Name, 50)
	if err != nil {
		s.RunsError = err.Error()
	}
	recorded, err := runrecord.List(ctx, clusters)
	if err != nil && s.RunsError == "" {
		s.RunsError = err.Error()
	}
	s.Runs = mergeRuns(runs, recorded)
	s.Took = time.Since(start)
	return s
}

// Reachable reports whether cluster name answered.
func (s *Snapshot) Reachable(name string) bool {
	if s == nil || s.Status == nil {
		return false
	}
	for _, c := range s.Status.Clusters {
		if c.Name == name {
			return c.Reachable
		}
	}
	return false
}
