package topology

import (
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

// SaramaConfig builds the client configuration for this cluster: protocol
// version, client id, bounded timeouts, TLS and SASL. Callers adjust the
// producer and consumer sections for their own use.
func (c *Cluster) SaramaConfig() (*sarama.Config, error) {
	cfg := sarama.NewConfig()
	v, err := sarama.ParseKafkaVersion(c.Version)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	cfg.Version = v
	cfg.ClientID = c.ClientID
	cfg.Net.DialTimeout = c.Timeout
	cfg.Net.ReadTimeout = c.Timeout + 20*time.Second // fetches and joins may wait server-side
	cfg.Net.WriteTimeout = c.Timeout
	cfg.Admin.Timeout = c.Timeout
	cfg.Metadata.Retry.Max = 2
	cfg.Metadata.Retry.Backoff = 250 * time.Millisecond
	cfg.Metadata.Timeout = c.Timeout
	// drctl never creates a topic by looking at it.
	cfg.Metadata.AllowAutoTopicCreation = false
	if c.TLS != nil {
		tc, err := c.TLS.config()
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
		}
		cfg.Net.TLS.Enable = true
		cfg.Net.TLS.Config = tc
	}
	if c.SASL != nil {
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Handshake = true
		cfg.Net.SASL.User = c.SASL.Username
		cfg.Net.SASL.Password = c.SASL.Password
		cfg.Net.SASL.Mechanism = sarama.SASLMechanism(mechanisms[c.SASL.Mechanism])
		switch c.SASL.Mechanism {
		case "SCRAM-SHA-256":
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: scram.HashGeneratorFcn(sha256.New)} }
		case "SCRAM-SHA-512":
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: scram.HashGeneratorFcn(sha512.New)} }
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("cluster %s: client configuration: %w", c.Name, err)
	}
	return cfg, nil
}

func (t *TLS) config() (*tls.Config, error) {
	tc := &tls.Config{ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls ca_file %s holds no PEM certificate", t.CAFile)
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// scramClient adapts xdg-go/scram to sarama's SCRAMClient.
type scramClient struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (s *scramClient) Begin(user, password, authzID string) error {
	c, err := s.hash.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	s.conv = c.NewConversation()
	return nil
}

func (s *scramClient) Step(challenge string) (string, error) { return s.conv.Step(challenge) }
func (s *scramClient) Done() bool                            { return s.conv.Done() }

// Redacted describes the cluster's connection for people and logs; it never
// holds a secret.
func (c *Cluster) Redacted() string {
	s := fmt.Sprintf("%v", c.Bootstrap)
	if c.SASL != nil {
		s += fmt.Sprintf(" sasl=%s user=%s", c.SASL.Mechanism, c.SASL.Username)
	}
	if c.TLS != nil {
		s += " tls"
	}
	return s
}
