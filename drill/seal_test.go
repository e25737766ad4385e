package drill

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/drill/evidence"
	"github.com/drctl/drctl/internal/kvstore"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// signedPair starts two kfake clusters whose topology signs drill records
// with a fresh key, kept in a file.
func signedPair(t *testing.T) *kfaketest.Pair {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(priv)
	path := filepath.Join(t.TempDir(), "evidence.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return newPair(t, "drills:\n  evidence: {signing_key: "+path+"}\n")
}

func testRecord(topo *topology.Topology, n int) *Record {
	t0 := time.Date(2026, 12, 1, 3, n, 0, 0, time.UTC)
	return &Record{ID: fmt.Sprintf("drill-canary-20261201T03%02d00-%06d", n, n), Drill: "canary", Kind: "canary", Topology: topo.Name,
		StartedAt: t0, FinishedAt: t0.Add(2 * time.Second), Active: "east", Standby: "west", Verdict: Pass, Reasons: []string{}}
}

// putEverywhere writes value under key in both clusters' drills topic (an
// empty value removes the key).
func putEverywhere(t *testing.T, topo *topology.Topology, key string, value []byte) {
	t.Helper()
	for _, c := range topo.ClusterNames() {
		if err := kvstore.Put(kfaketest.Ctx(t, 10*time.Second), kfaketest.Dial(t, topo, c), topology.DrillsTopic, key, value); err != nil {
			t.Fatal(err)
		}
	}
}

func verifyHistory(t *testing.T, topo *topology.Topology, dir string) *HistoryCheck {
	t.Helper()
	check, err := VerifyHistory(kfaketest.Ctx(t, 20*time.Second), kfaketest.Session(t, topo), VerifyOptions{JournalDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return check
}

func problemsOf(c *HistoryCheck) []string {
	var out []string
	for _, p := range c.Problems {
		out = append(out, p.Kind+":"+p.ID)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestHistoryChain, on the clusters' real wire protocol: results are
// chained in the order recorded and signed; a record from before the chain
// is counted apart; an intact history verifies with its signatures; an
// edited record and a removed record (from both clusters and the journal)
// are named; and a newest record removed before the next drill is
// recorded still heads the chain, so its removal shows.
func TestHistoryChain(t *testing.T) {
	p := signedPair(t)
	topo, dir := p.Topology, t.TempDir()
	ctx := kfaketest.Ctx(t, time.Minute)

	legacy, _ := json.Marshal(testRecord(topo, 0)) // as drctl stored records before it chained them
	putEverywhere(t, topo, testRecord(topo, 0).ID, legacy)
	var recs []*Record
	for i := 1; i <= 3; i++ {
		r := testRecord(topo, i)
		if err := Store(ctx, kfaketest.Session(t, topo), r, dir); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	started := testRecord(topo, 4)
	started.Unfinished = true
	if err := Store(ctx, kfaketest.Session(t, topo), started, dir); err != nil {
		t.Fatal(err)
	}
	if started.Chain != nil || started.Envelope() != nil {
		t.Errorf("a started record is chained or signed: %+v", started.Chain)
	}
	for i, r := range recs {
		want := evidence.Link{Seq: int64(i + 1)}
		if i > 0 {
			want.PrevID, want.PrevDigest = recs[i-1].ID, recs[i-1].Seal().Digest
		}
		if r.Chain == nil || *r.Chain != want || r.Envelope() == nil {
			t.Fatalf("record %d: chain %+v, want %+v; envelope %v", i+1, r.Chain, want, r.Envelope())
		}
	}
	// The journal holds the canonical JSON and its envelope beside it.
	raw, err := os.ReadFile(filepath.Join(dir, recs[1].ID+resultSuffix))
	if err != nil || recs[1].Seal().Digest != evidence.Digest(raw) {
		t.Fatalf("journal copy: %v", err)
	}
	if env, err := os.ReadFile(filepath.Join(dir, recs[1].ID+resultSuffix+envelopeSuffix)); err != nil || !strings.Contains(string(env), evidence.PayloadType) {
		t.Fatalf("journal envelope: %v %s", err, env)
	}

	check := verifyHistory(t, topo, dir)
	if !check.Intact() || check.Chained != 3 || check.Signed != 3 || check.SignaturesChecked != 3 || len(check.Unchained) != 2 ||
		check.NewestID != recs[2].ID || !slices.Equal(check.Read, []string{"local journal", "east", "west"}) {
		t.Fatalf("intact history: %+v", check)
	}
	// Find checks the signature it returns.
	found, err := Find(ctx, kfaketest.Session(t, topo), recs[1].ID, HistoryOptions{JournalDir: dir})
	if err != nil || !strings.HasPrefix(found.Seal().SignatureChecked, "valid") {
		t.Errorf("Find: %v %+v", err, found.Seal())
	}

	// Edit record 2 everywhere: its verdict turned.
	edited := *recs[1]
	edited.Verdict, edited.Reasons = Fail, []string{"changed"}
	editedRaw, _ := canonicalJSON(&edited)
	putEverywhere(t, topo, edited.ID, editedRaw)
	_ = os.WriteFile(filepath.Join(dir, edited.ID+resultSuffix), editedRaw, 0o600)
	check = verifyHistory(t, topo, dir)
	if got := problemsOf(check); !slices.Equal(got, []string{"edited:" + edited.ID, "signature:" + edited.ID}) {
		t.Errorf("edited: problems %v:\n%+v", got, check.Problems)
	}

	// Remove it everywhere.
	putEverywhere(t, topo, edited.ID, nil)
	putEverywhere(t, topo, edited.ID+envelopeSuffix, nil)
	_ = os.Remove(filepath.Join(dir, edited.ID+resultSuffix))
	check = verifyHistory(t, topo, dir)
	if got := problemsOf(check); !slices.Equal(got, []string{"removed:" + edited.ID}) || !strings.Contains(check.Problems[0].Message, recs[2].ID+" (seq 3) names it") {
		t.Errorf("removed: problems %v:\n%+v", got, check.Problems)
	}

	// Remove the newest, then record the next drill: the removed record
	// still heads the chain, so its removal shows.
	putEverywhere(t, topo, recs[2].ID, nil)
	_ = os.Remove(filepath.Join(dir, recs[2].ID+resultSuffix))
	next := testRecord(topo, 5)
	if err := Store(ctx, kfaketest.Session(t, topo), next, dir); err != nil {
		t.Fatal(err)
	}
	if next.Chain.Seq != 4 || next.Chain.PrevID != recs[2].ID {
		t.Errorf("the next record links to %+v, want seq 4 after %s", next.Chain, recs[2].ID)
	}
	check = verifyHistory(t, topo, dir)
	if got := problemsOf(check); !slices.Equal(got, []string{"removed:", "removed:" + recs[2].ID}) || !strings.Contains(check.Problems[1].Message, "seq 2 was removed") {
		t.Errorf("newest removed: problems %v:\n%+v", got, check.Problems)
	}
}
