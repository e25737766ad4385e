package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/internal/testkit/kfaketest"
	"github.com/drctl/drctl/mirror"
)

// syncBuffer collects a log written from many goroutines.
type syncBuffer = kfaketest.LogBuffer

// TestDrillSchedule: the scheduler runs a scheduled drill and its metrics
// show it on --listen; a topology without schedules is bad input.
func TestDrillSchedule(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	p := kfaketest.NewPair(t, kfaketest.Options{
		Mirror: "  topics: {include: [\"orders\"]}\n  group_sync_interval: 500ms",
		Extra:  "drills:\n  named:\n    quick:\n      schedule: \"@every 2s\"\n      params: {records: 5, rate: 100}\n"})
	mctx, mcancel := context.WithCancel(context.Background())
	d := mirror.NewDaemon(p.Topology, mirror.DaemonOptions{StatePoll: 200 * time.Millisecond,
		Engine: mirror.Options{Shards: 1, IdleCheck: 100 * time.Millisecond, TopicSyncInterval: 200 * time.Millisecond}})
	done := make(chan error, 1)
	go func() { done <- d.Run(mctx) }()
	t.Cleanup(func() { mcancel(); <-done })

	ctx, cancel := context.WithCancel(context.Background())
	var errb syncBuffer
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, []string{"drctl", "-c", p.Path, "drill", "schedule", "--listen", "127.0.0.1:0", "--log-format", "json"}, Streams{Out: io.Discard, Err: &errb})
	}()
	addrRE := regexp.MustCompile(`"listen":"(127\.0\.0\.1:\d+)"`)
	deadline := time.Now().Add(60 * time.Second)
	var metrics string
	for {
		if m := addrRE.FindStringSubmatch(errb.String()); m != nil {
			if resp, err := http.Get("http://" + m[1] + "/metrics"); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				metrics = string(b)
				if strings.Contains(metrics, `drctl_drill_last_success_timestamp_seconds{drill="quick",kind="canary"}`) {
					break
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no successful drill in the metrics:\n%s\nlog:\n%s", metrics, errb.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, want := range []string{`drctl_drill_last_run_timestamp_seconds{drill="quick",kind="canary"}`, `drctl_drill_rpo_seconds{drill="quick",kind="canary"}`,
		`drctl_drill_canary_latency_seconds{drill="quick",kind="canary",quantile="0.99"}`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	cancel()
	if code := <-exited; code != exitOK {
		t.Errorf("scheduler exit %d: %s", code, errb.String())
	}
	// --log-format json: every line is one object; the drills' lines name
	// the drill, its slot and the record.
	passed := 0
	for line := range strings.SplitSeq(strings.TrimSpace(errb.String()), "\n") {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Errorf("log line is not JSON: %q", line)
			continue
		}
		if entry["msg"] == "drill passed" && entry["drill"] == "quick" && entry["slot"] != nil && strings.HasPrefix(fmt.Sprint(entry["id"]), "drill-canary-") {
			passed++
		}
	}
	if passed == 0 {
		t.Errorf("no JSON line says drill quick passed:\n%s", errb.String())
	}

	plain := kfaketest.NewPair(t, kfaketest.Options{})
	if _, errs, code := drctl(t, "-c", plain.Path, "drill", "schedule", "--listen", ""); code != exitBadInput || !strings.Contains(errs, "schedules no drill") {
		t.Errorf("no schedules: exit %d %s", code, errs)
	}
}
