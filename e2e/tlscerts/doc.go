// Command tlscerts writes the certificate authority and the certificates of
// the e2e tier's TLS listeners (e2e/kafka.sh runs it once per
// $DRCTL_E2E_HOME): a CA, the brokers' certificate for 127.0.0.1 and
// localhost, client certificates whose common name is the Kafka principal
// (drctl, app), and the broken material the error tests need: an expired
// broker certificate, an expired client certificate, and a second CA with a
// client certificate of its own (trusted by nobody).
//
// It is test tooling: keys are unencrypted ECDSA P-256 in PKCS#8 PEM, the
// form Kafka's PEM key stores (ssl.keystore.type=PEM) read without a
// password. It never overwrites a complete set; -force makes a new one.
package main
