package kafkaconn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/topology"
)

// writeCert writes a self-signed certificate valid until notAfter.
func writeCert(t *testing.T, notAfter time.Time) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "drctl"},
		NotBefore: notAfter.Add(-48 * time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "client.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestExplainTLS: each TLS failure an operator meets gets the fix that
// names the setting; the e2e tier (e2e/tls_test.go) produces the same
// failures with real brokers.
func TestExplainTLS(t *testing.T) {
	expired := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	expiredCert, validCert := writeCert(t, expired), writeCert(t, time.Now().Add(time.Hour))
	verifyErr := func(err error) error { return fmt.Errorf("tls: failed to verify certificate: %w", err) }
	remote := func(alert string) error {
		return &net.OpError{Op: "remote error", Err: errors.New("tls: " + alert)}
	}
	withTLS := func(tls *topology.TLS, sasl bool) *topology.Cluster {
		c := &topology.Cluster{Name: "east", Bootstrap: []string{"127.0.0.1:9093"}, TLS: tls}
		if sasl {
			c.SASL = &topology.SASL{Mechanism: "SCRAM-SHA-512", Username: "drctl", Password: "hunter2"}
		}
		return c
	}
	ca := &topology.TLS{CAFile: "/etc/drctl/ca.pem"}
	cases := []struct {
		name    string
		cluster *topology.Cluster
		err     error
		want    []string
	}{
		{"unknown authority", withTLS(ca, true), verifyErr(x509.UnknownAuthorityError{}),
			[]string{"not issued by a CA that tls.ca_file /etc/drctl/ca.pem trusts", "point tls.ca_file at the CA"}},
		{"unknown authority, system roots", withTLS(&topology.TLS{}, false), verifyErr(x509.UnknownAuthorityError{}),
			[]string{"the system's trust store (no tls.ca_file is set)"}},
		{"broker certificate expired", withTLS(ca, false), verifyErr(x509.CertificateInvalidError{Reason: x509.Expired}),
			[]string{"the broker's certificate has expired", "renew the listener's certificate"}},
		{"name not in the certificate", withTLS(ca, false), verifyErr(x509.HostnameError{Certificate: &x509.Certificate{DNSNames: []string{"localhost"}}, Host: "kafka-1"}),
			[]string{"use a bootstrap address the certificate names, or set tls.server_name"}},
		{"client certificate expired", withTLS(&topology.TLS{CAFile: "ca.pem", CertFile: expiredCert, KeyFile: "k.pem"}, false), remote("unknown certificate"),
			[]string{"refused drctl's client certificate: tls.cert_file " + expiredCert + " expired on 2024-03-01T12:00:00Z", "issue a new one"}},
		{"client certificate refused", withTLS(&topology.TLS{CAFile: "ca.pem", CertFile: validCert, KeyFile: "k.pem"}, false), remote("bad certificate"),
			[]string{"refused drctl's client certificate (tls.cert_file " + validCert + ")", "issued by a CA in the listener's trust store"}},
		{"no client certificate", withTLS(ca, false), remote("bad certificate"),
			[]string{"requires a client certificate", "set tls.cert_file and tls.key_file"}},
		{"TLS to a plaintext listener", withTLS(ca, true), io.EOF,
			[]string{"check that this address is an SSL or SASL_SSL listener"}},
		{"plaintext to a TLS listener", withTLS(nil, false), io.ErrUnexpectedEOF,
			[]string{"add tls (with ca_file)"}},
		{"plaintext SASL to a TLS listener", withTLS(nil, true), io.ErrUnexpectedEOF,
			[]string{"check sasl.mechanism, username and password", "a TLS listener, SSL or SASL_SSL, also needs tls"}},
		{"not TLS", withTLS(ca, false), errors.New("tls: first record does not look like a TLS handshake"),
			[]string{"the listener does not speak TLS"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Explain(c.cluster, c.err)
			if !errors.Is(err, ErrUnreachable) {
				t.Errorf("%v does not wrap ErrUnreachable", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q\n  does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("%q shows the password", err)
			}
		})
	}
}
