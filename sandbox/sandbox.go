package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/drctl/drctl/topology"
)

// Default ports of the two clusters. AnyPort asks the operating system for a
// free port instead (tests use it to run in parallel with a real sandbox).
const (
	DefaultEastPort = 19092
	DefaultWestPort = 29092
	AnyPort         = -1

	// DefaultRate keeps an in-memory sandbox small enough to run for hours.
	DefaultRate = 20

	// TopologyFile is the name of the file written into Options.Dir.
	TopologyFile = "drctl.yaml"

	// DefaultMirrorListen is where the sandbox's mirror serves /metrics,
	// /healthz and /readyz: a fixed port, next to no well-known service and
	// apart from drctl mirror run's default (7483), so both can run.
	DefaultMirrorListen = "127.0.0.1:17483"
)

// The names of the sandbox's clusters; east is the home active.
const (
	East = "east"
	West = "west"
)

// Options configure a sandbox. The zero value is the README's `drctl sandbox`.
type Options struct {
	// Dir is where drctl.yaml is written; empty means the current directory.
	Dir string
	// DataDir keeps the clusters' data on disk (DataDir/east, DataDir/west)
	// so that it survives a restart; empty keeps everything in memory.
	DataDir string
	// EastPort and WestPort are the clusters' listen ports on 127.0.0.1;
	// zero means DefaultEastPort and DefaultWestPort, AnyPort a free port.
	EastPort, WestPort int
	// Rate is the number of demo records produced per second over all demo
	// topics; zero means DefaultRate.
	Rate int
	// Log receives the instructions, progress lines and rate-limited errors;
	// nil discards them.
	Log io.Writer
	// ActiveFn names the cluster the demo traffic should run on ("east" or
	// "west"); it is asked every ActivePoll. Any other answer, such as ""
	// while a failover fences the old active, pauses the traffic until a
	// cluster is named again. Nil means always east.
	ActiveFn func(ctx context.Context) string
	// ActivePoll is how often ActiveFn is asked; zero means 500ms.
	ActivePoll time.Duration
	// Mirror runs the mirror daemon in the sandbox (east -> west, following
	// the live roles), and, when ActiveFn is nil, makes the demo traffic
	// follow the live active cluster too.
	Mirror bool
	// MirrorListen is the address of the mirror's /metrics, /healthz and
	// /readyz ("" = not served).
	MirrorListen string
	// LogFormat is LogText (the default) or LogJSON; LogLevel the least
	// level logged (the zero value is Info).
	LogFormat string
	LogLevel  slog.Level
	// Command is how the printed hints invoke drctl ("drctl" when empty;
	// "go run ./cmd/drctl" when the sandbox itself runs that way), so that
	// they work when pasted as shown.
	Command string
}

// Sandbox is a running sandbox. Close it to stop the traffic and the
// clusters.
type Sandbox struct {
	// TopologyPath is the topology file written for the two clusters.
	TopologyPath string
	// Topology is that file, loaded.
	Topology *topology.Topology

	opts     Options
	clusters map[string]*kfake.Cluster
	unlock   func() // releases Options.DataDir
	log      *logger
	traffic  *traffic

	stop       context.CancelFunc
	done       chan struct{}
	stopMirror func()
	stopDrills func()
	mirrorAddr string
	// topologyNote says why the topology file is not Dir/drctl.yaml.
	topologyNote string
	closeOnce    sync.Once
	closeErr     error
}

// ErrTopologyExists means Options.Dir holds a drctl.yaml that the sandbox did
// not write; the sandbox never overwrites such a file.
var ErrTopologyExists = errors.New("topology file exists and was not written by drctl sandbox")

// ErrDataDirInUse means another running sandbox holds Options.DataDir.
var ErrDataDirInUse = errors.New("in use by another drctl sandbox; stop that sandbox, or use another data directory")

// PortInUseError means a cluster's listen port is taken, usually by another
// sandbox.
type PortInUseError struct {
	Cluster string // east or west
	Port    int
	Err     error
}

func (e *PortInUseError) Error() string {
	return fmt.Sprintf("sandbox: cluster %s cannot listen on port %d, it is already in use "+
		"(another drctl sandbox may be running): stop the other sandbox, or pick a free port with --%s-port",
		e.Cluster, e.Port, e.Cluster)
}

func (e *PortInUseError) Unwrap() error { return e.Err }

// Run starts a sandbox, prints its instructions to o.Log and runs it until ctx
// is cancelled; then it stops the traffic and closes the clusters. A
// cancelled ctx is the normal end and returns nil.
func Run(ctx context.Context, o Options) error {
	s, err := startWith(ctx, o, func(s *Sandbox) { s.log.block(s.Instructions()) })
	if err != nil {
		return err
	}
	report := time.NewTicker(time.Minute)
	defer report.Stop()
	for {
		select {
		case <-ctx.Done():
			s.log.printf("stopping: traffic first, then the clusters")
			if err := s.Close(); err != nil {
				return err
			}
			st := s.Stats()
			s.log.printf("stopped after producing %d records (%d more in aborted transactions) and consuming %d",
				st.Produced, st.Aborted, st.Consumed)
			return nil
		case <-report.C:
			st := s.Stats()
			s.log.printf("traffic on %s: produced %d (+%d aborted), consumed %d, errors %d",
				orPaused(st.Active), st.Produced, st.Aborted, st.Consumed, st.Errors)
		}
	}
}

func orPaused(active string) string {
	if active == "" {
		return "no cluster (paused)"
	}
	return active
}

// Start starts the two clusters, writes the topology file, creates the demo
// topics on east and starts the demo traffic. ctx bounds the start-up only:
// the sandbox runs until Close. On error nothing is left running and no
// file the sandbox did not write is changed.
func Start(ctx context.Context, o Options) (*Sandbox, error) { return startWith(ctx, o, nil) }

// startWith is Start; ready, if set, runs just before the traffic starts (Run
// prints the instructions there, so they come before any traffic line).
func startWith(ctx context.Context, o Options, ready func(*Sandbox)) (*Sandbox, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox: create directory %s: %w", o.Dir, err)
	}
	path, note, unlockDir, err := claimTopologyFile(o)
	if err != nil {
		return nil, err
	}
	if err := checkOverwrite(path); err != nil {
		unlockDir()
		return nil, err
	}
	s := &Sandbox{TopologyPath: path, topologyNote: note, opts: o, clusters: map[string]*kfake.Cluster{},
		log: newLogger(o.Log, o.LogFormat, o.LogLevel), unlock: unlockDir}
	ok := false
	defer func() {
		if !ok {
			if s.stopDrills != nil {
				s.stopDrills()
			}
			if s.stopMirror != nil {
				s.stopMirror()
			}
			s.closeClusters()
		}
	}()
	if o.DataDir != "" {
		unlock, err := lockDataDir(o.DataDir)
		if err != nil {
			return nil, err
		}
		s.unlock = func() { unlock(); unlockDir() }
	}
	for _, c := range []struct {
		name string
		port int
	}{{East, o.EastPort}, {West, o.WestPort}} {
		kc, err := startCluster(c.name, c.port, o.DataDir)
		if err != nil {
			return nil, err
		}
		s.clusters[c.name] = kc
	}
	if err := writeTopology(path, s.Addrs(East), s.Addrs(West)); err != nil {
		return nil, err
	}
	if s.Topology, err = topology.Load(path); err != nil {
		return nil, fmt.Errorf("sandbox: the topology it wrote does not load (a bug in drctl): %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sandbox: start: %w", err)
	}
	if err := createDemoTopics(s.Topology.Clusters[East]); err != nil {
		return nil, err
	}

	if o.Mirror {
		if err := s.startMirror(); err != nil {
			return nil, err
		}
		s.stopDrills = s.startDrills()
		if o.ActiveFn == nil {
			o.ActiveFn = liveActive(s.Topology)
			o.ActivePoll = 2 * time.Second
			s.opts = o
		}
	}
	if o.ActiveFn == nil {
		o.ActiveFn = func(context.Context) string { return East }
	}
	s.traffic = newTraffic(s.Topology, o, s.log)
	if ready != nil {
		ready(s)
	}
	tctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stop, s.done = stop, make(chan struct{})
	go func() {
		defer close(s.done)
		s.traffic.run(tctx)
	}()
	ok = true
	return s, nil
}

func (o Options) withDefaults() (Options, error) {
	if o.Dir == "" {
		o.Dir = "."
	}
	if o.EastPort == 0 {
		o.EastPort = DefaultEastPort
	}
	if o.WestPort == 0 {
		o.WestPort = DefaultWestPort
	}
	for _, p := range []struct {
		name string
		port int
	}{{East, o.EastPort}, {West, o.WestPort}} {
		if p.port != AnyPort && (p.port < 1 || p.port > 65535) {
			return o, fmt.Errorf("sandbox: %s port %d is not a TCP port; use 1-65535 with --%s-port", p.name, p.port, p.name)
		}
	}
	if o.EastPort == o.WestPort && o.EastPort != AnyPort {
		return o, fmt.Errorf("sandbox: east and west cannot both listen on port %d; give them different ports with --east-port and --west-port", o.EastPort)
	}
	if o.Rate == 0 {
		o.Rate = DefaultRate
	}
	switch o.LogFormat {
	case "":
		o.LogFormat = LogText
	case LogText, LogJSON:
	default:
		return o, fmt.Errorf("sandbox: log format %q: use text or json", o.LogFormat)
	}
	if o.Command == "" {
		o.Command = "drctl"
	}
	if o.Rate < 0 {
		return o, fmt.Errorf("sandbox: rate %d records/s is negative; use a positive rate", o.Rate)
	}
	if o.ActivePoll <= 0 {
		o.ActivePoll = 500 * time.Millisecond
	}
	return o, nil
}

// claimTopologyFile picks the sandbox's topology file: Dir/drctl.yaml, unless
// another running sandbox holds Dir; then a file of its own, named after its
// east port, so that the first sandbox's file is never rewritten under it.
// note says so when it happens.
func claimTopologyFile(o Options) (path, note string, unlock func(), err error) {
	unlock, ok, err := lockDir(o.Dir)
	if err != nil {
		return "", "", nil, err
	}
	if ok {
		return filepath.Join(o.Dir, TopologyFile), "", unlock, nil
	}
	name := fmt.Sprintf("drctl-%d.yaml", o.EastPort)
	if o.EastPort == AnyPort {
		name = fmt.Sprintf("drctl-pid%d.yaml", os.Getpid())
	}
	note = fmt.Sprintf("%s belongs to the sandbox already running in this directory; this sandbox's topology is %s", TopologyFile, name)
	return filepath.Join(o.Dir, name), note, func() {}, nil
}

// Addrs returns the listen addresses (host:port) of the cluster named east or
// west, or nil for another name.
func (s *Sandbox) Addrs(cluster string) []string {
	kc := s.clusters[cluster]
	if kc == nil {
		return nil
	}
	return kc.ListenAddrs()
}

// Cluster returns the embedded cluster named east or west, for fault
// injection by tests and demos; nil for another name.
func (s *Sandbox) Cluster(name string) *kfake.Cluster { return s.clusters[name] }

// Stats are the demo traffic's counters since Start.
type Stats struct {
	// Active is the cluster the traffic runs on now; empty while paused.
	Active string
	// Produced counts records acknowledged outside transactions or in
	// committed ones.
	Produced int64
	// Aborted counts records written in deliberately aborted transactions.
	Aborted int64
	// Consumed counts records the demo groups read, summed over the groups
	// (both read orders).
	Consumed int64
	// AbortedRead counts records of aborted transactions that a demo group
	// read; read_committed keeps it at zero.
	AbortedRead int64
	// Errors counts failed connects, produces and consumes (each is logged,
	// rate-limited, and retried).
	Errors int64
}

// Stats returns the traffic's counters.
func (s *Sandbox) Stats() Stats { return s.traffic.stats() }

// Close stops the traffic, waits for its producers and consumers to close
// (consumers commit their last positions), then closes both clusters, which
// writes their data to disk when Options.DataDir is set. It is safe to call
// more than once.
func (s *Sandbox) Close() error {
	s.closeOnce.Do(func() {
		s.stop()
		<-s.done
		s.closeErr = s.traffic.closeErr()
		if s.stopDrills != nil {
			s.stopDrills()
		}
		if s.stopMirror != nil {
			s.stopMirror()
		}
		s.closeClusters()
	})
	return s.closeErr
}

// closeClusters closes the clusters (saving their data) and then releases
// the data directory.
func (s *Sandbox) closeClusters() {
	for _, kc := range s.clusters {
		kc.Close()
	}
	s.unlock()
}

// startCluster starts one single-broker cluster on port (AnyPort: a free
// one), persisted under dataDir/name when dataDir is set.
func startCluster(name string, port int, dataDir string) (*kfake.Cluster, error) {
	listen := port
	if port == AnyPort {
		listen = 0
	}
	opts := []kfake.Opt{
		kfake.Ports(listen),
		kfake.ClusterID(topology.SandboxClusterIDPrefix + name),
		// Compact customers and apply retention every minute rather than
		// every hour, so compaction is visible and memory stays bounded.
		kfake.BrokerConfigs(map[string]string{"log.cleaner.backoff.ms": "60000"}),
	}
	if dataDir != "" {
		opts = append(opts, kfake.DataDir(filepath.Join(dataDir, name)))
	}
	kc, err := kfake.NewCluster(opts...)
	if err != nil {
		if isAddrInUse(err) {
			return nil, &PortInUseError{Cluster: name, Port: port, Err: err}
		}
		return nil, fmt.Errorf("sandbox: start cluster %s: %w", name, err)
	}
	return kc, nil
}

func isAddrInUse(err error) bool { return errors.Is(err, syscall.EADDRINUSE) }

// saramaConfig is the cluster's client configuration from the topology,
// adjusted by tune.
func saramaConfig(c *topology.Cluster, clientID string, tune func(*sarama.Config)) (*sarama.Config, error) {
	cfg, err := c.SaramaConfig()
	if err != nil {
		return nil, err
	}
	cfg.ClientID = clientID
	if tune != nil {
		tune(cfg)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("cluster %s: client %s: %w", c.Name, clientID, err)
	}
	return cfg, nil
}
