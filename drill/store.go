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

	"github.com/drctl/drctl/drill/evidence"
	"github.com/drctl/drctl/failover"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/kvstore"
	"github.com/drctl/drctl/topology"
)

// resultSuffix names a drill's local result file beside its journal;
// envelopeSuffix its signature envelope beside that, and its key in the
// drills topic beside the record's.
const (
	resultSuffix   = ".drill.json"
	envelopeSuffix = ".dsse"
)

// need is the session's client of cluster name, dialled again if it failed
// before; it belongs to the session (never closed here).
func need(ctx context.Context, clusters *kafkaconn.Clusters, name string) (sarama.Client, error) {
	clusters.Redial(ctx, name)
	return clusters.Need(name)
}

// Store records rec in the local journal directory and in every reachable
// cluster. It fails only when neither the directory nor any cluster took
// it.
//
// A result (a record that is not Unfinished) is sealed first: it is linked
// to the topology's newest chained record (rec.Chain; see chainHead), and,
// with drills.evidence.signing_key, its canonical JSON is signed. The
// record is stored as its canonical JSON under its id; the signature
// envelope beside it (the key id+".dsse" in the drills topic, the file
// <id>.drill.json.dsse in the journal). rec keeps the bytes stored and the
// envelope (CanonicalJSON, Envelope).
func Store(ctx context.Context, clusters *kafkaconn.Clusters, rec *Record, dir string) error {
	topo := clusters.Topology()
	if !rec.Unfinished && rec.Chain == nil {
		rec.Chain = evidence.Next(chainHead(ctx, clusters, dir, rec.ID))
	}
	raw, err := canonicalJSON(rec)
	if err != nil {
		return err
	}
	var env *evidence.Envelope
	if key := topo.Drills.Evidence.SigningKey; key != nil && !rec.Unfinished {
		env = evidence.Sign(raw, key)
	}
	var errs []error
	stored := 0
	if err := os.MkdirAll(dir, 0o700); err == nil {
		path := filepath.Join(dir, rec.ID+resultSuffix)
		err := writeFileSync(path, raw)
		if err == nil && env != nil {
			err = writeFileSync(path+envelopeSuffix, env.Marshal())
		} else if err == nil {
			_ = os.Remove(path + envelopeSuffix) // a signature of an earlier content signs nothing now
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("local journal: %w", err))
		} else {
			stored++
		}
	}
	for _, name := range topo.ClusterNames() {
		c, err := need(ctx, clusters, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		err = kvstore.Put(ctx, c, topology.DrillsTopic, rec.ID, raw)
		if err == nil && env != nil {
			err = kvstore.Put(ctx, c, topology.DrillsTopic, rec.ID+envelopeSuffix, env.Marshal())
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", name, err))
			continue
		}
		stored++
	}
	if stored == 0 {
		return fmt.Errorf("record drill %s: %w", rec.ID, errors.Join(errs...))
	}
	rec.canonical, rec.envelope, rec.sigProblem = raw, env, ""
	if env != nil {
		rec.sigCheck = "signed when recorded, with the topology's key"
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
// kafkaconn.ErrUnreachable) names the clusters it could not. Each record
// holds the bytes it was read as and its signature envelope, if any.
func History(ctx context.Context, clusters *kafkaconn.Clusters, o HistoryOptions) ([]Record, error) {
	topo := clusters.Topology()
	byID := map[string]Record{}
	copies, failed := readCopies(ctx, clusters, o)
	for _, c := range copies {
		if o.Drill != "" && c.rec.Drill != o.Drill {
			continue
		}
		byID[c.rec.ID] = c.record()
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
	var errs []error
	for _, name := range topo.ClusterNames() {
		if err := failed[name]; err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// storedCopy is what one place holds of one record of the topology: the
// bytes, the record they decode to, and the signature envelope stored
// beside it (nil: none, or one that does not parse: envErr).
type storedCopy struct {
	source  string
	cluster bool
	raw     []byte
	rec     Record
	env     *evidence.Envelope
	envErr  error
}

func (c storedCopy) record() Record {
	r := c.rec
	r.canonical, r.envelope = c.raw, c.env
	return r
}

// journalSource names the local journal among the places a record is in.
const journalSource = "local journal"

// readCopies reads every copy of the topology's records: the local
// journal's first, then each cluster's in name order. failed holds the
// clusters it could not read, with why.
func readCopies(ctx context.Context, clusters *kafkaconn.Clusters, o HistoryOptions) (copies []storedCopy, failed map[string]error) {
	topo := clusters.Topology()
	dir := o.JournalDir
	if dir == "" {
		dir = failover.JournalDir()
	}
	var out []storedCopy
	if files, err := filepath.Glob(filepath.Join(dir, "*"+resultSuffix)); err == nil {
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			c := storedCopy{source: journalSource, raw: raw}
			if env, err := os.ReadFile(f + envelopeSuffix); err == nil {
				c.env, c.envErr = evidence.ParseEnvelope(env)
			}
			if c.rec, err = DecodeRecord(raw); err == nil && c.rec.Topology == topo.Name {
				out = append(out, c)
			}
		}
	}
	failed = map[string]error{}
	for _, name := range topo.ClusterNames() {
		if o.LocalOnly {
			break
		}
		cs, err := clusterCopies(ctx, clusters, name)
		if err != nil {
			failed[name] = err
			continue
		}
		out = append(out, cs...)
	}
	return out, failed
}

func clusterCopies(ctx context.Context, clusters *kafkaconn.Clusters, name string) ([]storedCopy, error) {
	topo := clusters.Topology()
	c, err := need(ctx, clusters, name)
	if err != nil {
		return nil, err
	}
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
	var out []storedCopy
	for key, raw := range latest {
		if strings.HasSuffix(key, envelopeSuffix) {
			continue
		}
		r, err := DecodeRecord(raw)
		if err != nil || r.Topology != topo.Name {
			continue
		}
		cp := storedCopy{source: name, cluster: true, raw: raw, rec: r}
		if env := latest[key+envelopeSuffix]; len(env) > 0 {
			cp.env, cp.envErr = evidence.ParseEnvelope(env)
		}
		out = append(out, cp)
	}
	slices.SortFunc(out, func(a, b storedCopy) int { return strings.Compare(a.rec.ID, b.rec.ID) })
	return out, nil
}

// Find returns the record whose id is id, or the one id is a unique prefix
// of.
func Find(ctx context.Context, clusters *kafkaconn.Clusters, id string, o HistoryOptions) (*Record, error) {
	topo := clusters.Topology()
	hist, err := History(ctx, clusters, o)
	var match []Record
	for _, r := range hist {
		if r.ID == id {
			return sealChecked(topo, r), nil
		}
		if strings.HasPrefix(r.ID, id) {
			match = append(match, r)
		}
	}
	switch len(match) {
	case 1:
		return sealChecked(topo, match[0]), nil
	case 0:
		if err != nil {
			return nil, fmt.Errorf("no drill %s found (%w); drctl drill history lists them", id, err)
		}
		return nil, fmt.Errorf("%w: no drill %s in the history of %s; drctl drill history lists them", ErrBadInput, id, topo.Name)
	}
	return nil, fmt.Errorf("%w: %d drills start with %s; give more of the id", ErrBadInput, len(match), id)
}

// clusterHistory returns the topology's records one cluster holds.
func clusterHistory(ctx context.Context, clusters *kafkaconn.Clusters, name string) ([]Record, error) {
	cs, err := clusterCopies(ctx, clusters, name)
	out := make([]Record, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.record())
	}
	return out, err
}

// sealChecked checks r's signature with the topology's key, if it has one,
// and returns r with the outcome (Record.Seal).
func sealChecked(topo *topology.Topology, r Record) *Record {
	if k := topo.Drills.Evidence.SigningKey; k != nil {
		r.checkSignature(k.PublicKey(), "the topology's key")
	}
	return &r
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
