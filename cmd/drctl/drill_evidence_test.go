package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/drill/evidence"
	"github.com/drctl/drctl/internal/kvstore"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/mirror"
	"github.com/drctl/drctl/topology"
)

// writeSigningKey writes a new ed25519 key as PKCS#8 PEM and returns its
// file and its base64 body (what must never be printed).
func writeSigningKey(t *testing.T, dir string) (path, secret string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(priv)
	path = filepath.Join(dir, "evidence.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, base64.StdEncoding.EncodeToString(der)
}

// TestSignedDrillEvidence, as an operator and an auditor would: a drill
// of a topology with a signing key writes its JSON report and the DSSE
// envelope beside it; the auditor, with only the public key that
// evidence-key prints, finds it valid; a changed report, a changed
// envelope payload, a changed signature and another key are each invalid
// (exit 1, saying why); bad input exits 2. The HTML report's Evidence
// section says the record is signed and valid. The history's hash chain
// verifies, and names a record edited, then removed, in both clusters and
// the journal (exit 1). The private key appears in no output.
func TestSignedDrillEvidence(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	dir := t.TempDir()
	keyFile, secret := writeSigningKey(t, dir)
	p := kfaketest.NewPair(t, kfaketest.Options{
		Mirror: "  topics: {include: [\"orders\"]}\n  group_sync_interval: 500ms",
		Extra: "failover: {fence: none}\ndrills:\n  evidence: {signing_key: " + keyFile + "}\n  named:\n    quick:\n      kind: canary\n" +
			"      params: {records: 10, rate: 100}\n"})
	ctx, cancel := context.WithCancel(context.Background())
	d := mirror.NewDaemon(p.Topology, mirror.DaemonOptions{StatePoll: 200 * time.Millisecond,
		Engine: mirror.Options{Shards: 1, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond}})
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	var printed strings.Builder // every output, for the secret check
	run := func(args ...string) (string, string, int) {
		t.Helper()
		out, errb, code := drctl(t, append([]string{"-c", p.Path}, args...)...)
		printed.WriteString(out + errb)
		return out, errb, code
	}
	report := filepath.Join(dir, "r.json")
	if out, errb, code := run("drill", "run", "quick", "--report", report, "--format", "json"); code != exitOK {
		t.Fatalf("drill run: exit %d\n%s\n%s", code, out, errb)
	}
	pubOut, errb, code := run("drill", "evidence-key")
	if code != exitOK || !strings.Contains(pubOut, "-----BEGIN PUBLIC KEY-----") || !strings.Contains(pubOut, "# key id sha256:") {
		t.Fatalf("evidence-key: exit %d\n%s\n%s", code, pubOut, errb)
	}
	pubFile := filepath.Join(dir, "evidence.pub")
	_ = os.WriteFile(pubFile, []byte(pubOut), 0o644)
	auditor := func(args ...string) (string, string, int) { // no topology: the public key only
		t.Helper()
		out, errb, code := drctl(t, append([]string{"-c", filepath.Join(dir, "none.yaml"), "drill", "verify-report"}, args...)...)
		printed.WriteString(out + errb)
		return out, errb, code
	}
	for _, args := range [][]string{{report, "--public-key", pubFile}, {report + ".dsse", "--public-key", pubFile}} {
		if out, errb, code := auditor(args...); code != exitOK || !strings.HasPrefix(out, "valid: drill drill-canary-") || !strings.Contains(out, "is the signed payload, byte for byte") && args[0] == report {
			t.Errorf("verify-report %v: exit %d\n%s\n%s", args, code, out, errb)
		}
	}
	if out, errb, code := run("drill", "verify-report", report); code != exitOK || !strings.Contains(out, "chain: record 1 of the chain of topology") {
		t.Errorf("verify-report with the topology's key: exit %d\n%s\n%s", code, out, errb)
	}

	// What an auditor is handed, changed.
	raw, _ := os.ReadFile(report)
	envRaw, _ := os.ReadFile(report + ".dsse")
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	changedEnv := func(change func(e *evidence.Envelope)) []byte {
		e, err := evidence.ParseEnvelope(envRaw)
		if err != nil {
			t.Fatal(err)
		}
		change(e)
		return e.Marshal()
	}
	tampered := bytes.Replace(raw, []byte(`"verdict": "pass"`), []byte(`"verdict": "fail"`), 1)
	otherPEM, _, _ := drctl(t, "drill", "evidence-key", "--new", filepath.Join(dir, "other.pem"))
	otherPub := write("other.pub", []byte(otherPEM))
	_, otherOut, _ := drctl(t, "drill", "evidence-key", "--new", filepath.Join(dir, "other.pem"))
	if !strings.Contains(otherOut, "exists: drctl never overwrites a key") {
		t.Errorf("evidence-key --new over an existing key: %s", otherOut)
	}
	for name, tc := range map[string]struct {
		args []string
		why  string
	}{
		"report changed": {[]string{write("t1.json", tampered), "--signature", report + ".dsse", "--public-key", pubFile}, "it is not what was signed (it differs from the signed payload at byte"},
		"payload changed": {[]string{write("t2.json.dsse", changedEnv(func(e *evidence.Envelope) { e.Payload = base64.StdEncoding.EncodeToString(tampered) })), "--public-key", pubFile},
			"does not match the payload: the report or its signature was changed after signing"},
		"signature changed": {[]string{write("t3.json.dsse", changedEnv(func(e *evidence.Envelope) {
			sig, _ := base64.StdEncoding.DecodeString(e.Signatures[0].Sig)
			sig[7] ^= 0x40
			e.Signatures[0].Sig = base64.StdEncoding.EncodeToString(sig)
		})), "--public-key", pubFile}, "does not match the payload"},
		"another key": {[]string{report, "--public-key", otherPub}, "not by the key given"},
		"not signed":  {[]string{write("lone.json", raw), "--public-key", pubFile}, "not signed: there is no"},
	} {
		out, errb, code := auditor(tc.args...)
		if code != exitFailure || !strings.Contains(errb, "INVALID") || !strings.Contains(errb, tc.why) {
			t.Errorf("%s: exit %d, want 1 saying %q\n%s\n%s", name, code, tc.why, out, errb)
		}
	}
	out, _, code := auditor(report, "--public-key", otherPub, "-o", "json")
	var ans struct {
		Valid  bool   `json:"valid"`
		Reason string `json:"reason"`
		KeyID  string `json:"key_id"`
	}
	if code != exitFailure || json.Unmarshal([]byte(out), &ans) != nil || ans.Valid || !strings.Contains(ans.Reason, "not by the key given") {
		t.Errorf("-o json of an invalid report: exit %d %s", code, out)
	}
	for name, args := range map[string][]string{
		"no file":          {},
		"missing file":     {filepath.Join(dir, "nope.json"), "--public-key", pubFile},
		"not a report":     {write("junk.json", []byte(`{"hello": 1}`)), "--public-key", pubFile},
		"a private key":    {report, "--public-key", keyFile},
		"no key anywhere":  {report},
		"a bad public key": {report, "--public-key", write("bad.pub", []byte("hello"))},
	} {
		if out, errb, code := auditor(args...); code != exitBadInput {
			t.Errorf("%s: exit %d, want 2\n%s\n%s", name, code, out, errb)
		}
	}

	// The report command writes the same signed pair; its HTML says so.
	var hist []drill.Summary
	out, _, _ = run("drill", "history", "-o", "json")
	if err := json.Unmarshal([]byte(out), &hist); err != nil || len(hist) != 1 || hist[0].ChainSeq != 1 || !hist[0].Signed {
		t.Fatalf("history: %v %s", err, out)
	}
	again := filepath.Join(dir, "again.json")
	if _, errb, code := run("drill", "report", hist[0].ID, "--format", "json", "--out", again); code != exitOK {
		t.Fatalf("report json: exit %d %s", code, errb)
	}
	if b, _ := os.ReadFile(again); !bytes.Equal(b, raw) {
		t.Errorf("drill report --format json is not the bytes drill run wrote")
	}
	if b, _ := os.ReadFile(again + ".dsse"); !bytes.Equal(b, envRaw) {
		t.Errorf("drill report wrote another envelope")
	}
	if out, _, code := run("drill", "report", hist[0].ID, "--format", "dsse"); code != exitOK || out != string(envRaw) {
		t.Errorf("report --format dsse: exit %d\n%s", code, out)
	}
	htmlFile := filepath.Join(dir, "r.html")
	if _, errb, code := run("drill", "report", hist[0].ID, "--format", "html", "--out", htmlFile); code != exitOK {
		t.Fatalf("report html: exit %d %s", code, errb)
	}
	h, _ := os.ReadFile(htmlFile)
	keyID := evidence.KeyID(p.Topology.Drills.Evidence.SigningKey.PublicKey())
	for _, want := range []string{"<h2>Evidence</h2>", "signed (DSSE, ed25519) by key " + keyID + "; valid, checked with the topology&#39;s key", "record 1 of the chain of topology"} {
		if !strings.Contains(string(h), want) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
	if dst := os.Getenv("DRCTL_EVIDENCE_HTML"); dst != "" { // to look at it in a browser
		_ = os.WriteFile(dst, h, 0o644)
	}

	// The history's chain.
	for range 2 {
		if _, errb, code := run("drill", "run", "quick"); code != exitOK {
			t.Fatalf("drill run: exit %d %s", code, errb)
		}
	}
	out, errb, code = run("drill", "history", "--verify")
	if code != exitOK || !strings.Contains(out, "INTACT") || !strings.Contains(out, "chained: 3 record(s)") || !strings.Contains(out, "3 checked with key "+keyID+" and valid") {
		t.Fatalf("history --verify of an intact chain: exit %d\n%s\n%s", code, out, errb)
	}
	out, _, _ = run("drill", "history", "-o", "json")
	hist = nil
	_ = json.Unmarshal([]byte(out), &hist)
	second := hist[1] // newest first: the middle one
	journal := filepath.Join(state, "drctl", "runs", second.ID+".drill.json")
	rec, _ := os.ReadFile(journal)
	edited := bytes.Replace(rec, []byte(`"verdict": "pass"`), []byte(`"verdict": "fail"`), 1)
	putAll(t, p.Topology, second.ID, edited)
	_ = os.WriteFile(journal, edited, 0o600)
	out, errb, code = run("drill", "history", "--verify")
	if code != exitFailure || !strings.Contains(out, "BROKEN") || !strings.Contains(out, "edited: "+second.ID+" (seq 2) was edited on local journal, east, west") {
		t.Errorf("history --verify of an edited record: exit %d\n%s\n%s", code, out, errb)
	}
	putAll(t, p.Topology, second.ID, nil)
	_ = os.Remove(journal)
	out, errb, code = run("drill", "history", "--verify")
	if code != exitFailure || !strings.Contains(out, "removed: "+second.ID+" (seq 2) was removed") {
		t.Errorf("history --verify of a removed record: exit %d\n%s\n%s", code, out, errb)
	}
	if _, errb, code := run("drill", "history", "--verify", "--limit", "3"); code != exitBadInput {
		t.Errorf("--verify --limit: exit %d %s", code, errb)
	}

	if strings.Contains(printed.String(), secret[20:60]) {
		t.Errorf("the signing key was printed")
	}
}

// putAll writes value under key in both clusters' drills topic (nil
// removes it).
func putAll(t *testing.T, topo *topology.Topology, key string, value []byte) {
	t.Helper()
	for _, c := range topo.ClusterNames() {
		if err := kvstore.Put(kfaketest.Ctx(t, 10*time.Second), kfaketest.Dial(t, topo, c), topology.DrillsTopic, key, value); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSigningKeyNeverPrinted: a signing key given as ${VAR} (PEM) or a
// file is in no output of validate (every format) nor evidence-key, and a
// broken one's error names the variable, not its value.
func TestSigningKeyNeverPrinted(t *testing.T) {
	dir := t.TempDir()
	keyFile, secret := writeSigningKey(t, dir)
	pemKey, _ := os.ReadFile(keyFile)
	head := "name: t\nclusters:\n  east:\n    bootstrap: [127.0.0.1:1]\n  west:\n    bootstrap: [127.0.0.1:2]\nactive: east\nstandby: west\nmirror:\n  topics: {include: [orders]}\n"
	for name, value := range map[string]string{"env": "\"${DRCTL_TEST_EVIDENCE_KEY}\"", "file": keyFile} {
		path := filepath.Join(dir, name+".yaml")
		_ = os.WriteFile(path, []byte(head+"drills:\n  evidence:\n    signing_key: "+value+"\n"), 0o600)
		t.Setenv("DRCTL_TEST_EVIDENCE_KEY", string(pemKey))
		for _, args := range [][]string{{"validate"}, {"-o", "json", "validate"}, {"-o", "yaml", "validate"}, {"drill", "evidence-key"}, {"drill", "evidence-key", "-o", "json"}} {
			out, errb, code := drctl(t, append([]string{"-c", path}, args...)...)
			if code != exitOK {
				t.Errorf("%s %v: exit %d %s", name, args, code, errb)
			}
			if strings.Contains(out+errb, secret[20:60]) || strings.Contains(out+errb, "PRIVATE KEY") {
				t.Errorf("%s %v printed the signing key:\n%s%s", name, args, out, errb)
			}
		}
	}
	t.Setenv("DRCTL_TEST_EVIDENCE_KEY", strings.Replace(string(pemKey), "MC4C", "MC5C", 1))
	path := filepath.Join(dir, "env.yaml")
	_, errb, code := drctl(t, "-c", path, "validate")
	if code != exitBadInput || !strings.Contains(errb, "${DRCTL_TEST_EVIDENCE_KEY} does not hold an ed25519 private key") || strings.Contains(errb, secret[20:60]) {
		t.Errorf("a broken key: exit %d %s", code, errb)
	}
}
