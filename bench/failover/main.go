package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// options are the knobs of one benchmark run.
type options struct {
	east, west      string
	user, password  string
	topics          int
	partitions      int
	groups          int
	records         int // per partition
	valueSize       int
	quietPeriod     time.Duration
	groupSync       time.Duration
	shards          int
	drctl           string
	keep            bool
	catchUpTimeout  time.Duration
	failoverTimeout time.Duration
	eventsOut       string
	cleanupOnly     string
	copyLimit       bool
}

func main() {
	var o options
	flag.StringVar(&o.east, "east", envOr("DRCTL_E2E_EAST", "127.0.0.1:39092"), "east bootstrap (the active)")
	flag.StringVar(&o.west, "west", envOr("DRCTL_E2E_WEST", "127.0.0.1:49092"), "west bootstrap (the standby)")
	flag.StringVar(&o.user, "user", envOr("DRCTL_E2E_USER", "drctl"), "SASL PLAIN user drctl runs as (a super user)")
	flag.StringVar(&o.password, "password", envOr("DRCTL_E2E_PASSWORD", "drctl-secret"), "its password")
	flag.IntVar(&o.topics, "topics", 100, "topics to create")
	flag.IntVar(&o.partitions, "partitions", 12, "partitions per topic")
	flag.IntVar(&o.groups, "groups", 50, "consumer groups with committed positions on east (each on 2 topics, every partition)")
	flag.IntVar(&o.records, "records", 100, "records per partition")
	flag.IntVar(&o.valueSize, "value-size", 100, "bytes per record value")
	flag.DurationVar(&o.quietPeriod, "quiet-period", 5*time.Second, "failover.quiet_period (the drain waits this long with nothing new; drctl's default is 5s)")
	flag.DurationVar(&o.groupSync, "group-sync", 5*time.Second, "mirror.group_sync_interval (drctl's default 5s; a long one leaves every position to the failover's translate-groups step)")
	flag.IntVar(&o.shards, "shards", 8, "drctl mirror run --shards")
	flag.StringVar(&o.drctl, "drctl", "", "drctl binary (default: built from this checkout)")
	flag.BoolVar(&o.keep, "keep", false, "keep the topics, groups and ACLs")
	flag.DurationVar(&o.catchUpTimeout, "catch-up-timeout", 15*time.Minute, "how long the mirror may take to copy the data before the failover")
	flag.DurationVar(&o.failoverTimeout, "failover-timeout", 15*time.Minute, "bound on the failover run")
	flag.StringVar(&o.eventsOut, "events", "", "also write the failover's JSON event stream to this file")
	flag.BoolVar(&o.copyLimit, "copy-limit", true, "after the failover, time the reseed's copy limit: the same topics created afresh on east and the same records written there by a plain producer")
	flag.StringVar(&o.cleanupOnly, "cleanup", "", "only delete what the run of this topology (fobench-...) left, e.g. after -keep")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/failover:", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, o options) error {
	dir, err := os.MkdirTemp("", "drctl-bench-failover-")
	if err != nil {
		return err
	}
	if o.drctl == "" {
		if o.drctl, err = buildDrctl(ctx, dir); err != nil {
			return err
		}
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "fobench-" + hex.EncodeToString(b)
	if o.cleanupOnly != "" {
		name = o.cleanupOnly
	}
	bench, err := newBench(o, name, dir)
	if err != nil {
		return err
	}
	defer bench.close()
	if o.cleanupOnly != "" {
		bench.cleanup()
		return nil
	}
	logf("topology %s, work dir %s", bench.name, dir)
	if !o.keep {
		defer bench.cleanup()
	}

	start := time.Now()
	if err := bench.createTopics(ctx, bench.topics(), 1); err != nil {
		return err
	}
	logf("%d topics x %d partitions created on east in %v", o.topics, o.partitions, time.Since(start).Round(time.Millisecond))
	t0 := time.Now()
	n, err := bench.produce(ctx, bench.topics())
	if err != nil {
		return err
	}
	logf("%d records written to east in %v", n, time.Since(t0).Round(time.Millisecond))
	positions, err := bench.commitGroups(ctx)
	if err != nil {
		return err
	}
	logf("%d groups committed %d positions on east", o.groups, positions)

	t0 = time.Now()
	m, err := bench.startMirror(ctx)
	if err != nil {
		return err
	}
	defer m.stop()
	if err := bench.waitCaughtUp(ctx, o.catchUpTimeout); err != nil {
		return err
	}
	initialCopy := time.Since(t0)
	logf("the mirror copied everything to west in %v; producers are stopped", initialCopy.Round(time.Millisecond))
	if err := bench.waitGroupSync(ctx); err != nil {
		return err
	}

	res, err := bench.failover(ctx, o.failoverTimeout)
	if err != nil {
		return err
	}
	if o.eventsOut != "" {
		if err := os.WriteFile(o.eventsOut, res.raw, 0o644); err != nil {
			return err
		}
	}
	if res.code != 0 {
		fmt.Print(res.report(o, n, positions, initialCopy))
		return fmt.Errorf("drctl failover exited %d: %s", res.code, res.stderr)
	}
	if o.copyLimit {
		m.stop() // the reseed is over; the limit runs on quiet brokers
		if res.limitCreate, res.limitWrite, err = bench.copyLimit(ctx); err != nil {
			return fmt.Errorf("copy limit: %w", err)
		}
	}
	fmt.Print(res.report(o, n, positions, initialCopy))
	logf("whole benchmark %v (logs in %s)", time.Since(start).Round(time.Second), dir)
	return nil
}
