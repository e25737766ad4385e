//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// The e2e tier runs against two real Apache Kafka clusters started by
// e2e/kafka.sh (see README.md in this folder):
//
//	e2e/kafka.sh fetch && e2e/kafka.sh start all
//	eval "$(e2e/kafka.sh env)"
//	go test -tags e2e -count=1 ./e2e/...

// Mechanism names as sarama spells them.
const (
	mechPlain    = sarama.SASLTypePlaintext   // "PLAIN"
	mechSCRAM512 = sarama.SASLTypeSCRAMSHA512 // "SCRAM-SHA-512"
	mechSCRAM256 = sarama.SASLTypeSCRAMSHA256 // "SCRAM-SHA-256" (not enabled on the brokers)
)

// saramaVersion is the protocol version the tests speak. Kafka 4.x dropped old
// request versions, so it must stay at 3.6 or newer.
var saramaVersion = sarama.V3_6_0_0

// env is what `e2e/kafka.sh env` exports.
var env struct {
	East, West         string // bootstrap addresses
	User, Password     string // drctl, super user
	AppUser, AppPass   string // ordinary producer/consumer principal
	Script             string // path of e2e/kafka.sh
	KafkaVersion       string
	bootstrapByCluster map[string]string
	clusterNames       []string
}

func TestMain(m *testing.M) {
	if msg := loadEnv(); msg != "" {
		fmt.Fprintln(os.Stderr, "e2e: "+msg)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// loadEnv fills env from the environment and checks that both clusters accept
// TCP connections. It returns a message naming the fix, or "".
func loadEnv() string {
	const fix = "start the real Kafka clusters first:\n" +
		"    e2e/kafka.sh fetch && e2e/kafka.sh start all\n" +
		"    eval \"$(e2e/kafka.sh env)\"\n" +
		"then run: go test -tags e2e -count=1 ./e2e/..."
	env.East = os.Getenv("DRCTL_E2E_EAST")
	env.West = os.Getenv("DRCTL_E2E_WEST")
	if env.East == "" || env.West == "" {
		return "DRCTL_E2E_EAST and DRCTL_E2E_WEST are not set; " + fix
	}
	env.User = envOr("DRCTL_E2E_USER", "drctl")
	env.Password = envOr("DRCTL_E2E_PASSWORD", "drctl-secret")
	env.AppUser = envOr("DRCTL_E2E_APP_USER", "app")
	env.AppPass = envOr("DRCTL_E2E_APP_PASSWORD", "app-secret")
	env.KafkaVersion = os.Getenv("DRCTL_E2E_KAFKA_VERSION")
	env.Script = os.Getenv("DRCTL_E2E_KAFKA")
	if env.Script == "" {
		// go test runs in the package folder, which is where kafka.sh lives.
		if abs, err := filepath.Abs("kafka.sh"); err == nil {
			env.Script = abs
		}
	}
	env.bootstrapByCluster = map[string]string{"east": env.East, "west": env.West}
	env.clusterNames = []string{"east", "west"}
	for _, name := range env.clusterNames {
		addr := env.bootstrapByCluster[name]
		c, err := net.DialTimeout("tcp", addr, 3*time.Second)
		if err != nil {
			return fmt.Sprintf("cluster %s (%s) is not reachable: %v; %s", name, addr, err, fix)
		}
		c.Close()
	}
	return ""
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// bootstrap returns the client address of cluster "east" or "west".
func bootstrap(t testing.TB, cluster string) string {
	t.Helper()
	addr, ok := env.bootstrapByCluster[cluster]
	if !ok {
		t.Fatalf("unknown cluster %q (want east or west)", cluster)
	}
	return addr
}

// saramaConfig returns a sarama config for the e2e clusters: SASL over plaintext
// with the given user, password and mechanism (PLAIN, SCRAM-SHA-512 or
// SCRAM-SHA-256), bounded timeouts and few retries, so failures surface quickly.
func saramaConfig(t testing.TB, user, password, mechanism string) *sarama.Config {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.Version = saramaVersion
	cfg.ClientID = "drctl-e2e"
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Net.ReadTimeout = 10 * time.Second
	cfg.Net.WriteTimeout = 10 * time.Second
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Handshake = true
	cfg.Net.SASL.Version = sarama.SASLHandshakeV1
	cfg.Net.SASL.User = user
	cfg.Net.SASL.Password = password
	cfg.Net.SASL.Mechanism = sarama.SASLMechanism(mechanism)
	switch mechanism {
	case mechPlain:
	case mechSCRAM512:
		cfg.Net.SASL.SCRAMClientGeneratorFunc = newSCRAMClient(sha512.New)
	case mechSCRAM256:
		cfg.Net.SASL.SCRAMClientGeneratorFunc = newSCRAMClient(sha256.New)
	default:
		t.Fatalf("saramaConfig: unsupported SASL mechanism %q", mechanism)
	}
	cfg.Metadata.Retry.Max = 3
	cfg.Metadata.Retry.Backoff = 250 * time.Millisecond
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Retry.Max = 10
	cfg.Producer.Retry.Backoff = 200 * time.Millisecond
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	cfg.Consumer.Return.Errors = true
	if err := cfg.Validate(); err != nil {
		t.Fatalf("saramaConfig: %v", err)
	}
	return cfg
}

// adminConfig is saramaConfig for drctl (the super user) with PLAIN.
func adminConfig(t testing.TB) *sarama.Config {
	return saramaConfig(t, env.User, env.Password, mechPlain)
}

// newClient connects to cluster with cfg and closes the client when the test ends.
func newClient(t testing.TB, cluster string, cfg *sarama.Config) sarama.Client {
	t.Helper()
	c, err := sarama.NewClient([]string{bootstrap(t, cluster)}, cfg)
	if err != nil {
		t.Fatalf("connect to %s as %s (%s): %v", cluster, cfg.Net.SASL.User, cfg.Net.SASL.Mechanism, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// uniqueName returns prefix-<test>-<random>, a topic or group name no other test
// (or earlier run against the same cluster data) uses.
func uniqueName(t testing.TB, prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	test := strings.NewReplacer("/", ".", " ", "_").Replace(t.Name())
	if len(test) > 60 {
		test = test[:60]
	}
	return fmt.Sprintf("%s-%s-%s", prefix, test, hex.EncodeToString(b))
}

// createTopic creates a topic on cluster as drctl, waits until its partitions
// have leaders, and deletes it (and the ACLs on its name) when the test ends.
func createTopic(t testing.TB, cluster, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	client := newClient(t, cluster, adminConfig(t))
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		t.Fatalf("admin on %s: %v", cluster, err)
	}
	err = admin.CreateTopic(topic, &sarama.TopicDetail{
		NumPartitions: partitions, ReplicationFactor: 1, ConfigEntries: configs,
	}, false)
	if err != nil {
		t.Fatalf("create topic %s on %s: %v", topic, cluster, err)
	}
	t.Cleanup(func() { deleteTopics(t, cluster, topic) }) // a stopped cluster is skipped
	kfaketest.WaitFor(t, 30*time.Second, fmt.Sprintf("topic %s on %s has leaders", topic, cluster), func() error {
		if err := client.RefreshMetadata(topic); err != nil {
			return err
		}
		parts, err := client.Partitions(topic)
		if err != nil {
			return err
		}
		if int32(len(parts)) != partitions {
			return fmt.Errorf("%d of %d partitions", len(parts), partitions)
		}
		for _, p := range parts {
			if _, err := client.Leader(topic, p); err != nil {
				return fmt.Errorf("partition %d: %w", p, err)
			}
		}
		return nil
	})
}

// kafkaScript runs e2e/kafka.sh with args (bounded by timeout) and returns its output.
func kafkaScript(t testing.TB, timeout time.Duration, args ...string) string {
	t.Helper()
	if env.Script == "" {
		t.Fatal("DRCTL_E2E_KAFKA (path of e2e/kafka.sh) is not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{env.Script}, args...)...)
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("kafka.sh %s (%v):\n%s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), strings.TrimRight(string(out), "\n"))
	if err != nil {
		t.Fatalf("kafka.sh %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// startCluster starts cluster ("east" or "west") and returns when it answers;
// a no-op if it runs already.
func startCluster(t testing.TB, name string) {
	t.Helper()
	bootstrap(t, name)
	kafkaScript(t, 150*time.Second, "start", name)
}

// stopCluster stops cluster gracefully (SIGTERM; SIGKILL after 30 s). Its data
// is kept, and it is started again when the test ends, so that a failing test
// does not leave it down for the tests after it.
func stopCluster(t testing.TB, name string) {
	t.Helper()
	bootstrap(t, name)
	t.Cleanup(func() { startCluster(t, name) })
	kafkaScript(t, 60*time.Second, "stop", name)
}

// killCluster SIGKILLs cluster's broker (a crash); like stopCluster, it is
// started again when the test ends.
func killCluster(t testing.TB, name string) {
	t.Helper()
	bootstrap(t, name)
	t.Cleanup(func() { startCluster(t, name) })
	kafkaScript(t, 30*time.Second, "kill", name)
}

// topologyHead renders what every e2e topology file shares: its name, the
// two real clusters (east over SCRAM-SHA-512, west over PLAIN, both as the
// drctl super user, the password taken from ${passwordVar}) and the home
// roles east/west. Callers append their mirror: and failover: sections.
func topologyHead(name, passwordVar string) string {
	return fmt.Sprintf(`name: %s
clusters:
  east:
    bootstrap: [%s]
    timeout: 5s
    sasl: {mechanism: SCRAM-SHA-512, username: %s, password: "${%s}"}
  west:
    bootstrap: [%s]
    timeout: 5s
    sasl: {mechanism: PLAIN, username: %s, password: "${%s}"}
active: east
standby: west
`, name, env.East, env.User, passwordVar, env.West, env.User, passwordVar)
}

// session is the test's session with the clusters of topo (one per test and
// topology, as a command holds one), closed when the test ends.
func session(t testing.TB, topo *topology.Topology) *kafkaconn.Clusters {
	t.Helper()
	return kfaketest.Session(t, topo)
}
