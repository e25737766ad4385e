package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// syncBuffer collects a log written from many goroutines.
type syncBuffer = kfaketest.LogBuffer

// start starts a sandbox on free ports in a temporary directory (unless o
// says otherwise) and closes it when the test ends; its log is shown if the
// test fails.
func start(t *testing.T, o Options) *Sandbox {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.EastPort == 0 {
		o.EastPort = AnyPort
	}
	if o.WestPort == 0 {
		o.WestPort = AnyPort
	}
	log := &syncBuffer{}
	o.Log = log
	s, err := Start(t.Context(), o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if t.Failed() {
			t.Logf("sandbox log:\n%s", log)
		}
	})
	return s
}

// probe is a test's own view of one sandbox cluster.
type probe struct {
	client sarama.Client
	admin  sarama.ClusterAdmin
}

func newProbe(t *testing.T, addrs []string) *probe {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Metadata.Full = true // sarama's admin needs it to find the controller
	client, err := sarama.NewClient(addrs, cfg)
	if err != nil {
		t.Fatalf("probe %v: %v", addrs, err)
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		t.Fatalf("probe admin %v: %v", addrs, err)
	}
	t.Cleanup(func() { admin.Close() })
	return &probe{client: client, admin: admin}
}

// endOffsets sums the end offsets of the demo topics that exist.
func (p *probe) endOffsets() (int64, error) {
	var sum int64
	for _, dt := range demoTopics {
		if err := p.client.RefreshMetadata(dt.name); err != nil {
			if errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
				continue
			}
			return 0, err
		}
		for part := range dt.partitions {
			off, err := p.client.GetOffset(dt.name, part, sarama.OffsetNewest)
			if err != nil {
				return 0, err
			}
			sum += off
		}
	}
	return sum, nil
}

// committed sums the offsets group has committed; a group kfake does not
// know has none.
func (p *probe) committed(group string) int64 {
	resp, err := p.admin.ListConsumerGroupOffsets(group, nil)
	if err != nil {
		return 0
	}
	var sum int64
	for _, parts := range resp.Blocks {
		for _, b := range parts {
			if b.Err == sarama.ErrNoError && b.Offset > 0 {
				sum += b.Offset
			}
		}
	}
	return sum
}

func (p *probe) groupsCommitted() (bool, string) {
	b, a := p.committed("billing"), p.committed("analytics")
	return b > 0 && a > 0, fmt.Sprintf("committed billing=%d analytics=%d", b, a)
}

func port(t *testing.T, addr string) int {
	t.Helper()
	_, ps, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(ps)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestStartRunsDemoTrafficAndWritesTopology(t *testing.T) {
	t.Parallel()
	s := start(t, Options{Rate: 50})
	east, west := newProbe(t, s.Addrs(East)), newProbe(t, s.Addrs(West))

	kfaketest.Wait(t, 15*time.Second, "records produced, a transaction aborted, both groups committed on east", func() (bool, string) {
		st := s.Stats()
		ok, saw := east.groupsCommitted()
		return ok && st.Produced > 0 && st.Aborted > 0 && st.Consumed > 0, fmt.Sprintf("%+v, %s", st, saw)
	})
	if st := s.Stats(); st.AbortedRead != 0 || st.Active != East {
		t.Errorf("stats %+v: want Active east and no aborted record read (read_committed)", st)
	}

	topo, err := topology.Load(s.TopologyPath)
	if err != nil {
		t.Fatalf("written topology does not load: %v", err)
	}
	if topo.Name != "sandbox" || topo.Active != East || topo.Standby != West {
		t.Errorf("topology name/roles = %s %s/%s, want sandbox east/west", topo.Name, topo.Active, topo.Standby)
	}
	for _, name := range []string{East, West} {
		if got, want := topo.Clusters[name].Bootstrap, s.Addrs(name); !slices.Equal(got, want) {
			t.Errorf("topology %s bootstrap = %v, want the sandbox's %v", name, got, want)
		}
	}
	if topo.Mirror.Delivery != topology.ExactlyOnce || topo.Failover.Fence != topology.FenceNone || topo.Failover.DrainTimeout != time.Minute {
		t.Errorf("delivery %s, fence %s, drain %v: want exactly-once, none, 1m", topo.Mirror.Delivery, topo.Failover.Fence, topo.Failover.DrainTimeout)
	}
	for name, want := range map[string]bool{"orders": true, "payments.eu": true, "payments.us": true, "customers": true, "scratch": false} {
		if topo.Mirror.Topics.Match(name) != want {
			t.Errorf("mirror.topics selects %s = %v, want %v", name, !want, want)
		}
	}
	for name, want := range map[string]bool{"billing": true, "analytics": true, "console-consumer-42": false} {
		if topo.Mirror.Groups.Match(name) != want {
			t.Errorf("mirror.groups selects %s = %v, want %v", name, !want, want)
		}
	}
	data, _ := os.ReadFile(s.TopologyPath)
	if !bytes.HasPrefix(data, []byte(marker)) {
		t.Errorf("topology file does not start with %q", marker)
	}

	meta, err := east.admin.DescribeTopics([]string{"orders", "payments.eu", "payments.us", "customers", "scratch"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"orders": 6, "payments.eu": 3, "payments.us": 3, "customers": 3, "scratch": 1}
	for _, m := range meta {
		if m.Err != sarama.ErrNoError || len(m.Partitions) != want[m.Name] {
			t.Errorf("east topic %s: err %v, %d partitions, want %d", m.Name, m.Err, len(m.Partitions), want[m.Name])
		}
	}
	cfgs, err := east.admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: "customers", ConfigNames: []string{"cleanup.policy"}})
	if err != nil || len(cfgs) != 1 || cfgs[0].Value != "compact" {
		t.Errorf("customers cleanup.policy = %+v, %v; want compact", cfgs, err)
	}
	if scratch, _ := east.client.GetOffset("scratch", 0, sarama.OffsetNewest); scratch == 0 {
		t.Errorf("scratch got no records; it should, to show what the mirror leaves behind")
	}
	topics, err := west.admin.ListTopics()
	if err != nil {
		t.Fatal(err)
	}
	for name := range topics {
		if !strings.HasPrefix(name, "__") {
			t.Errorf("west has topic %s; the standby must stay empty until the mirror fills it", name)
		}
	}
}

func TestStartRefusesPortsInUse(t *testing.T) {
	t.Parallel()
	s := start(t, Options{Rate: 1})
	eastPort, westPort := port(t, s.Addrs(East)[0]), port(t, s.Addrs(West)[0])

	for _, tc := range []struct {
		name       string
		east, west int
		cluster    string
		port       int
		flag       string
	}{
		{name: "east taken", east: eastPort, west: AnyPort, cluster: East, port: eastPort, flag: "--east-port"},
		{name: "west taken", east: AnyPort, west: westPort, cluster: West, port: westPort, flag: "--west-port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s2, err := Start(t.Context(), Options{Dir: dir, EastPort: tc.east, WestPort: tc.west})
			if err == nil {
				s2.Close()
				t.Fatal("a second sandbox started on ports in use")
			}
			var pe *PortInUseError
			if !errors.As(err, &pe) || pe.Cluster != tc.cluster || pe.Port != tc.port {
				t.Fatalf("error = %v, want a PortInUseError for %s port %d", err, tc.cluster, tc.port)
			}
			for _, w := range []string{strconv.Itoa(tc.port), tc.flag, "stop the other sandbox"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, TopologyFile)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a failed start wrote a topology file (stat: %v)", err)
			}
		})
	}
	if _, err := Start(t.Context(), Options{Dir: t.TempDir(), EastPort: 4000, WestPort: 4000}); err == nil || !strings.Contains(err.Error(), "--west-port") {
		t.Errorf("same port for both clusters: error = %v, want one naming --east-port and --west-port", err)
	}
}

func TestStartKeepsForeignTopologyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, TopologyFile)
	mine := []byte("# my production topology\nname: payments\n")
	if err := os.WriteFile(path, mine, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Start(t.Context(), Options{Dir: dir, EastPort: AnyPort, WestPort: AnyPort})
	if err == nil {
		s.Close()
		t.Fatal("Start overwrote a topology file it did not write")
	}
	if !errors.Is(err, ErrTopologyExists) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "another directory") {
		t.Errorf("error = %v, want ErrTopologyExists naming %s and the fix", err, path)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, mine) {
		t.Errorf("file changed to %q", got)
	}
}

func TestDataDirSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	first := start(t, Options{Dir: dir, DataDir: data, Rate: 100})
	p := newProbe(t, first.Addrs(East))
	var billing int64
	kfaketest.Wait(t, 15*time.Second, "200 records produced and billing committed", func() (bool, string) {
		billing = p.committed("billing")
		st := first.Stats()
		return st.Produced >= 200 && billing > 0, fmt.Sprintf("%+v billing=%d", st, billing)
	})
	if _, err := Start(t.Context(), Options{Dir: t.TempDir(), DataDir: data, EastPort: AnyPort, WestPort: AnyPort}); !errors.Is(err, ErrDataDirInUse) {
		t.Errorf("a second sandbox on the same data directory: error = %v, want ErrDataDirInUse", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	produced := first.Stats().Produced

	// A slow second run cannot produce in milliseconds what the first
	// run left behind: the end offsets must come from disk.
	second := start(t, Options{Dir: dir, DataDir: data, Rate: 1})
	p2 := newProbe(t, second.Addrs(East))
	end, err := p2.endOffsets()
	if err != nil {
		t.Fatal(err)
	}
	if end < produced {
		t.Errorf("after restart the demo topics end at %d in total, but the first run produced %d", end, produced)
	}
	if got := p2.committed("billing"); got < billing {
		t.Errorf("after restart billing has committed %d in total, before it had %d", got, billing)
	}
	if got, _ := os.ReadFile(second.TopologyPath); !strings.Contains(string(got), second.Addrs(East)[0]) {
		t.Errorf("the sandbox's own topology file was not rewritten with the new address %s", second.Addrs(East)[0])
	}
}

func TestTrafficFollowsActiveCluster(t *testing.T) {
	t.Parallel()
	var active atomic.Value
	active.Store(East)
	s := start(t, Options{Rate: 50, ActivePoll: 100 * time.Millisecond,
		ActiveFn: func(context.Context) string { return active.Load().(string) }})
	east, west := newProbe(t, s.Addrs(East)), newProbe(t, s.Addrs(West))
	kfaketest.Wait(t, 15*time.Second, "both groups committed on east", east.groupsCommitted)

	// The mirror would create the standby's topics; it does not exist yet.
	if err := createDemoTopics(s.Topology.Clusters[West]); err != nil {
		t.Fatal(err)
	}
	active.Store(West)
	kfaketest.Wait(t, 15*time.Second, "traffic on west and both groups committed there", func() (bool, string) {
		st := s.Stats()
		end, err := west.endOffsets()
		ok, saw := west.groupsCommitted()
		return ok && st.Active == West && end > 0, fmt.Sprintf("active %q, west end %d (%v), %s", st.Active, end, err, saw)
	})
	eastEnd, err := east.endOffsets()
	if err != nil {
		t.Fatal(err)
	}
	westEnd, err := west.endOffsets()
	if err != nil {
		t.Fatal(err)
	}
	kfaketest.Wait(t, 10*time.Second, "50 more records on west", func() (bool, string) {
		end, err := west.endOffsets()
		return end >= westEnd+50, fmt.Sprintf("west end %d (%v), was %d", end, err, westEnd)
	})
	if got, err := east.endOffsets(); got != eastEnd || err != nil {
		t.Errorf("east grew from %d to %d (%v) after the traffic moved to west", eastEnd, got, err)
	}

	// And back: an unknown answer pauses, east resumes.
	active.Store("")
	kfaketest.Wait(t, 5*time.Second, "traffic paused", func() (bool, string) {
		st := s.Stats()
		return st.Active == "", fmt.Sprintf("active %q", st.Active)
	})
	active.Store(East)
	kfaketest.Wait(t, 10*time.Second, "traffic back on east", func() (bool, string) {
		end, err := east.endOffsets()
		return end > eastEnd && s.Stats().Active == East, fmt.Sprintf("east end %d (%v), was %d", end, err, eastEnd)
	})
	if st := s.Stats(); st.AbortedRead != 0 {
		t.Errorf("groups read %d aborted records", st.AbortedRead)
	}
}

// TestRunStopsCleanly is not parallel: it counts goroutines.
func TestRunStopsCleanly(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(t.Context())
	log := &syncBuffer{}
	dir := t.TempDir()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Dir: dir, EastPort: AnyPort, WestPort: AnyPort, Rate: 50, Log: log})
	}()
	kfaketest.Wait(t, 10*time.Second, "instructions and traffic", func() (bool, string) {
		select {
		case err := <-done:
			t.Fatalf("Run returned before it was cancelled: %v", err)
		default:
		}
		return strings.Contains(log.String(), "traffic runs on east"), log.String()
	})
	path := filepath.Join(dir, TopologyFile)
	for _, want := range []string{
		"drctl -c " + shellQuote(path) + " validate --online",
		"drctl -c " + shellQuote(path) + " status ",
		"drctl -c " + shellQuote(path) + " mirror lag",
		"127.0.0.1:",
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("instructions lack %q:\n%s", want, log)
		}
	}
	// The instructions come first: the log reads from the top.
	if first := strings.TrimSpace(log.String()); !strings.HasPrefix(first, "drctl sandbox is running") {
		t.Errorf("the output does not start with the instructions:\n%s", log)
	}
	// Stop in steady state: producer, transactions and both groups running.
	topo, err := topology.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	east := newProbe(t, topo.Clusters[East].Bootstrap)
	kfaketest.Wait(t, 15*time.Second, "both groups committed on east", east.groupsCommitted)
	east.admin.Close()

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after Ctrl-C = %v, want nil", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return 15s after its context was cancelled")
	}
	// sarama starts one process-wide metrics goroutine on first use.
	kfaketest.Wait(t, 5*time.Second, "goroutines to end", func() (bool, string) {
		n := runtime.NumGoroutine()
		if n <= before+1 {
			return true, ""
		}
		buf := make([]byte, 1<<20)
		return false, fmt.Sprintf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	})
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"drctl.yaml":         "drctl.yaml",
		"/tmp/x/drctl.yaml":  "/tmp/x/drctl.yaml",
		"/my dir/drctl.yaml": "'/my dir/drctl.yaml'",
		"it's.yaml":          `'it'\''s.yaml'`,
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
