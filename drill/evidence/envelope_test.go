package evidence

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// key is a Signer over a fixed test key.
type key struct{ priv ed25519.PrivateKey }

func (k key) PublicKey() ed25519.PublicKey { return k.priv.Public().(ed25519.PublicKey) }
func (k key) Sign(m []byte) []byte         { return ed25519.Sign(k.priv, m) }

func newKey(t *testing.T) key {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key{priv}
}

// TestPAE: the example of the DSSE v1 specification.
func TestPAE(t *testing.T) {
	got := string(PAE("http://example.com/HelloWorld", []byte("hello world")))
	if want := "DSSEv1 29 http://example.com/HelloWorld 11 hello world"; got != want {
		t.Errorf("PAE = %q, want %q", got, want)
	}
}

// TestVerify: a signed envelope verifies and gives back its payload; a
// changed payload, a changed signature, another key and another payload
// type each fail with ErrInvalid and say why.
func TestVerify(t *testing.T) {
	k := newKey(t)
	payload := []byte("{\n  \"id\": \"drill-canary-1\"\n}\n")
	env := Sign(payload, k)
	back, err := ParseEnvelope(env.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	got, err := Verify(back, k.PublicKey())
	if err != nil || string(got) != string(payload) {
		t.Fatalf("Verify = %q, %v", got, err)
	}
	if back.Signatures[0].KeyID != KeyID(k.PublicKey()) || !strings.HasPrefix(back.Signatures[0].KeyID, "sha256:") {
		t.Errorf("keyid %q", back.Signatures[0].KeyID)
	}
	flipped := func(s string) string {
		b, _ := base64.StdEncoding.DecodeString(s)
		b[len(b)/2] ^= 1
		return base64.StdEncoding.EncodeToString(b)
	}
	for _, tc := range []struct {
		name   string
		change func(e *Envelope)
		pub    ed25519.PublicKey
		why    string
	}{
		{"payload changed", func(e *Envelope) { e.Payload = flipped(e.Payload) }, nil, "does not match the payload"},
		{"signature changed", func(e *Envelope) { e.Signatures[0].Sig = flipped(e.Signatures[0].Sig) }, nil, "does not match the payload"},
		{"signature cut", func(e *Envelope) { e.Signatures[0].Sig = e.Signatures[0].Sig[:20] }, nil, "not the 64 of an ed25519 signature"},
		{"signature not base64", func(e *Envelope) { e.Signatures[0].Sig = "%%%" }, nil, "is not base64"},
		{"no signature", func(e *Envelope) { e.Signatures = nil }, nil, "holds no signature"},
		{"wrong key", func(*Envelope) {}, newKey(t).PublicKey(), "not by the key given"},
		{"other payload type", func(e *Envelope) { e.PayloadType = "application/vnd.in-toto+json" }, nil, "not a drill report"},
	} {
		e := Sign(payload, k)
		tc.change(e)
		pub := tc.pub
		if pub == nil {
			pub = k.PublicKey()
		}
		_, err := Verify(e, pub)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: %v, want ErrInvalid saying %q", tc.name, err, tc.why)
		}
	}
	for _, bad := range []string{"", "not json", `{"id": "drill-1"}`} {
		if _, err := ParseEnvelope([]byte(bad)); !errors.Is(err, ErrNotEnvelope) {
			t.Errorf("ParseEnvelope(%q) = %v", bad, err)
		}
	}
}

func TestParsePublicKey(t *testing.T) {
	k := newKey(t)
	pemKey := MarshalPublicKey(k.PublicKey())
	if !strings.HasPrefix(string(pemKey), "-----BEGIN PUBLIC KEY-----") {
		t.Fatalf("%s", pemKey)
	}
	for _, in := range [][]byte{pemKey, []byte(base64.StdEncoding.EncodeToString(k.PublicKey()) + "\n")} {
		pub, err := ParsePublicKey(in)
		if err != nil || !pub.Equal(k.PublicKey()) {
			t.Errorf("ParsePublicKey(%q) = %v, %v", in, pub, err)
		}
	}
	for in, why := range map[string]string{
		"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n": "this is a private key",
		"hello": "not an ed25519 public key",
		"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n": "not a public key",
	} {
		if _, err := ParsePublicKey([]byte(in)); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("ParsePublicKey(%q) = %v, want %q", in, err, why)
		}
	}
}
