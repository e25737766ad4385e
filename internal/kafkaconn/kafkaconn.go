package kafkaconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// ErrUnreachable wraps every failure to reach or authenticate to a cluster.
var ErrUnreachable = errors.New("unreachable")

// Dial connects to the cluster and returns a client that has fetched
// metadata once. It gives up when ctx ends, whatever sarama's own retries
// would do. Adjust the config with tune (may be nil) before connecting.
func Dial(ctx context.Context, c *topology.Cluster, tune func(*sarama.Config)) (sarama.Client, error) {
	cfg, err := c.SaramaConfig()
	if err != nil {
		return nil, err
	}
	if tune != nil {
		tune(cfg)
	}
	type result struct {
		client sarama.Client
		err    error
	}
	done := make(chan result, 1)
	go func() {
		cl, err := sarama.NewClient(c.Bootstrap, cfg)
		if err != nil {
			err = probe(c, cfg, err)
		}
		done <- result{cl, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, Explain(c, r.err)
		}
		return r.client, nil
	case <-ctx.Done():
		go func() { // close the client if it arrives late
			if r := <-done; r.client != nil {
				_ = r.client.Close()
			}
		}()
		return nil, fmt.Errorf("cluster %s (%s): %w: no answer before the deadline (%v); check that the brokers are up and the bootstrap addresses are right",
			c.Name, strings.Join(c.Bootstrap, ","), ErrUnreachable, ctx.Err())
	}
}

// probe finds the concrete reason behind sarama's "run out of available
// brokers" by opening one broker connection (dial, TLS, SASL) by hand.
func probe(c *topology.Cluster, cfg *sarama.Config, err error) error {
	if !errors.Is(err, sarama.ErrOutOfBrokers) {
		return err
	}
	for _, addr := range c.Bootstrap {
		b := sarama.NewBroker(addr)
		if oerr := b.Open(cfg); oerr != nil {
			return oerr
		}
		_, cerr := b.Connected()
		_ = b.Close()
		if cerr != nil {
			return fmt.Errorf("%s: %w", addr, cerr)
		}
	}
	return err
}

// Explain wraps a connection error with the cluster's name and a hint.
func Explain(c *topology.Cluster, err error) error {
	hint := "check that the brokers are up and the bootstrap addresses are right"
	msg := err.Error()
	tlsFix := tlsHint(c, err)
	switch {
	case errors.Is(err, sarama.ErrSASLAuthenticationFailed) || strings.Contains(msg, "SASL") || strings.Contains(msg, "uthentication"):
		hint = "authentication failed: check sasl.mechanism, username and password for this cluster"
	case tlsFix != "":
		hint = tlsFix
	case c.SASL != nil && (errors.Is(err, io.EOF) || strings.HasSuffix(msg, "EOF")):
		hint = "the broker closed the connection during authentication: check sasl.mechanism, username and password for this cluster, and that the listener speaks SASL (a TLS listener, SSL or SASL_SSL, also needs tls with ca_file)"
	case errors.Is(err, sarama.ErrUnsupportedSASLMechanism):
		hint = "the brokers do not accept this sasl.mechanism; use one the listener enables"
	}
	// sarama's "out of brokers" says nothing once the cause is known.
	if tlsFix != "" {
		msg = strings.TrimPrefix(msg, sarama.ErrOutOfBrokers.Error()+": ")
	}
	// The cluster and its addresses are said once: a library's message
	// often starts with the address again ("127.0.0.1:1: dial tcp ...").
	for _, addr := range c.Bootstrap {
		msg = strings.TrimPrefix(msg, addr+": ")
	}
	return fmt.Errorf("cluster %s (%s) %w: %s; %s", c.Name, strings.Join(c.Bootstrap, ","), ErrUnreachable, scrub(c, msg), hint)
}

// scrub removes the cluster's password from a message, should a library
// ever echo it.
func scrub(c *topology.Cluster, msg string) string {
	if c.SASL != nil && c.SASL.Password != "" {
		msg = strings.ReplaceAll(msg, c.SASL.Password, "********")
	}
	return msg
}

// ClusterID asks one broker for the cluster's id.
func ClusterID(client sarama.Client) (string, error) {
	md, _, err := kafkaread.AnyBrokerMetadata(context.Background(), client, &sarama.MetadataRequest{Version: 7, Topics: []string{}})
	if err != nil {
		return "", fmt.Errorf("metadata: %w", err)
	}
	if md.ClusterID == nil || *md.ClusterID == "" {
		return "", errors.New("the cluster reports no id")
	}
	return *md.ClusterID, nil
}
