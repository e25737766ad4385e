package drill

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/kvstore"
	"github.com/drctl/drctl/topology"
)

// resultSuffix names a drill's local result file beside its journal.
const resultSuffix = ".drill.json"

func dial(ctx context.Context, topo *topology.Topology, name string) (sarama.Client, error) {
	return kafkaconn.Dial(ctx, topo.Clusters[name], nil)
}

// Store records rec in the local journal directory and in every reachable
// cluster. It fails only when neither the directory nor any cluster took
// it.
func Store(ctx context.Context, topo *topology.Topology, rec *Record, dir string) error {
	raw, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	var errs []error
	stored := 0
	if err := os.MkdirAll(dir, 0o700); err == nil {
		if err := writeFileSync(filepath.Join(dir, rec.ID+resultSuffix), raw); err != nil {
			errs = append(errs, fmt.Errorf("local journal: %w", err))
		} else {
			stored++
		}
	}
	for _, name := range topo.ClusterNames() {
		c, err := dial(ctx, topo, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		err = kvstore.Put(ctx, c, topology.DrillsTopic, rec.ID, raw)
		_ = c.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", name, err))
			continue
		}
		stored++
	}
	if stored == 0 {
		return fmt.Errorf("record drill %s: %w", rec.ID, errors.Join(errs...))
	}
	return nil
}

func writeFileSync(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// HistoryOptions filter History.
type HistoryOptions struct {
	// JournalDir is the local journal directory (default
	// failover.JournalDir()).
	JournalDir string
	// Drill keeps only the drills of that name; Limit keeps the newest n
	// (0: all).
	Drill string
	Limit int
	// LocalOnly reads the local journal directory alone and contacts no
	// cluster (shell completion).
	LocalOnly bool
}

// History returns the topology's drill records, newest first: the union of
// both clusters' drills topic and the local journal directory. It is
// read-only. It returns what it could read; the error (wrapping
// kafkaconn.ErrUnreachable) names the clusters it could not.
func History(ctx context.Context, topo *topology.Topology, o HistoryOptions) ([]Record, error) {
	byID := map[string]Record{}
	add := func(r Record) {
		if r.Topology != topo.Name || (o.Drill != "" && r.Drill != o.Drill) {
			return
		}
		byID[r.ID] = r
	}
	dir := o.JournalDir
	if dir == "" {
		dir = failover.JournalDir()
	}
	if files, err := filepath.Glob(filepath.Join(dir, "*"+resultSuffix)); err == nil {
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			if r, err := DecodeRecord(raw); err == nil {
				add(r)
			}
		}
	}
	var errs []error
	for _, name := range topo.ClusterNames() {
		if o.LocalOnly {
			break
		}
		recs, err := clusterHistory(ctx, topo, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, r := range recs {
			add(r)
		}
	}
	out := make([]Record, 0, len(byID))
	for _, r := range byID {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Record) int { // newest first
		return cmp.Or(b.StartedAt.Compare(a.StartedAt), strings.Compare(b.ID, a.ID))
	})
	if o.Limit > 0 && len(out) > o.Limit {
		out = out[:o.Limit]
	}
	return out, errors.Join(errs...)
}

func clusterHistory(ctx context.Context, topo *topology.Topology, name string) ([]Record, error) {
	c, err := dial(ctx, topo, name)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	info, err := kafkaread.Topic(ctx, c, topology.DrillsTopic)
	if err != nil || !info.Exists {
		return nil, err
	}
	latest := map[string][]byte{}
	_, err = kafkaread.ReadCommitted(ctx, c, topology.DrillsTopic, 0, 0, func(r kafkaread.Record) error {
		latest[string(r.Key)] = r.Value
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cluster %s: read %s: %w", name, topology.DrillsTopic, err)
	}
	var out []Record
	for _, raw := range latest {
		if r, err := DecodeRecord(raw); err == nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// Find returns the record whose id is id, or the one id is a unique prefix
// of.
func Find(ctx context.Context, topo *topology.Topology, id string, o HistoryOptions) (*Record, error) {
	hist, err := History(ctx, topo, o)
	var match []Record
	for _, r := range hist {
		if r.ID == id {
			return &r, nil
		}
		if strings.HasPrefix(r.ID, id) {
			match = append(match, r)
		}
	}
	switch len(match) {
	case 1:
		return &match[0], nil
	case 0:
		if err != nil {
			return nil, fmt.Errorf("no drill %s found (%w); drctl drill history lists them", id, err)
		}
		return nil, fmt.Errorf("%w: no drill %s in the history of %s; drctl drill history lists them", ErrBadInput, id, topo.Name)
	}
	return nil, fmt.Errorf("%w: %d drills start with %s; give more of the id", ErrBadInput, len(match), id)
}

// DecodeRecord decodes a drill record read back from a cluster or the
// local journal. A record that names no drill id or topology is refused:
// the history is keyed by id, filtered by topology.
func DecodeRecord(raw []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(raw, &r); err != nil {
		return Record{}, err
	}
	if r.ID == "" || r.Topology == "" {
		return Record{}, errors.New("drill record without an id or a topology")
	}
	return r, nil
}
