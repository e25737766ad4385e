//go:build e2e

package e2e

import (
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"

	"github.com/IBM/sarama"
)

// scramClient is a SCRAM (RFC 5802) client for sarama's SCRAMClient interface,
// built on the standard library only. It does no SASLprep: the test users'
// names and passwords are plain ASCII. It checks the server's nonce and, at the
// end, the server's signature, so a broker that does not know the password
// cannot pass for one that does.
type scramClient struct {
	newHash func() hash.Hash

	step        int
	user        string
	password    string
	gs2Header   string
	clientNonce string
	clientFirst string // client-first-message-bare
	authMessage string
	saltedPass  []byte
	done        bool
}

var _ sarama.SCRAMClient = (*scramClient)(nil)

func newSCRAMClient(newHash func() hash.Hash) func() sarama.SCRAMClient {
	return func() sarama.SCRAMClient { return &scramClient{newHash: newHash} }
}

func (c *scramClient) Begin(user, password, authzID string) error {
	nonce := make([]byte, 24)
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	c.user, c.password = user, password
	c.gs2Header = "n,,"
	if authzID != "" {
		c.gs2Header = "n,a=" + scramEscape(authzID) + ","
	}
	c.clientNonce = base64.RawStdEncoding.EncodeToString(nonce)
	c.step, c.done = 0, false
	return nil
}

func (c *scramClient) Step(challenge string) (string, error) {
	c.step++
	switch c.step {
	case 1: // send client-first-message
		c.clientFirst = "n=" + scramEscape(c.user) + ",r=" + c.clientNonce
		return c.gs2Header + c.clientFirst, nil
	case 2: // server-first-message in, client-final-message out
		return c.final(challenge)
	case 3: // server-final-message: verify the server's signature
		c.done = true
		attrs := scramAttrs(challenge)
		if e, ok := attrs["e"]; ok {
			return "", fmt.Errorf("scram: server error %q", e)
		}
		got, err := base64.StdEncoding.DecodeString(attrs["v"])
		if err != nil || len(got) == 0 {
			return "", fmt.Errorf("scram: bad server-final-message")
		}
		serverKey := c.hmac(c.saltedPass, "Server Key")
		if !hmac.Equal(got, c.hmac(serverKey, c.authMessage)) {
			return "", errors.New("scram: server signature does not match")
		}
		return "", nil
	default:
		return "", errors.New("scram: unexpected extra step")
	}
}

func (c *scramClient) Done() bool { return c.done }

func (c *scramClient) final(serverFirst string) (string, error) {
	attrs := scramAttrs(serverFirst)
	if e, ok := attrs["e"]; ok {
		return "", fmt.Errorf("scram: server error %q", e)
	}
	nonce := attrs["r"]
	if !strings.HasPrefix(nonce, c.clientNonce) || len(nonce) == len(c.clientNonce) {
		return "", errors.New("scram: server nonce does not extend the client nonce")
	}
	salt, err := base64.StdEncoding.DecodeString(attrs["s"])
	if err != nil || len(salt) == 0 {
		return "", errors.New("scram: bad salt")
	}
	iters, err := strconv.Atoi(attrs["i"])
	if err != nil || iters < 1 {
		return "", errors.New("scram: bad iteration count")
	}
	c.saltedPass, err = pbkdf2.Key(c.newHash, c.password, salt, iters, c.newHash().Size())
	if err != nil {
		return "", err
	}
	withoutProof := "c=" + base64.StdEncoding.EncodeToString([]byte(c.gs2Header)) + ",r=" + nonce
	c.authMessage = c.clientFirst + "," + serverFirst + "," + withoutProof

	clientKey := c.hmac(c.saltedPass, "Client Key")
	h := c.newHash()
	h.Write(clientKey)
	storedKey := h.Sum(nil)
	signature := c.hmac(storedKey, c.authMessage)
	proof := bytes.Clone(clientKey)
	for i := range proof {
		proof[i] ^= signature[i]
	}
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof), nil
}

func (c *scramClient) hmac(key []byte, msg string) []byte {
	m := hmac.New(c.newHash, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// scramAttrs splits "a=1,b=2" into a map; values may contain '='.
func scramAttrs(msg string) map[string]string {
	out := map[string]string{}
	for part := range strings.SplitSeq(msg, ",") {
		if k, v, ok := strings.Cut(part, "="); ok {
			out[k] = v
		}
	}
	return out
}

// scramEscape encodes a SCRAM saslname: '=' and ',' are escaped.
func scramEscape(s string) string {
	return strings.NewReplacer("=", "=3D", ",", "=2C").Replace(s)
}
