package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// echoServer accepts connections on loopback and writes back what it reads.
func echoServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return l.Addr().String()
}

func startWAN(t *testing.T, latency time.Duration) string {
	t.Helper()
	w, err := Start([]Route{{Listen: "127.0.0.1:0", Upstream: echoServer(t)}}, Link{Latency: latency})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w.Addrs()[0]
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	return c
}

// roundTrip writes msg and reads its echo, returning how long that took.
func roundTrip(t *testing.T, c net.Conn, msg []byte) time.Duration {
	t.Helper()
	t0 := time.Now()
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("the echo through the proxy differs from what was sent")
	}
	return time.Since(t0)
}

// Each direction is delayed: a round trip takes at least twice the one-way latency.
func TestRoundTripTakesTwiceTheLatency(t *testing.T) {
	const latency = 40 * time.Millisecond
	c := dial(t, startWAN(t, latency))
	for i := range 3 {
		if rtt := roundTrip(t, c, []byte("ping")); rtt < 2*latency {
			t.Fatalf("round trip %d took %v through a %v-each-way proxy, want >= %v", i, rtt, latency, 2*latency)
		}
	}
}

// The delay is a delay line, not stop-and-wait: many requests sent back to
// back all come back after about one round trip, and a large transfer arrives
// intact and in order.
func TestDelayDoesNotSerialiseRequests(t *testing.T) {
	const latency = 50 * time.Millisecond
	c := dial(t, startWAN(t, latency))
	msg := make([]byte, 4<<20)
	if _, err := rand.Read(msg); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		// 64 writes of 64 KiB, without waiting for their echoes.
		for off := 0; off < len(msg); off += 64 << 10 {
			if _, err := c.Write(msg[off : off+64<<10]); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	t0 := time.Now()
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(t0)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("4 MiB echoed through the proxy arrived changed or out of order")
	}
	// Stop-and-wait would take 64 round trips (6.4 s); a delay line about one.
	if elapsed < 2*latency || elapsed > 30*2*latency {
		t.Fatalf("64 pipelined writes took %v through a %v-each-way proxy, want between %v and %v", elapsed, latency, 2*latency, 30*2*latency)
	}
}

func TestZeroLatencyIsAPlainProxy(t *testing.T) {
	c := dial(t, startWAN(t, 0))
	if rtt := roundTrip(t, c, []byte("ping")); rtt > 2*time.Second {
		t.Fatalf("round trip without latency took %v", rtt)
	}
}

func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-latency", "25ms"}, "no route given"},
		{[]string{"-route", "127.0.0.1:1"}, "want LISTEN=UPSTREAM"},
		{[]string{"-route", "10.1.2.3:9092=127.0.0.1:1"}, "not a loopback address"},
		{[]string{"-route", "127.0.0.1:0=example.com:9092"}, "not a loopback address"},
		{[]string{"-route", "127.0.0.1:0=127.0.0.1:1", "-latency", "1500us"}, "whole milliseconds"},
		{[]string{"-route", "127.0.0.1:0=127.0.0.1:1", "-latency", "10ms", "-jitter", "20ms"}, "larger than the latency"},
		{[]string{"-route", "127.0.0.1:0=127.0.0.1:1", "-latency", "-5ms"}, "must not be negative"},
		{[]string{"-route", "127.0.0.1:0=127.0.0.1:1", "extra"}, "unexpected argument"},
	} {
		var stdout, stderr strings.Builder
		if code := run(context.Background(), tc.args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: stderr %q, want it to say %q", tc.args, stderr.String(), tc.want)
		}
		if stdout.Len() != 0 {
			t.Errorf("%v: printed %q on stdout, want nothing (no READY)", tc.args, stdout.String())
		}
	}
}

// run prints READY once the routes listen and returns 0 when told to stop.
func TestRunReadyAndStop(t *testing.T) {
	up := echoServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		var stderr strings.Builder
		done <- run(ctx, []string{"-route", "127.0.0.1:0=" + up, "-latency", "5ms"}, pw, &stderr)
		pw.Close()
	}()
	buf := make([]byte, 512)
	n, err := pr.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	line := string(buf[:n])
	if !strings.HasPrefix(line, "READY latency=5ms jitter=0s routes=127.0.0.1:") || !strings.Contains(line, "="+up) {
		t.Fatalf("first line %q, want READY with the route's actual port", line)
	}
	addr := strings.TrimPrefix(strings.Fields(line)[3], "routes=")
	addr, _, _ = strings.Cut(addr, "=")
	c := dial(t, addr)
	if rtt := roundTrip(t, c, []byte("ping")); rtt < 10*time.Millisecond {
		t.Fatalf("round trip through the printed route took %v, want >= 10ms", rtt)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d after the signal, want 0", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return within 30 s of cancel")
	}
}
