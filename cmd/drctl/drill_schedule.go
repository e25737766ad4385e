package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/urfave/cli/v2"

	"github.com/drctl/drctl/drill"
)

// defaultDrillListen is the scheduler's metrics address (beside the
// mirror's 7483).
const defaultDrillListen = "127.0.0.1:7484"

func drillScheduleCommand() *cli.Command {
	return &cli.Command{
		Name:  "schedule",
		Usage: "run the topology's scheduled drills until stopped (several schedulers run each drill once)",
		Description: "Fires every drill of drills.named that has a schedule, in its time zone. Each slot of each\n" +
			"drill is claimed in the clusters, so any number of schedulers run it once; a drill never runs\n" +
			"beside a failover, failback, reseed or another drill. Serves /metrics and /healthz on --listen.",
		Flags: append(logFlags(),
			&cli.StringFlag{Name: "listen", Value: defaultDrillListen, Usage: "address of /metrics and /healthz (empty: none)"},
		),
		Action: func(c *cli.Context) error {
			log, err := logger(c)
			if err != nil {
				return err
			}
			topo, err := loadTopology(c)
			if err != nil {
				return err
			}
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			s := &drill.Scheduler{Topo: topo, Metrics: drill.NewMetrics(reg), Log: log}
			if addr := c.String("listen"); addr != "" {
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					return withCode(exitBadInput, fmt.Errorf("--listen %s: %w", addr, err))
				}
				mux := http.NewServeMux()
				mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
				mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
				srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
				go func() { _ = srv.Serve(ln) }()
				defer srv.Shutdown(context.Background()) //nolint:errcheck // the scheduler is exiting: a failed shutdown changes nothing
				log.Info("drill scheduler serving /metrics and /healthz", "listen", ln.Addr().String())
			}
			err = s.Run(c.Context)
			if errors.Is(err, drill.ErrBadInput) {
				return withCode(exitBadInput, err)
			}
			return err
		},
	}
}
