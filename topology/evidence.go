package topology

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// Evidence is drills.evidence: how drill records are sealed beyond the
// hash chain every record carries.
type Evidence struct {
	// SigningKey signs each drill's record (nil: records are chained,
	// not signed).
	SigningKey *SigningKey
}

// SigningKey is the ed25519 private key that signs drill records. It never
// shows itself: its String, GoString and any fmt verb print where it came
// from, not the key; it has no exported field that holds the key.
type SigningKey struct {
	key ed25519.PrivateKey
	// Source is where the key was read from, as the topology writes it:
	// "file /etc/drctl/evidence.pem" or "${DRCTL_EVIDENCE_KEY}".
	Source string
}

// PublicKey is the key's public half, what an auditor checks signatures
// with.
func (k *SigningKey) PublicKey() ed25519.PublicKey {
	return k.key.Public().(ed25519.PublicKey)
}

// Sign signs message.
func (k *SigningKey) Sign(message []byte) []byte { return ed25519.Sign(k.key, message) }

func (k SigningKey) String() string   { return "ed25519 signing key (" + k.Source + ")" }
func (k SigningKey) GoString() string { return k.String() }

// Format prints the key as String, whatever the verb.
func (k SigningKey) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(k.String())) }

// NewSigningKey wraps a private key (tests, and drctl drill evidence-key
// --new).
func NewSigningKey(priv ed25519.PrivateKey, source string) *SigningKey {
	return &SigningKey{key: priv, Source: source}
}

// maxKeyFile bounds a drills.evidence.signing_key file: it holds one key.
const maxKeyFile = 64 << 10

type rawEvidence struct {
	SigningKey *string `yaml:"signing_key"`
}

// signingKeyFix is how to give a signing key, for every message about one.
const signingKeyFix = "give the path of a file holding an ed25519 private key (PEM, as `drctl drill evidence-key --new FILE` or `openssl genpkey -algorithm ed25519 -out FILE` writes it), or ${VAR} naming an environment variable that holds the PEM"

// buildEvidence reads drills.evidence. The signing key is a file's path,
// or a ${VAR} whose value is the key itself (or a path). A key written out
// in the topology file is refused: whoever reads the topology could sign.
// No message shows a key, nor a value a ${VAR} expanded to.
func buildEvidence(t *Topology, raw *rawDrills, root *yaml.Node, x *expansions) error {
	if raw == nil || raw.Evidence == nil || raw.Evidence.SigningKey == nil {
		return nil
	}
	keys := []string{"drills", "evidence", "signing_key"}
	at := func(format string, a ...any) error {
		return &Error{Line: lineOf(root, keys...), Msg: "drills.evidence.signing_key: " + fmt.Sprintf(format, a...)}
	}
	val := strings.TrimSpace(*raw.Evidence.SigningKey)
	written, fromEnv := val, false
	if n := valueAt(root, keys...); n != nil {
		written, fromEnv = strings.TrimSpace(x.asWritten(n)), x.asWritten(n) != n.Value
	}
	if val == "" {
		return at("is empty; %s, or remove it (records are then chained but not signed)", signingKeyFix)
	}
	if looksLikeKey(val) {
		if !fromEnv {
			return at("the topology file holds the private key itself, so whoever reads the file could sign drill reports; move the key to a file readable by drctl alone (chmod 600) and write its path, or to an environment variable and write ${VAR}")
		}
		key, err := parseSigningKey([]byte(val))
		if err != nil {
			return at("%s does not hold an ed25519 private key: %v; %s", written, err, signingKeyFix)
		}
		t.Drills.Evidence.SigningKey = &SigningKey{key: key, Source: written}
		return nil
	}
	data, err := readSmall(val, maxKeyFile)
	switch {
	case err != nil && fromEnv && !strings.ContainsAny(val, "/\\") && !strings.HasSuffix(val, ".pem"):
		return at("%s holds neither an ed25519 private key nor the path of a readable file (%v); %s", written, pathCause(err), signingKeyFix)
	case errors.Is(err, errTooLarge):
		return at("the key file %q is larger than %d KiB; a key file holds one PEM key", val, maxKeyFile>>10)
	case err != nil:
		return at("the key file %q cannot be read: %v; %s", val, pathCause(err), signingKeyFix)
	}
	key, err := parseSigningKey(data)
	if err != nil {
		return at("the key file %q does not hold an ed25519 private key: %v; %s", val, err, signingKeyFix)
	}
	t.Drills.Evidence.SigningKey = &SigningKey{key: key, Source: "file " + val}
	return nil
}

// looksLikeKey reports whether s is key material rather than a path: a PEM
// block, or the base64 of an ed25519 seed (32 bytes) or private key (64).
func looksLikeKey(s string) bool {
	if strings.HasPrefix(s, "-----BEGIN") {
		return true
	}
	b, err := base64.StdEncoding.DecodeString(s)
	return err == nil && (len(b) == ed25519.SeedSize || len(b) == ed25519.PrivateKeySize)
}

// parseSigningKey reads an ed25519 private key: a PEM PKCS#8 "PRIVATE
// KEY" block, or the base64 of the 32-byte seed or the 64-byte key. No
// error quotes the data.
func parseSigningKey(data []byte) (ed25519.PrivateKey, error) {
	s := strings.TrimSpace(string(data))
	if block, _ := pem.Decode([]byte(s)); block != nil {
		if block.Type != "PRIVATE KEY" {
			return nil, fmt.Errorf("a PEM %q block; give a PKCS#8 PRIVATE KEY block", block.Type)
		}
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, errors.New("the PRIVATE KEY block does not parse as PKCS#8")
		}
		priv, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("%s, not ed25519", keyKind(k))
		}
		return priv, nil
	}
	if strings.HasPrefix(s, "-----BEGIN") {
		return nil, errors.New("a PEM block that does not parse")
	}
	b, err := base64.StdEncoding.DecodeString(s)
	switch {
	case err != nil:
		return nil, errors.New("neither PEM nor base64")
	case len(b) == ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(b), nil
	case len(b) == ed25519.PrivateKeySize:
		priv := ed25519.NewKeyFromSeed(b[:ed25519.SeedSize])
		if !priv.Public().(ed25519.PublicKey).Equal(ed25519.PublicKey(b[ed25519.SeedSize:])) {
			return nil, errors.New("the 64 bytes are not a seed and its public key")
		}
		return priv, nil
	}
	return nil, fmt.Errorf("base64 of %d bytes; an ed25519 key is 32 (seed) or 64", len(b))
}

func keyKind(k any) string {
	switch k.(type) {
	case *rsa.PrivateKey:
		return "an RSA key"
	case *ecdsa.PrivateKey:
		return "an ECDSA key"
	case *ecdh.PrivateKey:
		return "an X25519 (ECDH) key"
	}
	return fmt.Sprintf("a %T", k)
}

// signingKeyFileMode warns when the group or others may read the signing
// key's file.
func signingKeyFileMode(raw *rawFile, root *yaml.Node, x *expansions) []Warning {
	if raw.Drills == nil || raw.Drills.Evidence == nil || raw.Drills.Evidence.SigningKey == nil {
		return nil
	}
	path := strings.TrimSpace(*raw.Drills.Evidence.SigningKey)
	if looksLikeKey(path) {
		return nil
	}
	st, err := os.Stat(path)
	if err != nil || !readableByOthers(st.Mode()) {
		return nil
	}
	written := path
	if n := valueAt(root, "drills", "evidence", "signing_key"); n != nil {
		written = x.asWritten(n)
	}
	return []Warning{{Line: lineOf(root, "drills", "evidence", "signing_key"), Rule: RuleSecretFileMode, Msg: fmt.Sprintf(
		"drills.evidence.signing_key %s is readable by group or others (mode %04o), who could sign drill reports; restrict it: chmod 600 %s",
		written, st.Mode().Perm(), written)}}
}
