//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/topology"
)

// The failover tests drive whole runs of `drctl failover`, `failback` and
// `resume` as child processes against the two real clusters, with
// `drctl mirror run` as another child. Everything a test creates (its
// topology's role state, topics, groups, ACLs, internal topics of both
// links) is named after the topology, "fo-<kind>-<random>", so tests never
// meet, and the cleanup can find it all by prefix.

// foTopo is one failover test's topology.
type foTopo struct {
	Name string
	Path string
	Topo *topology.Topology
	// State is the XDG_STATE_HOME of the drctl children: their run
	// journals stay in the test's temp dir.
	State string
}

// newFoTopo writes a topology whose mirror selects the topics and groups
// named "<name>.*", syncs groups every groupSync, and whose failover is
// given by failoverYAML (a flow mapping, e.g. `{fence: acl, drain_timeout: 2m}`). Its cleanup, registered
// first so that it runs after every child is gone, deletes on both
// clusters every topic, group and ACL named after the topology, and drctl's
// fence record.
func newFoTopo(t *testing.T, kind, groupSync, failoverYAML string) *foTopo {
	t.Helper()
	return newFoTopoOver(t, kind, func(name string) string { return topologyHead(name, passwordVar) }, groupSync, failoverYAML)
}

// newFoTopoOver is newFoTopo with the clusters (and roles) section that
// head renders for the topology's name, e.g. the TLS listeners.
func newFoTopoOver(t *testing.T, kind string, head func(name string) string, groupSync, failoverYAML string) *foTopo {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "fo-" + kind + "-" + hex.EncodeToString(b)
	sel := regexp.QuoteMeta(name) + `\..*`
	dir := t.TempDir()
	path := filepath.Join(dir, "drctl.yaml")
	yaml := head(name) + fmt.Sprintf(`mirror:
  topics: {include: [%q]}
  groups: {include: [%q]}
  delivery: exactly-once
  group_sync_interval: %s
failover: %s
`, sel, sel, groupSync, failoverYAML)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	topo, err := topology.Parse(path, []byte(yaml), func(key string) (string, bool) {
		if key == passwordVar {
			return env.Password, true
		}
		return os.LookupEnv(key)
	})
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	ft := &foTopo{Name: name, Path: path, Topo: topo, State: filepath.Join(dir, "state")}
	t.Cleanup(func() {
		for _, cluster := range env.clusterNames {
			foSweep(t, cluster, name)
		}
	})
	return ft
}

// topic returns the full name of one of the test's topics or groups.
func (ft *foTopo) topic(short string) string { return ft.Name + "." + short }

// mirrorTopo adapts the topology to the mirror tests' helpers (startMirror).
func (ft *foTopo) mirrorTopo() *mirrorTopo {
	return &mirrorTopo{Name: ft.Name, Path: ft.Path, Topo: ft.Topo}
}

// env is the environment of every drctl child of the test.
func (ft *foTopo) env() []string {
	return []string{passwordVar + "=" + env.Password, "XDG_STATE_HOME=" + ft.State}
}

// dial connects as drctl to a cluster of the topology.
func (ft *foTopo) dial(t testing.TB, cluster string) sarama.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := kafkaconn.Dial(ctx, ft.Topo.Clusters[cluster], nil)
	if err != nil {
		t.Fatalf("dial %s: %v", cluster, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// foSweep deletes, on cluster, every topic, consumer group and ACL whose
// name starts with the topology's name (its own data) or with its internal
// prefix "_drctl.<name>." (the mirror's bookkeeping of both links), and the
// drills' canary topic of the topology. It runs in cleanups: a cluster that
// is down is skipped.
func foSweep(t testing.TB, cluster, name string) {
	c, err := sarama.NewClient([]string{bootstrap(t, cluster)}, adminConfig(t))
	if err != nil {
		t.Logf("cleanup %s: %v", cluster, err)
		return
	}
	defer c.Close()
	admin, err := sarama.NewClusterAdminFromClient(c)
	if err != nil {
		return
	}
	canary := (&topology.Topology{Name: name}).CanaryTopic() // a drill's, fenced on the standby
	ours := func(s string) bool {
		return strings.HasPrefix(s, name+".") || strings.HasPrefix(s, "_drctl."+name+".") || s == canary
	}
	if acls, err := admin.ListAcls(foAnyACL()); err == nil {
		for _, ra := range acls {
			if !ours(ra.ResourceName) {
				continue
			}
			for _, a := range ra.Acls {
				rn, pr, host := ra.ResourceName, a.Principal, a.Host
				_, _ = admin.DeleteACL(sarama.AclFilter{ResourceType: ra.ResourceType, ResourceName: &rn,
					ResourcePatternTypeFilter: ra.ResourcePatternType, Principal: &pr, Host: &host,
					Operation: a.Operation, PermissionType: a.PermissionType}, false)
			}
		}
	}
	// A mirror killed a moment ago still holds its worker group until its
	// session times out: retry those for a while.
	if groups, err := admin.ListConsumerGroups(); err == nil {
		deadline := time.Now().Add(20 * time.Second)
		for g := range groups {
			for ours(g) {
				err := admin.DeleteConsumerGroup(g)
				if !errors.Is(err, sarama.ErrNonEmptyGroup) || time.Now().After(deadline) {
					break
				}
				time.Sleep(500 * time.Millisecond)
			}
		}
	}
	if topics, err := admin.ListTopics(); err == nil {
		for tp := range topics {
			if ours(tp) {
				_ = admin.DeleteTopic(tp)
			}
		}
	}
}

func foAnyACL() sarama.AclFilter {
	return sarama.AclFilter{ResourceType: sarama.AclResourceAny, ResourcePatternTypeFilter: sarama.AclPatternAny,
		Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny}
}

// foACL is one ACL, comparable.
type foACL struct {
	Resource   string // "Topic:name" (literal patterns only in these tests)
	Principal  string
	Host       string
	Operation  string
	Permission string
}

func (a foACL) String() string {
	return fmt.Sprintf("%s %s %s from %s on %s", a.Permission, a.Operation, a.Principal, a.Host, a.Resource)
}

// foACLs lists the ACLs of cluster on resources named after the topology.
func (ft *foTopo) acls(t testing.TB, cluster string) map[foACL]bool {
	t.Helper()
	admin, err := sarama.NewClusterAdminFromClient(ft.dial(t, cluster))
	if err != nil {
		t.Fatal(err)
	}
	list, err := admin.ListAcls(foAnyACL())
	if err != nil {
		t.Fatalf("list ACLs of %s: %v", cluster, err)
	}
	out := map[foACL]bool{}
	for _, ra := range list {
		if !strings.HasPrefix(ra.ResourceName, ft.Name+".") {
			continue
		}
		rt, pt := ra.ResourceType, ra.ResourcePatternType
		for _, a := range ra.Acls {
			op, perm := a.Operation, a.PermissionType
			out[foACL{Resource: rt.String() + ":" + ra.ResourceName + "(" + pt.String() + ")", Principal: a.Principal, Host: a.Host,
				Operation: op.String(), Permission: perm.String()}] = true
		}
	}
	return out
}

// addACLs creates literal topic ACLs on cluster.
func (ft *foTopo) addACLs(t testing.TB, cluster string, acls ...foTopicACL) {
	t.Helper()
	admin, err := sarama.NewClusterAdminFromClient(ft.dial(t, cluster))
	if err != nil {
		t.Fatal(err)
	}
	var req []*sarama.ResourceAcls
	for _, a := range acls {
		req = append(req, &sarama.ResourceAcls{
			Resource: sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: a.Topic, ResourcePatternType: sarama.AclPatternLiteral},
			Acls:     []*sarama.Acl{{Principal: a.Principal, Host: "*", Operation: a.Op, PermissionType: a.Perm}},
		})
	}
	if err := admin.CreateACLs(req); err != nil {
		t.Fatalf("create ACLs on %s: %v", cluster, err)
	}
}

type foTopicACL struct {
	Topic, Principal string
	Op               sarama.AclOperation
	Perm             sarama.AclPermissionType
}

// diffACLs describes how got differs from want ("" when equal).
func diffACLs(got, want map[foACL]bool) string {
	var extra, missing []string
	for a := range got {
		if !want[a] {
			extra = append(extra, a.String())
		}
	}
	for a := range want {
		if !got[a] {
			missing = append(missing, a.String())
		}
	}
	if len(extra) == 0 && len(missing) == 0 {
		return ""
	}
	sort.Strings(extra)
	sort.Strings(missing)
	return fmt.Sprintf("extra: %v; missing: %v", extra, missing)
}

// union returns a copy of a with every ACL of b added.
func unionACLs(a, b map[foACL]bool) map[foACL]bool {
	out := map[foACL]bool{}
	for x := range a {
		out[x] = true
	}
	for x := range b {
		out[x] = true
	}
	return out
}

// fenceACLs is the set of DENY WRITE ACLs drctl's fence stands for.
func fenceACLs(principal string, topics ...string) map[foACL]bool {
	out := map[foACL]bool{}
	for _, tp := range topics {
		out[foACL{Resource: "Topic:" + tp + "(Literal)", Principal: principal, Host: "*", Operation: "Write", Permission: "Deny"}] = true
	}
	return out
}

// foRun is the outcome of one drctl run (failover, failback, resume) with
// `-o json`: its event stream, decoded.
type foRun struct {
	Code    int
	Took    time.Duration
	Events  []plans.Event
	Stderr  string
	Started time.Time
	// Progress is the last progress message of each step.
	Progress map[string]string
}

// stepDone returns the step-done event of the step named name.
func (r *foRun) stepDone(name string) (plans.Event, bool) {
	for _, e := range r.Events {
		if e.Type == plans.EventStepDone && e.Name == name {
			return e, true
		}
	}
	return plans.Event{}, false
}

// finished reports whether the step named name is done or failed.
func (r *foRun) finished(name string) bool {
	for _, e := range r.Events {
		if (e.Type == plans.EventStepDone || e.Type == plans.EventStepFailed) && e.Name == name {
			return true
		}
	}
	return false
}

// doneAt returns when the step named name was done, counted from the
// start of the drctl process (planning and the guard between steps
// included).
func (r *foRun) doneAt(name string) time.Duration {
	if e, ok := r.stepDone(name); ok {
		return e.Time.Sub(r.Started)
	}
	return 0
}

// failed returns the step-failed event, if any.
func (r *foRun) failed() (plans.Event, bool) {
	for _, e := range r.Events {
		if e.Type == plans.EventStepFailed {
			return e, true
		}
	}
	return plans.Event{}, false
}

// outcome returns the run-done event.
func (r *foRun) outcome() plans.Event {
	for _, e := range r.Events {
		if e.Type == plans.EventRunDone {
			return e
		}
	}
	return plans.Event{}
}

// timings renders the elapsed time of every step that finished.
func (r *foRun) timings() string {
	var b strings.Builder
	for _, e := range r.Events {
		switch e.Type {
		case plans.EventStepDone:
			fmt.Fprintf(&b, "  %-20s %8.3fs  %s\n", e.Name, float64(e.ElapsedMS)/1000, e.Summary)
		case plans.EventStepFailed:
			fmt.Fprintf(&b, "  %-20s %8.3fs  FAILED: %s\n", e.Name, float64(e.ElapsedMS)/1000, firstLine(e.Error))
		case plans.EventStepStarted:
			if !r.finished(e.Name) {
				fmt.Fprintf(&b, "  %-20s running   last progress: %s\n", e.Name, r.Progress[e.Name])
			}
		}
	}
	fmt.Fprintf(&b, "  %-20s %8.3fs  (wall time of the drctl process, exit %d)", "total", r.Took.Seconds(), r.Code)
	return b.String()
}

// sumSteps adds up the elapsed time of the steps from first to last
// (inclusive, by name, in plan order).
func (r *foRun) sumSteps(first, last string) time.Duration {
	var sum time.Duration
	in := false
	for _, e := range r.Events {
		if e.Type != plans.EventStepDone {
			continue
		}
		if e.Name == first {
			in = true
		}
		if in {
			sum += time.Duration(e.ElapsedMS) * time.Millisecond
		}
		if e.Name == last {
			in = false
		}
	}
	return sum
}

func firstLine(s string) string {
	if before, _, ok := strings.Cut(s, "\n"); ok {
		return before + " ..."
	}
	return s
}

// run runs `drctl -c topo -o json args...` to its end (bounded by
// timeout), decoding its event stream as it comes; onEvent, if set, sees
// each event as soon as it is written.
func (ft *foTopo) run(t testing.TB, timeout time.Duration, onEvent func(plans.Event), args ...string) *foRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, drctlBinary(t), append([]string{"-c", ft.Path, "-o", "json"}, args...)...)
	cmd.Env = append(os.Environ(), ft.env()...)
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	r := &foRun{Started: time.Now(), Progress: map[string]string{}}
	if err := cmd.Start(); err != nil {
		t.Fatalf("drctl %v: %v", args, err)
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e plans.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Type == "" {
			t.Logf("drctl %s: %s", args[0], sc.Text())
			continue
		}
		if e.Type == plans.EventStepProgress {
			r.Progress[e.Name] = e.Message
			continue
		}
		r.Events = append(r.Events, e)
		if onEvent != nil {
			onEvent(e)
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	r.Took = time.Since(r.Started)
	r.Stderr = stderr.String()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	case err != nil:
		t.Fatalf("drctl %v: %v\nstderr: %s", args, err, r.Stderr)
	}
	if ctx.Err() != nil {
		t.Fatalf("drctl %v did not finish within %v; events so far:\n%s\nstderr: %s", args, timeout, r.timings(), r.Stderr)
	}
	t.Logf("drctl %s -> exit %d in %v; steps:\n%s", strings.Join(args, " "), r.Code, r.Took.Round(time.Millisecond), r.timings())
	if strings.TrimSpace(r.Stderr) != "" {
		t.Logf("drctl %s stderr:\n%s", args[0], r.Stderr)
	}
	return r
}

// foClock records how long each phase of a test took, for its report.
type foClock struct {
	mu     sync.Mutex
	start  time.Time
	last   time.Time
	phases []string
}

func newFoClock() *foClock { now := time.Now(); return &foClock{start: now, last: now} }

// lap ends the current phase under name.
func (c *foClock) lap(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.phases = append(c.phases, fmt.Sprintf("  %-58s %8.1fs", name, now.Sub(c.last).Seconds()))
	c.last = now
}

func (c *foClock) report() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.phases, "\n") + fmt.Sprintf("\n  %-58s %8.1fs", "whole test", time.Since(c.start).Seconds())
}

// sameRecords checks that copy holds exactly the records of orig (one
// partition of a topic on each cluster), in order, as the mirror copies
// them: same key, value, timestamp and own headers; the copy's source
// offset header names the original's offset; its origin is the original's
// origin, or origID when the original carries none (it was produced on the
// cluster of orig).
func sameRecords(orig, cp []kafkaread.Record, origID string) error {
	if len(orig) != len(cp) {
		return fmt.Errorf("%d records, the copy holds %d", len(orig), len(cp))
	}
	for i := range orig {
		o, c := orig[i], cp[i]
		oOrigin, _, oOrigins, _ := provenance(o)
		cOrigin, cOff, cOrigins, cOffs := provenance(c)
		want := []byte(origID)
		if oOrigins == 1 {
			want = oOrigin
		}
		switch {
		case cOrigins != 1 || cOffs != 1:
			return fmt.Errorf("record %d (offset %d of the copy): %d origin and %d source-offset headers", i, c.Offset, cOrigins, cOffs)
		case cOff != o.Offset:
			return fmt.Errorf("record %d: the copy names source offset %d, the original is at %d", i, cOff, o.Offset)
		case string(cOrigin) != string(want):
			return fmt.Errorf("record %d (offset %d): origin %q, want %q", i, o.Offset, cOrigin, want)
		case !sameBytes(o.Key, c.Key) || !sameBytes(o.Value, c.Value):
			return fmt.Errorf("record %d (offset %d): %q=%q copied as %q=%q", i, o.Offset, o.Key, o.Value, c.Key, c.Value)
		case !o.Timestamp.Equal(c.Timestamp):
			return fmt.Errorf("record %d (offset %d): timestamp %v copied as %v", i, o.Offset, o.Timestamp, c.Timestamp)
		}
	}
	return nil
}

// sameTopic compares every partition of topic on orig and on cp.
func sameTopic(orig, cp sarama.Client, topic string, origID string) (int, error) {
	if err := orig.RefreshMetadata(topic); err != nil {
		return 0, err
	}
	if err := cp.RefreshMetadata(topic); err != nil {
		return 0, err
	}
	parts, err := orig.Partitions(topic)
	if err != nil {
		return 0, err
	}
	cparts, err := cp.Partitions(topic)
	if err != nil {
		return 0, err
	}
	if len(parts) != len(cparts) {
		return 0, fmt.Errorf("%s: %d partitions, the copy has %d", topic, len(parts), len(cparts))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := 0
	for _, p := range parts {
		o, err := readPartition(ctx, orig, topic, p)
		if err != nil {
			return 0, err
		}
		c, err := readPartition(ctx, cp, topic, p)
		if err != nil {
			return 0, err
		}
		if err := sameRecords(o, c, origID); err != nil {
			return 0, fmt.Errorf("%s/%d: %w", topic, p, err)
		}
		n += len(o)
	}
	return n, nil
}

// waitLinkCaught waits until the link source -> target has copied
// everything and every partition has progress.
func (ft *foTopo) waitLinkCaught(t testing.TB, source, target string, timeout time.Duration) {
	t.Helper()
	kfaketest.WaitFor(t, timeout, fmt.Sprintf("the mirror %s->%s caught up", source, target), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		rep, err := linkstate.MeasureLag(ctx, session(t, ft.Topo), ft.Topo.Link(source, target))
		if err != nil {
			return err
		}
		if !rep.Caught() {
			return fmt.Errorf("%d records behind", rep.TotalRecords)
		}
		return nil
	})
}
