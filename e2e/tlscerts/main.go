package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// version changes whenever the set changes shape; a directory holding an
// older set is written again.
const version = "2"

// Files of a set, relative to its directory. Clients' certificates and keys
// are separate files (topology tls.cert_file, tls.key_file); a broker's key
// store holds key and chain in one file (Kafka's PEM key store).
const (
	CAFile             = "ca.pem"
	BrokerKeystore     = "broker-keystore.pem"
	BrokerExpiredStore = "broker-expired-keystore.pem"
	OtherCAFile        = "other-ca.pem"
	completeMarker     = ".complete"
	validFor           = 10 * 365 * 24 * time.Hour
	expiredSince       = 24 * time.Hour
	brokerCommonName   = "drctl-e2e-broker"
	brokerExpiredCN    = "drctl-e2e-broker-expired"
)

// clients are the client certificates: file stem, common name (= the Kafka
// principal under the brokers' mapping rule), issuer, expired.
var clients = []struct {
	stem, cn string
	other    bool // issued by the other CA, which no broker trusts
	expired  bool
}{
	{"drctl", "drctl", false, false},
	{"app", "app", false, false},
	{"drctl-expired", "drctl", false, true},
	{"other-drctl", "drctl", true, false},
}

func main() {
	dir := flag.String("dir", "", "directory to write the set into (created)")
	force := flag.Bool("force", false, "write a new set even if a complete one is there")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "tlscerts: -dir is required")
		os.Exit(2)
	}
	if !*force && complete(*dir) {
		return
	}
	if err := write(*dir, time.Now()); err != nil {
		fmt.Fprintln(os.Stderr, "tlscerts:", err)
		os.Exit(1)
	}
}

func complete(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, completeMarker))
	return err == nil && string(b) == version+"\n"
}

// authority is a CA that can sign certificates.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func write(dir string, now time.Time) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(dir, completeMarker))
	ca, err := newAuthority("drctl e2e CA", now)
	if err != nil {
		return err
	}
	other, err := newAuthority("drctl e2e other CA (trusted by nobody)", now)
	if err != nil {
		return err
	}
	files := map[string][]byte{CAFile: ca.pem, OtherCAFile: other.pem}
	for _, b := range []struct {
		file, cn string
		expired  bool
	}{{BrokerKeystore, brokerCommonName, false}, {BrokerExpiredStore, brokerExpiredCN, true}} {
		cert, key, err := ca.issue(b.cn, true, b.expired, now)
		if err != nil {
			return err
		}
		files[b.file] = append(append(key, cert...), ca.pem...)
	}
	for _, c := range clients {
		issuer := ca
		if c.other {
			issuer = other
		}
		cert, key, err := issuer.issue(c.cn, false, c.expired, now)
		if err != nil {
			return err
		}
		files[c.stem+".pem"] = cert
		files[c.stem+"-key.pem"] = key
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, completeMarker), []byte(version+"\n"), 0o600)
}

func newAuthority(cn string, now time.Time) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"drctl e2e"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validFor),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// issue signs a new key's certificate: a server certificate for 127.0.0.1
// and localhost, or a client certificate. An expired one ended a day ago.
func (a *authority) issue(cn string, server, expired bool, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validFor - 24*time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	if expired {
		tmpl.NotBefore = now.Add(-expiredSince - 24*time.Hour)
		tmpl.NotAfter = now.Add(-expiredSince)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, nil, err
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic(err)
	}
	return n
}
