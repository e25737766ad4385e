package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/topology"
)

// conn is how to reach and log in to one cluster.
type conn struct {
	name      string
	brokers   string
	user      string
	password  string
	mechanism string
	timeout   time.Duration
}

// saramaConfig builds a client configuration through drctl's own topology
// package, so the benchmark logs in exactly as drctl does (PLAIN or SCRAM).
func (c conn) saramaConfig() (*sarama.Config, error) {
	if c.brokers == "" {
		return nil, fmt.Errorf("%s: no brokers given", c.name)
	}
	cl := &topology.Cluster{
		Name:      c.name,
		Bootstrap: splitList(c.brokers),
		ClientID:  "drctl-bench-loadgen",
		Version:   sarama.V3_6_0_0.String(),
		Timeout:   c.timeout,
	}
	if c.mechanism != "" {
		cl.SASL = &topology.SASL{Mechanism: c.mechanism, Username: c.user, Password: c.password}
	}
	cfg, err := cl.SaramaConfig()
	if err != nil {
		return nil, err
	}
	cfg.Metadata.AllowAutoTopicCreation = false
	cfg.Metadata.Retry.Max = 5
	return cfg, nil
}

func (c conn) client() (sarama.Client, error) {
	cfg, err := c.saramaConfig()
	if err != nil {
		return nil, err
	}
	cl, err := sarama.NewClient(splitList(c.brokers), cfg)
	if err != nil {
		return nil, fmt.Errorf("%s (%s): %w", c.name, c.brokers, err)
	}
	return cl, nil
}

func splitList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// connFlags registers the connection flags of one cluster; prefix is "" for
// the (target) cluster and "src-" for the source cluster.
func connFlags(fs *flag.FlagSet, c *conn, prefix, name, defBrokers string) {
	c.name = name
	fs.StringVar(&c.brokers, prefix+"brokers", defBrokers, name+" cluster bootstrap servers, comma-separated")
	fs.StringVar(&c.user, prefix+"user", envOr("DRCTL_E2E_USER", "drctl"), name+" SASL user")
	fs.StringVar(&c.password, prefix+"password", envOr("DRCTL_E2E_PASSWORD", "drctl-secret"), name+" SASL password")
	fs.StringVar(&c.mechanism, prefix+"mechanism", "PLAIN", name+" SASL mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; empty: no SASL)")
	fs.DurationVar(&c.timeout, prefix+"request-timeout", 15*time.Second, name+" per-request timeout")
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// result collects the key=value pairs of the RESULT line.
type result struct {
	keys []string
	vals map[string]string
}

func newResult(mode string) *result {
	r := &result{vals: map[string]string{}}
	r.set("mode", mode)
	return r
}

func (r *result) set(k string, v any) {
	if _, ok := r.vals[k]; !ok {
		r.keys = append(r.keys, k)
	}
	switch x := v.(type) {
	case float64:
		r.vals[k] = fmt.Sprintf("%.3f", x)
	case time.Duration:
		r.vals[k] = fmt.Sprintf("%.3f", x.Seconds())
	default:
		r.vals[k] = fmt.Sprint(x)
	}
}

func (r *result) print() {
	parts := make([]string, 0, len(r.keys)+1)
	parts = append(parts, "RESULT")
	for _, k := range r.keys {
		v := strings.ReplaceAll(r.vals[k], " ", "_")
		if v == "" {
			v = "-"
		}
		parts = append(parts, k+"="+v)
	}
	fmt.Println(strings.Join(parts, " "))
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "loadgen: "+format+"\n", args...)
}

// errUsage marks a bad command line (exit code 2).
var errUsage = errors.New("usage")

type mode struct {
	name  string
	usage string
	run   func(args []string) error
}

var modes = []mode{
	{"produce", "write N records of S bytes into a topic as fast as possible", runProduce},
	{"count", "wait until a target topic holds every record of a source topic; report the elapsed time", runCount},
	{"verify", "check that a target topic holds the source's records per partition, in order", runVerify},
	{"latency", "write at a steady rate and measure each record's delay until it is readable on the target", runLatency},
	{"create", "create a topic", runCreate},
	{"delete", "delete topics and wait until they are gone", runDelete},
	{"topics", "list topic names (optionally with a prefix)", runTopics},
	{"exists", "exit 0 if a topic exists, 1 if not", runExists},
	{"fanout", "create many topics of many partitions and write a few records into each", runFanout},
	{"fanout-wait", "wait until a mirror copies every partition of a fanout (and syncs a group)", runFanoutWait},
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: loadgen MODE [flags]   (loadgen MODE -h for the flags of a mode)")
	for _, m := range modes {
		fmt.Fprintf(os.Stderr, "  %-8s %s\n", m.name, m.usage)
	}
}

func main() {
	sarama.Logger = nopLogger{}
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	name := os.Args[1]
	for _, m := range modes {
		if m.name != name {
			continue
		}
		err := m.run(os.Args[2:])
		switch {
		case err == nil:
			os.Exit(0)
		case errors.Is(err, errUsage), errors.Is(err, flag.ErrHelp):
			os.Exit(2)
		case errors.Is(err, errNotExist):
			os.Exit(1)
		default:
			logf("%s: %v", name, err)
			os.Exit(1)
		}
	}
	usage()
	os.Exit(2)
}

type nopLogger struct{}

func (nopLogger) Print(...any)          {}
func (nopLogger) Printf(string, ...any) {}
func (nopLogger) Println(...any)        {}

// newFlags returns a flag set for a mode that reports errors as errUsage.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("loadgen "+name, flag.ContinueOnError)
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "loadgen: unexpected arguments: %v\n", fs.Args())
		return errUsage
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
