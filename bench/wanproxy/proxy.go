package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Route is one proxied path: connections to Listen are forwarded to Upstream.
type Route struct {
	Listen   string
	Upstream string
}

// ParseRoute reads "LISTEN=UPSTREAM" (host:port each, loopback only).
func ParseRoute(s string) (Route, error) {
	listen, upstream, ok := strings.Cut(s, "=")
	if !ok || listen == "" || upstream == "" {
		return Route{}, fmt.Errorf("route %q: want LISTEN=UPSTREAM, e.g. 127.0.0.1:43103=127.0.0.1:43101", s)
	}
	for _, a := range []string{listen, upstream} {
		if err := loopback(a); err != nil {
			return Route{}, fmt.Errorf("route %q: %w", s, err)
		}
	}
	return Route{Listen: listen, Upstream: upstream}, nil
}

func loopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s: want host:port: %w", addr, err)
	}
	ip := net.ParseIP(host)
	if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%s: not a loopback address (use 127.0.0.1)", addr)
	}
	return nil
}

// Link is the delay both directions of every route get.
type Link struct {
	Latency time.Duration // one way
	Jitter  time.Duration // +/- around Latency, uniformly; 0 for a steady delay
}

// validate: toxiproxy counts whole milliseconds, and a jitter larger than the
// latency would ask for negative delays.
func (l Link) validate() error {
	switch {
	case l.Latency < 0 || l.Jitter < 0:
		return fmt.Errorf("latency %v, jitter %v: must not be negative", l.Latency, l.Jitter)
	case l.Latency%time.Millisecond != 0 || l.Jitter%time.Millisecond != 0:
		return fmt.Errorf("latency %v, jitter %v: give whole milliseconds (toxiproxy's unit)", l.Latency, l.Jitter)
	case l.Jitter > l.Latency:
		return fmt.Errorf("jitter %v is larger than the latency %v: use at most the latency", l.Jitter, l.Latency)
	}
	return nil
}

// WAN is a set of running routes.
type WAN struct {
	proxies []*toxiproxy.Proxy
}

// Start listens on every route and delays both directions by link. On error
// nothing is left listening.
func Start(routes []Route, link Link) (*WAN, error) {
	if len(routes) == 0 {
		return nil, errors.New("no route given: add -route LISTEN=UPSTREAM")
	}
	if err := link.validate(); err != nil {
		return nil, err
	}
	// Silent: toxiproxy logs a warning for every connection that closes.
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()),
		zerolog.Nop().Level(zerolog.Disabled))
	w := &WAN{}
	for i, r := range routes {
		p := toxiproxy.NewProxy(server, fmt.Sprintf("route%d", i), r.Listen, r.Upstream)
		if err := p.Start(); err != nil {
			w.Close()
			return nil, fmt.Errorf("listen on %s: %w", r.Listen, err)
		}
		w.proxies = append(w.proxies, p)
		if link.Latency == 0 {
			continue // a plain proxy: the LAN baseline through the same hops
		}
		for _, stream := range []string{"upstream", "downstream"} {
			if err := addLatency(p, stream, link); err != nil {
				w.Close()
				return nil, fmt.Errorf("route %s=%s: %s latency: %w", r.Listen, r.Upstream, stream, err)
			}
		}
	}
	return w, nil
}

func addLatency(p *toxiproxy.Proxy, stream string, link Link) error {
	body, err := json.Marshal(map[string]any{
		"name":     "latency_" + stream,
		"type":     "latency",
		"stream":   stream,
		"toxicity": 1.0,
		"attributes": map[string]int64{
			"latency": link.Latency.Milliseconds(),
			"jitter":  link.Jitter.Milliseconds(),
		},
	})
	if err != nil {
		return err
	}
	_, err = p.Toxics.AddToxicJson(bytes.NewReader(body))
	return err
}

// Addrs are the addresses the routes listen on, in order (the actual port
// when a route asked for port 0).
func (w *WAN) Addrs() []string {
	out := make([]string, len(w.proxies))
	for i, p := range w.proxies {
		out[i] = p.Listen
	}
	return out
}

// Close stops listening and closes every proxied connection.
func (w *WAN) Close() {
	for _, p := range w.proxies {
		p.Stop()
	}
	w.proxies = nil
}
