package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/topology"
)

// TestMirrorExportsDrillGauges: `drctl mirror run` reports the drills
// recorded in the clusters on its /metrics, so that drill alerts work where
// drills run as CronJobs: a canary drill run elsewhere (its journal not on
// this machine) shows up as drctl_drill_last_success_timestamp_seconds.
func TestMirrorExportsDrillGauges(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	p := kfaketest.NewPair(t, kfaketest.Options{
		Mirror: "  topics: {include: [\"orders\"]}\n  group_sync_interval: 500ms",
		Extra:  "failover: {fence: none, drain_timeout: 30s, quiet_period: 300ms}\n"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errb syncBuffer
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, []string{"drctl", "-c", p.Path, "mirror", "run", "--listen", "127.0.0.1:0", "--log-format", "json",
			"--drill-metrics-interval", "300ms", "--shards", "1"}, Streams{Out: io.Discard, Err: &errb})
	}()
	scrape := func(want string, within time.Duration) string {
		t.Helper()
		addrRE := regexp.MustCompile(`"addr":"(127\.0\.0\.1:\d+)"`)
		deadline := time.Now().Add(within)
		var metrics string
		for {
			if m := addrRE.FindStringSubmatch(errb.String()); m != nil {
				if resp, err := http.Get("http://" + m[1] + "/metrics"); err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if metrics = string(b); strings.Contains(metrics, want) {
						return metrics
					}
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("/metrics never showed %s:\n%s\nlog:\n%s", want, metrics, errb.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if m := scrape("drctl_mirror_ready 1", 60*time.Second); strings.Contains(m, "drctl_drill_last_success_timestamp_seconds{") {
		t.Fatalf("drill gauges before any drill ran:\n%s", m)
	}

	rctx, rcancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer rcancel()
	rec, err := drill.Run(rctx, kfaketest.Session(t, p.Topology), topology.DefaultDrill(topology.DrillCanary), drill.Options{JournalDir: t.TempDir()})
	if err != nil || !rec.Passed() {
		t.Fatalf("canary drill: %v %+v", err, rec)
	}
	m := scrape(`drctl_drill_last_success_timestamp_seconds{drill="canary",kind="canary"}`, 30*time.Second)
	if !strings.Contains(m, `drctl_drill_last_run_timestamp_seconds{drill="canary",kind="canary"}`) {
		t.Errorf("the last run gauge is missing:\n%s", m)
	}
	cancel()
	if code := <-exited; code != exitOK {
		t.Errorf("mirror run exit %d: %s", code, errb.String())
	}
}
