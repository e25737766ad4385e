package evidence

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// PayloadType is the DSSE payload type of a drill record's canonical JSON.
const PayloadType = "application/vnd.drctl.drill-report+json"

// ErrInvalid is wrapped by every reason an envelope does not verify (a
// wrong key, a changed payload or signature, another payload type).
var ErrInvalid = errors.New("invalid")

// ErrNotEnvelope is wrapped when bytes are not a DSSE envelope at all.
var ErrNotEnvelope = errors.New("not a DSSE envelope")

// Envelope is a DSSE envelope: the payload, base64, and its signatures.
type Envelope struct {
	PayloadType string      `json:"payloadType"`
	Payload     string      `json:"payload"`
	Signatures  []Signature `json:"signatures"`
}

// Signature is one signature of an envelope: the signing key's id and the
// signature over PAE(payloadType, payload), base64.
type Signature struct {
	KeyID string `json:"keyid"`
	Sig   string `json:"sig"`
}

// Signer signs with an ed25519 private key it keeps to itself.
type Signer interface {
	PublicKey() ed25519.PublicKey
	Sign(message []byte) []byte
}

// PAE is DSSE v1's pre-authentication encoding, what is signed:
// "DSSEv1" SP len(type) SP type SP len(payload) SP payload, lengths in
// bytes as decimal ASCII.
func PAE(payloadType string, payload []byte) []byte {
	return fmt.Appendf(nil, "DSSEv1 %d %s %d %s", len(payloadType), payloadType, len(payload), payload)
}

// Sign returns the envelope of payload, signed by s.
func Sign(payload []byte, s Signer) *Envelope {
	sig := s.Sign(PAE(PayloadType, payload))
	return &Envelope{PayloadType: PayloadType, Payload: base64.StdEncoding.EncodeToString(payload),
		Signatures: []Signature{{KeyID: KeyID(s.PublicKey()), Sig: base64.StdEncoding.EncodeToString(sig)}}}
}

// Marshal returns the envelope as the JSON file drctl writes (indented,
// one trailing newline).
func (e *Envelope) Marshal() []byte {
	b, _ := json.MarshalIndent(e, "", "  ") // strings only: cannot fail
	return append(b, '\n')
}

// ParseEnvelope reads a DSSE envelope; an error wraps ErrNotEnvelope.
func ParseEnvelope(data []byte) (*Envelope, error) {
	var e Envelope
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotEnvelope, err)
	}
	if e.PayloadType == "" || e.Payload == "" {
		return nil, fmt.Errorf("%w: it has no payloadType or payload", ErrNotEnvelope)
	}
	return &e, nil
}

// PayloadBytes decodes the payload. DSSE allows standard or URL-safe
// base64, padded or not.
func (e *Envelope) PayloadBytes() ([]byte, error) {
	b, err := decodeBase64(e.Payload)
	if err != nil {
		return nil, fmt.Errorf("%w: the payload is not base64 (%v)", ErrInvalid, err)
	}
	return b, nil
}

// KeyIDs lists the key ids of the envelope's signatures.
func (e *Envelope) KeyIDs() []string {
	var out []string
	for _, s := range e.Signatures {
		out = append(out, s.KeyID)
	}
	return out
}

// Verify checks the envelope with pub and returns its payload. It fails,
// wrapping ErrInvalid and saying why, when the payload type is not
// PayloadType, when no signature carries pub's key id, or when the
// signature that does does not verify over this payload.
func Verify(e *Envelope, pub ed25519.PublicKey) ([]byte, error) {
	if e.PayloadType != PayloadType {
		return nil, fmt.Errorf("%w: the payload type is %q, not a drill report (%s)", ErrInvalid, e.PayloadType, PayloadType)
	}
	payload, err := e.PayloadBytes()
	if err != nil {
		return nil, err
	}
	if len(e.Signatures) == 0 {
		return nil, fmt.Errorf("%w: the envelope holds no signature", ErrInvalid)
	}
	id := KeyID(pub)
	i := slices.IndexFunc(e.Signatures, func(s Signature) bool { return s.KeyID == id })
	if i < 0 {
		return nil, fmt.Errorf("%w: signed by key %s, not by the key given (%s): check it with the public key of the key that signed it", ErrInvalid, strings.Join(e.KeyIDs(), ", "), id)
	}
	sig, err := decodeBase64(e.Signatures[i].Sig)
	if err != nil {
		return nil, fmt.Errorf("%w: the signature by key %s is not base64 (%v): it was changed after signing", ErrInvalid, id, err)
	}
	if len(sig) != ed25519.SignatureSize {
		return nil, fmt.Errorf("%w: the signature by key %s is %d bytes, not the %d of an ed25519 signature: it was changed after signing", ErrInvalid, id, len(sig), ed25519.SignatureSize)
	}
	if !ed25519.Verify(pub, PAE(e.PayloadType, payload), sig) {
		return nil, fmt.Errorf("%w: the signature by key %s does not match the payload: the report or its signature was changed after signing", ErrInvalid, id)
	}
	return payload, nil
}

func decodeBase64(s string) ([]byte, error) {
	var err error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		var b []byte
		if b, err = enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, err
}

// Digest is "sha256:" and the hex SHA-256 of b.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// KeyID names a public key: the Digest of its PKIX (SubjectPublicKeyInfo)
// DER encoding, what `openssl pkey -pubout -outform DER | sha256sum` gives.
func KeyID(pub ed25519.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil { // only for a key of the wrong length
		return Digest(pub)
	}
	return Digest(der)
}

// MarshalPublicKey writes pub as a PEM "PUBLIC KEY" block (PKIX), as
// `openssl pkey -pubout` does.
func MarshalPublicKey(pub ed25519.PublicKey) []byte {
	der, _ := x509.MarshalPKIXPublicKey(pub)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// ParsePublicKey reads an ed25519 public key: a PEM "PUBLIC KEY" block
// (what drctl drill evidence-key and `openssl pkey -pubout` print) or the
// base64 of its 32 bytes. A private key is refused: an auditor needs only
// the public one.
func ParsePublicKey(data []byte) (ed25519.PublicKey, error) {
	if block, _ := pem.Decode(data); block != nil {
		switch block.Type {
		case "PUBLIC KEY":
			k, err := x509.ParsePKIXPublicKey(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("the PEM PUBLIC KEY block does not parse: %v", err)
			}
			pub, ok := k.(ed25519.PublicKey)
			if !ok {
				return nil, fmt.Errorf("the public key is a %T, not ed25519", k)
			}
			return pub, nil
		case "PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY":
			return nil, errors.New("this is a private key; give the public key (drctl drill evidence-key prints it)")
		}
		return nil, fmt.Errorf("a PEM %q block is not a public key; give a PEM PUBLIC KEY block", block.Type)
	}
	b, err := decodeBase64(strings.TrimSpace(string(data)))
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, errors.New("not an ed25519 public key: give a PEM PUBLIC KEY block (drctl drill evidence-key prints it) or the base64 of the key's 32 bytes")
	}
	return ed25519.PublicKey(b), nil
}
