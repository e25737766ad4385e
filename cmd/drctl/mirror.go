package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/urfave/cli/v2"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/mirror"
	"github.com/drctl/drctl/topology"
	"github.com/drctl/drctl/verify"
)

func mirrorCommand() *cli.Command {
	return &cli.Command{
		Name:  "mirror",
		Usage: "run the mirror daemon, or show its lag",
		Subcommands: commands(
			&cli.Command{
				Name:  "run",
				Usage: "mirror the live active cluster to the live standby, following the roles",
				Description: "mirror run copies the selected topics from the live active cluster to the live standby,\n" +
					"partition for partition, exactly once (or at least once, per mirror.delivery). It follows the\n" +
					"live roles stored in the clusters: after a failover it stops the old direction and starts\n" +
					"the new one when the phase allows it. Run several processes to share the work. SIGTERM or\n" +
					"Ctrl-C stops it gracefully, committing what is in flight.",
				Flags: append(logFlags(),
					&cli.StringFlag{Name: "listen", Value: mirror.DefaultListen, Usage: "address of /metrics, /healthz and /readyz (empty: none)"},
					&cli.IntFlag{Name: "shards", Usage: fmt.Sprintf("shards of a new link (default: one per %d selected source partitions, %d to %d); a link that ran keeps its count: give it only to check it, and change it with drctl mirror reshard", mirror.PartitionsPerShard, mirror.MinShards, mirror.DefaultShards)},
					&cli.DurationFlag{Name: "txn-interval", Value: mirror.DefaultTxnInterval, Usage: "longest time one transaction gathers records, reached only with a backlog"},
					&cli.IntFlag{Name: "txn-concurrency", Value: 0, Usage: "at most this many of a process's shards in a transaction at once while they keep up (a shard with a backlog does not wait); fewer, larger transactions for a saturated target (0: no limit)"},
					&cli.DurationFlag{Name: "session-timeout", Value: 10 * time.Second, Usage: "worker group session timeout: how soon others take over a dead process's shards (at least the brokers' group.min.session.timeout.ms, 6s by default)"},
					&cli.DurationFlag{Name: "stall-timeout", Value: 2 * time.Minute, Usage: "/healthz fails when the link is behind and makes no progress for this long"},
					&cli.DurationFlag{Name: "drill-metrics-interval", Value: time.Minute, Usage: "how often the drctl_drill_* gauges on /metrics are read from the clusters' drill records, so drill alerts work where drills run as CronJobs (0: not exported)"},
					&cli.IntFlag{Name: "memory-limit-mb", Value: 256, Usage: "soft memory limit of the Go runtime in MiB (GOMEMLIMIT overrides; 0: none): the garbage collector works harder near it"},
				),
				Action: mirrorRun,
			},
			&cli.Command{
				Name:  "lag",
				Usage: "per-partition lag of the live link, in records and seconds",
				Flags: []cli.Flag{
					&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "give up after this long"},
				},
				Action: mirrorLag,
			},
			mirrorReseedTopicCommand(),
			mirrorReshardCommand(),
			mirrorAckLostCommand(),
		),
	}
}

// maxShards bounds --shards: each shard is a transactional id, a
// partition of the shards topic and a fetch loop.
const maxShards = 1024

func mirrorRun(c *cli.Context) error {
	log, err := logger(c)
	if err != nil {
		return err
	}
	shards := c.Int("shards")
	if c.IsSet("shards") && (shards < 1 || shards > maxShards) {
		return withCode(exitBadInput, fmt.Errorf("--shards %d: use 1 to %d, or leave it out to keep the link's count", shards, maxShards))
	}
	if n := c.Int("txn-concurrency"); n < 0 || n > cmp.Or(shards, maxShards) {
		if shards == 0 {
			return withCode(exitBadInput, fmt.Errorf("--txn-concurrency %d: use 1 to %d (at most the link's shard count counts), or 0 for no limit", n, maxShards))
		}
		return withCode(exitBadInput, fmt.Errorf("--txn-concurrency %d: use 1 to the shard count (%d), or 0 for no limit", n, shards))
	}
	topo, err := loadTopology(c)
	if err != nil {
		return err
	}
	if mb := c.Int("memory-limit-mb"); mb > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(int64(mb) << 20)
	}
	bi := buildInfo()
	opts := mirror.DaemonOptions{
		Listen:  c.String("listen"),
		Version: bi.Version,
		Commit:  bi.Commit,
		Engine: mirror.Options{
			Delivery:       topo.Mirror.Delivery,
			Shards:         int32(shards),
			TxnInterval:    c.Duration("txn-interval"),
			TxnConcurrency: c.Int("txn-concurrency"),
			SessionTimeout: c.Duration("session-timeout"),
			StallTimeout:   c.Duration("stall-timeout"),
			Logger:         log,
		},
		Started: func(addr string) { log.Info("serving /metrics, /healthz, /readyz", "addr", addr) },
	}
	every := c.Duration("drill-metrics-interval")
	if every < 0 {
		return withCode(exitBadInput, fmt.Errorf("--drill-metrics-interval %s: use a positive duration, or 0 for none", every))
	}
	var (
		drills *drill.Metrics
		proofs *verify.Metrics
	)
	opts.Register = func(reg prometheus.Registerer) {
		if every > 0 && opts.Listen != "" {
			drills = drill.NewMetrics(reg)
		}
		proofs = verify.NewMetrics(reg)
	}
	opts.Beside = func(ctx context.Context, link topology.Link, leads func() bool) {
		followProof(ctx, topo, link, leads, proofs, log)
	}
	d := mirror.NewDaemon(topo, opts)
	if drills != nil {
		go drill.WatchMetrics(c.Context, topo, drills, every, log)
	}
	log.Info("mirror starting", "topology", topo.Name, "delivery", topo.Mirror.Delivery, "pid", os.Getpid())
	return d.Run(c.Context)
}

// followProof runs the mirror's verifier (mirror.verify) beside link until
// ctx ends, through a session of its own: its reads must not queue behind
// the copy's, nor the copy's behind them.
func followProof(ctx context.Context, topo *topology.Topology, link topology.Link, leads func() bool, m *verify.Metrics, log *slog.Logger) {
	if topo.Mirror.Verify.Mode == topology.VerifyOff {
		return
	}
	clusters := kafkaconn.Open(ctx, topo, link.Source, link.Target)
	defer clusters.Close()
	log.Info("verifier following the link", "link", link.String(), "mode", topo.Mirror.Verify.Mode, "sample", topo.Mirror.Verify.Sample)
	_ = verify.Follow(ctx, clusters, link, verify.FollowOptions{Verify: topo.Mirror.Verify, Metrics: m, Leads: leads, Logger: log})
}

// liveLink resolves the roles and returns the link they run.
func liveLink(ctx context.Context, clusters *kafkaconn.Clusters) (topology.Link, error) {
	topo := clusters.Topology()
	st, err := inspect.CollectRoles(ctx, clusters)
	if err != nil {
		return topology.Link{}, withCode(exitUnreachable, fmt.Errorf("cannot read the live roles: %w", err))
	}
	return topo.Link(st.Active, st.Standby), nil
}

func mirrorLag(c *cli.Context) error {
	topo, err := loadTopology(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	clusters := kafkaconn.Open(ctx, topo)
	defer clusters.Close()
	link, err := liveLink(ctx, clusters)
	if err != nil {
		return err
	}
	rep, err := linkstate.MeasureLag(ctx, clusters, link)
	if err != nil {
		return withCode(exitUnreachable, err)
	}
	return render(c, rep, func(w io.Writer) error {
		fmt.Fprintf(w, "link %s: %d records behind, oldest pending record %.1fs old\n", rep.Link, rep.TotalRecords, rep.MaxSeconds)
		t := newTable(w, col("topic"), col("partition"), column{Name: "source end", Drop: 2}, column{Name: "mirrored", Drop: 1},
			col("records"), col("seconds"), col("lost"), column{Name: "error", Fit: fitWrap})
		for _, p := range rep.Partitions {
			mirrored := fmt.Sprint(p.Mirrored)
			if p.Mirrored < 0 {
				mirrored = "never"
			}
			t.Append(p.Topic, fmt.Sprint(p.Partition), fmt.Sprint(p.SourceEnd), mirrored, fmt.Sprint(p.Records), fmt.Sprintf("%.1f", p.Seconds), fmt.Sprint(p.Lost), orDash(p.Error))
		}
		if err := t.Render(); err != nil {
			return err
		}
		for _, tc := range rep.TopicChanges {
			fmt.Fprintf(w, "topic %s %s\n", tc.Topic, tc.Message)
		}
		if rep.Reset != "" {
			fmt.Fprintf(w, "target reset: %s\n", rep.Reset)
		}
		if len(rep.Losses) > 0 {
			fmt.Fprintf(w, "lost to source retention before they were mirrored, not acknowledged: %d record(s) in %d range(s)\n",
				rep.LostUnacknowledged, len(rep.Losses))
			for _, r := range rep.Losses {
				fmt.Fprintf(w, "  %s, found %s\n", r, r.At.Format(time.RFC3339))
			}
			fmt.Fprintln(w, "once dealt with: drctl mirror ack-lost [TOPIC/PARTITION...]")
		}
		if rep.LossesError != "" {
			fmt.Fprintf(w, "recorded losses: unknown (%s)\n", rep.LossesError)
		}
		return nil
	})
}
