//go:build e2e

package e2e

import (
	"bytes"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// TestRealKafkaSmoke proves the harness on each cluster: PLAIN and SCRAM-SHA-512
// logins work for drctl (and app), a record makes the round trip, and a wrong
// password is rejected quickly.
func TestRealKafkaSmoke(t *testing.T) {
	for _, cluster := range env.clusterNames {
		t.Run(cluster, func(t *testing.T) {
			t.Run("plain_drctl_produce_consume", func(t *testing.T) {
				topic := uniqueName(t, "e2e-smoke")
				createTopic(t, cluster, topic, 1, nil)
				cfg := adminConfig(t)
				rec := &sarama.ProducerMessage{
					Topic:     topic,
					Key:       sarama.StringEncoder("k1"),
					Value:     sarama.StringEncoder("hello " + cluster),
					Headers:   []sarama.RecordHeader{{Key: []byte("h"), Value: []byte("v")}},
					Timestamp: time.UnixMilli(1_700_000_000_123),
				}
				part, off := produceOne(t, cluster, cfg, rec)
				got := consumeOne(t, cluster, cfg, topic, part, off)
				if string(got.Key) != "k1" || string(got.Value) != "hello "+cluster {
					t.Fatalf("consumed key=%q value=%q, want k1 / hello %s", got.Key, got.Value, cluster)
				}
				if len(got.Headers) != 1 || !bytes.Equal(got.Headers[0].Key, []byte("h")) || !bytes.Equal(got.Headers[0].Value, []byte("v")) {
					t.Fatalf("consumed headers %v, want h=v", got.Headers)
				}
				if !got.Timestamp.Equal(rec.Timestamp) {
					t.Fatalf("consumed timestamp %v, want %v", got.Timestamp, rec.Timestamp)
				}
			})

			t.Run("scram_drctl", func(t *testing.T) {
				client := newClient(t, cluster, saramaConfig(t, env.User, env.Password, mechSCRAM512))
				if id := clusterID(t, client); id == "" {
					t.Fatal("no cluster id in the metadata answer")
				}
				if n := len(client.Brokers()); n != 1 {
					t.Fatalf("%d brokers, want 1", n)
				}
			})

			t.Run("scram_app_produces_without_acls", func(t *testing.T) {
				// allow.everyone.if.no.acl.found=true: app may write until drctl fences.
				topic := uniqueName(t, "e2e-smoke-app")
				createTopic(t, cluster, topic, 1, nil)
				cfg := saramaConfig(t, env.AppUser, env.AppPass, mechSCRAM512)
				part, off := produceOne(t, cluster, cfg, &sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("from app")})
				if got := consumeOne(t, cluster, cfg, topic, part, off); string(got.Value) != "from app" {
					t.Fatalf("consumed %q, want %q", got.Value, "from app")
				}
			})

			for _, mech := range []string{mechPlain, mechSCRAM512} {
				t.Run("wrong_password_"+mech, func(t *testing.T) {
					cfg := saramaConfig(t, env.User, "not-"+env.Password, mech)
					took, err := connectErr(t, cluster, cfg, 15*time.Second)
					if err == nil {
						t.Fatalf("%s login with a wrong password succeeded", mech)
					}
					if !errors.Is(err, sarama.ErrSASLAuthenticationFailed) {
						t.Fatalf("%s login with a wrong password: %v (after %v), want %v", mech, err, took, sarama.ErrSASLAuthenticationFailed)
					}
					t.Logf("rejected after %v: %v", took.Round(time.Millisecond), err)
				})
			}
		})
	}
}

// TestRealKafkaRestartKeepsData stops a cluster, starts it again, and reads a
// record written before the stop: stop/start keeps the data and the cluster id.
func TestRealKafkaRestartKeepsData(t *testing.T) {
	const cluster = "west"
	topic := uniqueName(t, "e2e-restart")
	createTopic(t, cluster, topic, 1, nil)
	cfg := adminConfig(t)

	before := clusterID(t, newClient(t, cluster, cfg))
	part, off := produceOne(t, cluster, cfg, &sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("survives")})

	stopCluster(t, cluster)
	if c, err := net.DialTimeout("tcp", bootstrap(t, cluster), time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after stop", cluster)
	}
	startCluster(t, cluster)

	after := clusterID(t, newClient(t, cluster, cfg))
	if before != after {
		t.Fatalf("cluster id changed across restart: %s -> %s", before, after)
	}
	if got := consumeOne(t, cluster, cfg, topic, part, off); string(got.Value) != "survives" {
		t.Fatalf("after restart consumed %q, want %q", got.Value, "survives")
	}
}

// produceOne sends msg with a sync producer and returns its partition and offset.
func produceOne(t testing.TB, cluster string, cfg *sarama.Config, msg *sarama.ProducerMessage) (int32, int64) {
	t.Helper()
	p, err := sarama.NewSyncProducer([]string{bootstrap(t, cluster)}, cfg)
	if err != nil {
		t.Fatalf("producer on %s: %v", cluster, err)
	}
	defer p.Close()
	part, off, err := p.SendMessage(msg)
	if err != nil {
		t.Fatalf("produce to %s/%s: %v", cluster, msg.Topic, err)
	}
	return part, off
}

// consumeOne reads the record at topic/part/off, failing after 15 s.
func consumeOne(t testing.TB, cluster string, cfg *sarama.Config, topic string, part int32, off int64) *sarama.ConsumerMessage {
	t.Helper()
	c, err := sarama.NewConsumer([]string{bootstrap(t, cluster)}, cfg)
	if err != nil {
		t.Fatalf("consumer on %s: %v", cluster, err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, part, off)
	if err != nil {
		t.Fatalf("consume %s/%s[%d]@%d: %v", cluster, topic, part, off, err)
	}
	defer pc.Close()
	timer := time.NewTimer(15 * time.Second)
	defer timer.Stop()
	select {
	case m := <-pc.Messages():
		if m.Offset != off {
			t.Fatalf("consumed offset %d, want %d", m.Offset, off)
		}
		return m
	case err := <-pc.Errors():
		t.Fatalf("consume %s/%s[%d]@%d: %v", cluster, topic, part, off, err)
	case <-timer.C:
		t.Fatalf("no record at %s/%s[%d]@%d within 15s", cluster, topic, part, off)
	}
	return nil
}

// connectErr tries to connect with cfg and returns how long it took and the
// error (nil on success); it fails the test if no answer comes within limit.
func connectErr(t testing.TB, cluster string, cfg *sarama.Config, limit time.Duration) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		c, err := sarama.NewClient([]string{bootstrap(t, cluster)}, cfg)
		if err == nil {
			c.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return time.Since(start), err
	case <-time.After(limit):
		t.Fatalf("no answer from %s within %v", cluster, limit)
		return limit, nil
	}
}

// clusterID asks the cluster's broker for its cluster id.
func clusterID(t testing.TB, client sarama.Client) string {
	t.Helper()
	b, err := client.Controller()
	if err != nil {
		t.Fatalf("controller: %v", err)
	}
	resp, err := b.GetMetadata(sarama.NewMetadataRequest(client.Config().Version, []string{}))
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	if resp.ClusterID == nil {
		return ""
	}
	return *resp.ClusterID
}
