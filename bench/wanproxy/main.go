package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type routeFlags []Route

func (r *routeFlags) String() string { return fmt.Sprint(*r) }
func (r *routeFlags) Set(s string) error {
	route, err := ParseRoute(s)
	if err != nil {
		return err
	}
	*r = append(*r, route)
	return nil
}

// run starts the routes, prints READY and waits for ctx; exit 2 on bad flags,
// 1 when a route cannot listen.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wanproxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var routes routeFlags
	var link Link
	fs.Var(&routes, "route", "LISTEN=UPSTREAM (loopback host:port each); repeat for more routes")
	fs.DurationVar(&link.Latency, "latency", 0, "one-way delay added in each direction (whole ms; 0: a plain proxy)")
	fs.DurationVar(&link.Jitter, "jitter", 0, "+/- random variation of the delay (whole ms, at most -latency)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "wanproxy: unexpected argument %q (routes are given with -route)\n", fs.Arg(0))
		return 2
	}
	if len(routes) == 0 {
		fmt.Fprintln(stderr, "wanproxy: no route given: add -route LISTEN=UPSTREAM")
		return 2
	}
	if err := link.validate(); err != nil {
		fmt.Fprintf(stderr, "wanproxy: %v\n", err)
		return 2
	}
	w, err := Start(routes, link)
	if err != nil {
		fmt.Fprintf(stderr, "wanproxy: %v\n", err)
		return 1
	}
	defer w.Close()
	fmt.Fprintf(stdout, "READY latency=%v jitter=%v routes=%s\n", link.Latency, link.Jitter, strings.Join(w.routeList(routes), ","))
	<-ctx.Done()
	return 0
}

func (w *WAN) routeList(routes []Route) []string {
	out := make([]string, len(routes))
	for i, a := range w.Addrs() {
		out[i] = a + "=" + routes[i].Upstream
	}
	return out
}
