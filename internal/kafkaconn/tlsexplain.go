package kafkaconn

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/drctl/drctl/topology"
)

// tlsHint names the fix for a failed TLS connection, or returns "" when err
// is not one. It tells apart the failures an operator meets (the broker's
// certificate not issued by tls.ca_file, expired, or not for the name
// dialled; the broker refusing drctl's client certificate, or wanting one;
// TLS spoken to a plaintext listener and the reverse) and names the
// setting to change. Paths are named; no key material is read beyond the
// client certificate's validity dates.
func tlsHint(c *topology.Cluster, err error) string {
	msg := err.Error()
	var unknownCA x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var host x509.HostnameError
	switch {
	case errors.As(err, &unknownCA) || strings.Contains(msg, "x509: certificate signed by unknown authority"):
		return fmt.Sprintf("the broker's certificate is not issued by a CA that %s trusts: point tls.ca_file at the CA that issued the brokers' certificates (or add it to that file)", caSource(c))
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired || strings.Contains(msg, "x509: certificate has expired or is not yet valid"):
		return "the broker's certificate has expired (or is not valid yet): renew the listener's certificate (ssl.keystore on the brokers), or check this machine's clock"
	case errors.As(err, &host) || strings.Contains(msg, "x509: certificate is valid for"):
		return "the broker's certificate is not for the address drctl dials: use a bootstrap address the certificate names, or set tls.server_name to a name it holds (hostname verification stays on)"
	case strings.Contains(msg, "x509:") || strings.Contains(msg, "tls: failed to verify certificate"):
		return fmt.Sprintf("the broker's certificate failed verification: check tls.ca_file (%s) and tls.server_name against the listener's certificate", caSource(c))
	case strings.Contains(msg, "remote error: tls:"):
		return clientCertHint(c, msg)
	case strings.Contains(msg, "first record does not look like a TLS handshake"):
		return "the listener does not speak TLS: remove tls from this cluster, or use the address of its SSL or SASL_SSL listener"
	case c.TLS != nil && isEOF(err):
		return "the broker closed the connection during the TLS handshake or authentication: check that this address is an SSL or SASL_SSL listener (a plaintext listener drops a TLS client), and the sasl settings if it is SASL_SSL"
	case c.TLS == nil && c.SASL == nil && isEOF(err):
		return "the broker closed the connection: if this listener uses TLS (SSL or SASL_SSL), add tls (with ca_file) to this cluster; if it uses SASL, add sasl"
	case strings.Contains(msg, "tls:"):
		return "TLS failed: check tls.ca_file, cert_file, key_file and server_name against the listener's settings"
	}
	return ""
}

// clientCertHint explains a TLS alert from the broker: it refused the
// handshake, which (with the broker's certificate verified) is about the
// client certificate drctl sent or did not send.
func clientCertHint(c *topology.Cluster, msg string) string {
	if c.TLS == nil || c.TLS.CertFile == "" {
		return "the broker refused the TLS handshake; this listener probably requires a client certificate (ssl.client.auth=required): set tls.cert_file and tls.key_file for this cluster"
	}
	if notAfter, ok := certNotAfter(c.TLS.CertFile); ok && time.Now().After(notAfter) {
		return fmt.Sprintf("the broker refused drctl's client certificate: tls.cert_file %s expired on %s; issue a new one and point tls.cert_file and tls.key_file at it",
			c.TLS.CertFile, notAfter.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("the broker refused drctl's client certificate (tls.cert_file %s): it must be issued by a CA in the listener's trust store (ssl.truststore on the brokers) and be valid; use a certificate from that CA", c.TLS.CertFile)
}

// certNotAfter reads the end of validity of the first certificate in a
// PEM file.
func certNotAfter(path string) (time.Time, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, false
	}
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return time.Time{}, false
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return time.Time{}, false
		}
		return cert.NotAfter, true
	}
}

func caSource(c *topology.Cluster) string {
	if c.TLS != nil && c.TLS.CAFile != "" {
		return "tls.ca_file " + c.TLS.CAFile
	}
	return "the system's trust store (no tls.ca_file is set)"
}

func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || strings.HasSuffix(err.Error(), "EOF")
}
