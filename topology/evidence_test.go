package topology

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testKey returns an ed25519 key and its PKCS#8 PEM.
func testKey(t *testing.T) (ed25519.PrivateKey, string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return priv, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// TestSigningKey: drills.evidence.signing_key takes a key file's path or a
// ${VAR} holding the key (PEM or base64 seed) or a path; every bad value
// is a load error at its line that names the fix, and no message, nor any
// printing of the topology, shows the key.
func TestSigningKey(t *testing.T) {
	priv, pemKey := testKey(t)
	seed := base64.StdEncoding.EncodeToString(priv.Seed())
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "evidence.pem")
	if err := os.WriteFile(keyFile, []byte(pemKey), 0o600); err != nil {
		t.Fatal(err)
	}
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecDER, _ := x509.MarshalPKCS8PrivateKey(ec)
	ecFile := filepath.Join(dir, "ec.pem")
	_ = os.WriteFile(ecFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER}), 0o600)
	junkFile := filepath.Join(dir, "junk.pem")
	_ = os.WriteFile(junkFile, []byte("hello, not a key\n"), 0o600)
	vars := map[string]string{"KEY_PEM": pemKey, "KEY_SEED": seed, "KEY_PATH": keyFile, "KEY_JUNK": "s3cret-but-not-a-key", "KEY_BAD_PEM": "-----BEGIN PRIVATE KEY-----\nAAAA" + seed + "\n-----END PRIVATE KEY-----\n"}
	load := func(value string) (*Topology, error) {
		return Parse("drctl.yaml", []byte(drillsHead+"drills:\n  evidence:\n    signing_key: "+value+"\n"), env(vars))
	}
	for _, tc := range []struct{ value, source string }{
		{keyFile, "file " + keyFile},
		{"${KEY_PEM}", "${KEY_PEM}"},
		{"${KEY_SEED}", "${KEY_SEED}"},
		{"${KEY_PATH}", "file " + keyFile},
	} {
		topo, err := load(tc.value)
		if err != nil {
			t.Errorf("%s: %v", tc.value, err)
			continue
		}
		k := topo.Drills.Evidence.SigningKey
		if k == nil || k.Source != tc.source || !k.PublicKey().Equal(priv.Public()) {
			t.Errorf("%s: key %v", tc.value, k)
			continue
		}
		if !ed25519.Verify(k.PublicKey(), []byte("m"), k.Sign([]byte("m"))) {
			t.Errorf("%s: the key does not sign", tc.value)
		}
		printed := fmt.Sprintf("%v %+v %#v %+v %v %+v", k, *k, k, topo.Drills, topo.Drills.Evidence, *topo)
		for _, secret := range []string{seed, base64.StdEncoding.EncodeToString(priv), fmt.Sprintf("%x", priv.Seed()[:8])} {
			if strings.Contains(printed, secret) {
				t.Errorf("%s: printing the topology shows the key: %s", tc.value, printed)
			}
		}
	}
	if topo, err := Parse("drctl.yaml", []byte(drillsHead), env(nil)); err != nil || topo.Drills.Evidence.SigningKey != nil {
		t.Errorf("no evidence section: %v %v", topo, err)
	}

	for _, tc := range []struct{ value, want string }{
		{"''", "is empty"},
		{"/nonexistent/evidence.pem", `the key file "/nonexistent/evidence.pem" cannot be read: no such file or directory`},
		{junkFile, "does not hold an ed25519 private key: neither PEM nor base64"},
		{ecFile, "an ECDSA key, not ed25519"},
		{"${KEY_JUNK}", "${KEY_JUNK} holds neither an ed25519 private key nor the path of a readable file"},
		{"${KEY_BAD_PEM}", "${KEY_BAD_PEM} does not hold an ed25519 private key"},
		{"${KEY_UNSET}", "environment variable KEY_UNSET is not set"},
		{"\"" + seed + "\"", "the topology file holds the private key itself"},
		{"|\n      " + strings.ReplaceAll(strings.TrimSpace(pemKey), "\n", "\n      "), "the topology file holds the private key itself"},
	} {
		_, err := load(tc.value)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "drctl.yaml:12: ") {
			t.Errorf("%s: %v, want drctl.yaml:12 and %q", tc.value, err, tc.want)
			continue
		}
		if tc.want != "is empty" && !strings.Contains(err.Error(), "environment variable") && !strings.Contains(err.Error(), "evidence-key --new FILE") && !strings.Contains(err.Error(), "move the key") {
			t.Errorf("%s: the error names no fix: %v", tc.value, err)
		}
		for _, secret := range []string{seed, "s3cret-but-not-a-key", "AAAA"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: the error shows a secret: %v", tc.value, err)
			}
		}
	}
	if _, err := load("{file: x}"); err == nil || !strings.Contains(err.Error(), "drctl.yaml:12") {
		t.Errorf("a mapping: %v", err)
	}
	if _, err := Parse("drctl.yaml", []byte(drillsHead+"drills:\n  evidence:\n    sigining_key: x\n"), env(nil)); err == nil || !strings.Contains(err.Error(), "sigining_key") {
		t.Errorf("an unknown key: %v", err)
	}

	// A key file that others may read is a warning.
	open := filepath.Join(dir, "open.pem")
	_ = os.WriteFile(open, []byte(pemKey), 0o644)
	topo, err := load(open)
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.Warnings) != 1 || !strings.Contains(topo.Warnings[0].Msg, "chmod 600 "+open) || topo.Warnings[0].Line != 12 {
		t.Errorf("warnings %+v", topo.Warnings)
	}
}
