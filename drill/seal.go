package drill

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/drill/evidence"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// canonicalJSON is a record's canonical JSON: what Store writes to the
// clusters and the journal, what a signature signs and a digest hashes,
// and what drctl drill report --format json prints (two-space indent, one
// trailing newline).
func canonicalJSON(rec *Record) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rec); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// CanonicalJSON returns the record's canonical JSON: the exact bytes it
// was stored or read as (what its digest and signature cover), or, for a
// record never stored, its encoding. A record changed after it was read
// still returns the bytes it was read as: Store records a change.
func (r *Record) CanonicalJSON() ([]byte, error) {
	if r.canonical != nil {
		return r.canonical, nil
	}
	return canonicalJSON(r)
}

// Envelope returns the DSSE envelope that signs the record's canonical
// JSON (nil: not signed, or read without it).
func (r *Record) Envelope() *evidence.Envelope { return r.envelope }

// Seal is what a record's integrity rests on, as far as drctl knows it.
type Seal struct {
	// Digest is the evidence.Digest of the canonical JSON.
	Digest string
	// Chain is the record's link in its topology's chain (nil: not
	// chained: a started record, or one recorded before drctl chained
	// them).
	Chain *evidence.Link
	// KeyIDs are the keys whose signatures are in the envelope (none:
	// not signed).
	KeyIDs []string
	// SignatureChecked says how the signature was checked ("": it was
	// not); SignatureProblem why it does not hold.
	SignatureChecked string
	SignatureProblem string
}

// Seal returns the record's seal.
func (r *Record) Seal() Seal {
	s := Seal{Chain: r.Chain, SignatureChecked: r.sigCheck, SignatureProblem: r.sigProblem}
	if raw, err := r.CanonicalJSON(); err == nil {
		s.Digest = evidence.Digest(raw)
	}
	if r.envelope != nil {
		s.KeyIDs = r.envelope.KeyIDs()
	}
	return s
}

// checkSignature checks the record's envelope with pub: it must verify and
// sign the very bytes the record was read as. It notes the outcome in the
// record (Seal) and returns the problem ("" when it holds, or when there
// is nothing to check with pub: no envelope, or one by another key).
func (r *Record) checkSignature(pub ed25519.PublicKey, with string) string {
	r.sigCheck, r.sigProblem = "", ""
	if r.envelope == nil || pub == nil {
		return ""
	}
	if !slices.Contains(r.envelope.KeyIDs(), evidence.KeyID(pub)) {
		return ""
	}
	payload, err := evidence.Verify(r.envelope, pub)
	switch {
	case err != nil:
		r.sigProblem = strings.TrimPrefix(err.Error(), evidence.ErrInvalid.Error()+": ")
	case !bytes.Equal(payload, r.canonical):
		r.sigProblem = "the record differs from what was signed: it was changed after signing"
	default:
		r.sigCheck = "valid, checked with " + with
	}
	return r.sigProblem
}

// chainHead returns the newest chained record of the topology, the one a
// new result links to: read from the tail of each reachable cluster's
// drills topic, or, when no cluster could be read, from the local journal.
// A record removed by a tombstone still heads the chain while its value is
// in the log (the next record names it, and its removal shows); of two
// versions of one record, the first written is taken (an edit does not
// become what the next record vouches for). exclude is the record being
// stored. nil: no chained record (the chain starts).
func chainHead(ctx context.Context, clusters *kafkaconn.Clusters, dir, exclude string) *evidence.Head {
	topo := clusters.Topology()
	var best *evidence.Head
	read := 0
	for _, name := range topo.ClusterNames() {
		c, err := need(ctx, clusters, name)
		if err != nil {
			continue
		}
		h, err := clusterHead(ctx, c, topo.Name, exclude)
		if err != nil {
			continue
		}
		read++
		best = newerHead(best, h)
	}
	if read == 0 {
		best = journalHead(dir, topo.Name, exclude)
	}
	return best
}

func newerHead(a, b *evidence.Head) *evidence.Head {
	if a == nil || (b != nil && b.Seq > a.Seq) {
		return b
	}
	return a
}

// headWindow is how many records of the drills topic's tail chainHead
// reads first; it reads a window this many times larger until it finds a
// chained record of the topology or has read the whole topic.
const headWindow = 256

func clusterHead(ctx context.Context, c sarama.Client, topoName, exclude string) (*evidence.Head, error) {
	info, err := kafkaread.Topic(ctx, c, topology.DrillsTopic)
	if err != nil || !info.Exists {
		return nil, err
	}
	end, err := kafkaread.LastStableOffset(ctx, c, topology.DrillsTopic, 0)
	if err != nil {
		return nil, err
	}
	tp := topology.TopicPartition{Topic: topology.DrillsTopic, Partition: 0}
	starts, err := kafkaread.StartOffsets(ctx, c, []topology.TopicPartition{tp})
	if err != nil {
		return nil, err
	}
	start := starts[tp]
	for window := int64(headWindow); ; window *= 8 {
		from := max(start, end-window)
		var best *evidence.Head
		seen := map[string]bool{}
		_, err := kafkaread.ReadCommitted(ctx, c, topology.DrillsTopic, 0, from, func(r kafkaread.Record) error {
			id := string(r.Key)
			if id == exclude || seen[id] || len(r.Value) == 0 || strings.HasSuffix(id, envelopeSuffix) {
				return nil
			}
			// Another topology's record, or not a record: not this chain's.
			rec, derr := DecodeRecord(r.Value)
			if derr != nil || rec.Topology != topoName || rec.Chain == nil {
				return nil //nolint:nilerr // skipped, as History skips it
			}
			seen[id] = true
			best = newerHead(best, &evidence.Head{ID: rec.ID, Digest: evidence.Digest(r.Value), Seq: rec.Chain.Seq})
			return nil
		})
		if err != nil {
			return nil, err
		}
		if best != nil || from <= start {
			return best, nil
		}
	}
}

func journalHead(dir, topoName, exclude string) *evidence.Head {
	var best *evidence.Head
	files, _ := filepath.Glob(filepath.Join(dir, "*"+resultSuffix))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		rec, err := DecodeRecord(raw)
		if err != nil || rec.Topology != topoName || rec.Chain == nil || rec.ID == exclude {
			continue
		}
		best = newerHead(best, &evidence.Head{ID: rec.ID, Digest: evidence.Digest(raw), Seq: rec.Chain.Seq})
	}
	return best
}

// VerifyOptions tune VerifyHistory.
type VerifyOptions struct {
	// JournalDir is the local journal directory (default
	// failover.JournalDir()).
	JournalDir string
	// PublicKey checks the signatures (nil: the topology's signing key's,
	// or none: signatures are then counted, not checked).
	PublicKey ed25519.PublicKey
}

// HistoryCheck is what VerifyHistory found: the chain's report, and where
// it was read and how the signatures were checked.
type HistoryCheck struct {
	Topology string `json:"topology"`
	evidence.ChainReport
	// Read lists the places read (clusters and the local journal);
	// Unreadable the clusters that could not be, whose copies were not
	// checked.
	Read       []string `json:"read"`
	Unreadable []string `json:"unreadable,omitempty"`
	// KeyID is the key signatures were checked with ("": none).
	KeyID string `json:"key_id,omitempty"`
}

// VerifyHistory checks the topology's drill history: every copy of every
// record in both clusters and the local journal, the hash chain over them
// (evidence.VerifyChain), and each copy's signature with the topology's
// key (or o.PublicKey): it must verify and sign the very bytes of the
// copy. It is read-only. The error names the clusters it could not read
// (wrapping kafkaconn.ErrUnreachable); the check is then of what was read,
// and says so.
func VerifyHistory(ctx context.Context, clusters *kafkaconn.Clusters, o VerifyOptions) (*HistoryCheck, error) {
	topo := clusters.Topology()
	pub := o.PublicKey
	if pub == nil && topo.Drills.Evidence.SigningKey != nil {
		pub = topo.Drills.Evidence.SigningKey.PublicKey()
	}
	copies, failed := readCopies(ctx, clusters, HistoryOptions{JournalDir: o.JournalDir})
	check := &HistoryCheck{Topology: topo.Name, Read: []string{journalSource}}
	if pub != nil {
		check.KeyID = evidence.KeyID(pub)
	}
	var errs []error
	for _, name := range topo.ClusterNames() {
		if err := failed[name]; err != nil {
			check.Unreadable = append(check.Unreadable, name)
			errs = append(errs, err)
		} else {
			check.Read = append(check.Read, name)
		}
	}
	var in []evidence.Copy
	otherKeys := map[string]bool{}
	for _, c := range copies {
		rec := c.record()
		ec := evidence.Copy{Source: c.source, Cluster: c.cluster, ID: rec.ID, Digest: evidence.Digest(c.raw), Link: rec.Chain,
			Unfinished: rec.Unfinished, StartedAt: rec.StartedAt, Signed: c.env != nil || c.envErr != nil}
		switch {
		case c.envErr != nil:
			ec.SignatureProblem = "the signature stored beside it is not a DSSE envelope: " + c.envErr.Error()
		case c.env != nil && pub != nil && !slices.Contains(c.env.KeyIDs(), check.KeyID):
			for _, k := range c.env.KeyIDs() {
				otherKeys[k] = true
			}
		case c.env != nil && pub != nil:
			ec.SignatureProblem = rec.checkSignature(pub, "key "+check.KeyID)
			ec.SignatureChecked = ec.SignatureProblem == ""
		}
		in = append(in, ec)
	}
	check.ChainReport = *evidence.VerifyChain(in)
	switch {
	case pub == nil && check.Signed > 0:
		check.Notes = append(check.Notes, fmt.Sprintf("%d signed record(s) not checked: the topology names no signing key (--public-key FILE checks them)", check.Signed))
	case len(otherKeys) > 0:
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range otherKeys {
				if !yield(k) {
					return
				}
			}
		})
		check.Notes = append(check.Notes, fmt.Sprintf("signatures by key(s) %s, not %s, were not checked", strings.Join(keys, ", "), check.KeyID))
	}
	if len(errs) > 0 {
		check.Notes = append(check.Notes, fmt.Sprintf("%s could not be read: the copies there were not checked", strings.Join(check.Unreadable, " and ")))
	}
	return check, errors.Join(errs...)
}
