package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestMirrorAddressIsPrinted: with the mirror on, the instructions carry
// the address the mirror really bound, and it serves /metrics there.
func TestMirrorAddressIsPrinted(t *testing.T) {
	s := start(t, Options{Mirror: true, MirrorListen: "127.0.0.1:0"})
	m := regexp.MustCompile(`mirror +http://(127\.0\.0\.1:\d+)/metrics`).FindStringSubmatch(s.Instructions())
	if m == nil || strings.HasSuffix(m[1], ":0") {
		t.Fatalf("no bound mirror address in the instructions:\n%s", s.Instructions())
	}
	resp, err := http.Get("http://" + m[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /metrics: %s", resp.Status)
	}
}

// TestMirrorListenInUse: a taken metrics address is an error naming the
// flag, and nothing stays running (the clusters' ports are free again).
func TestMirrorListenInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	eastLn, _ := net.Listen("tcp", "127.0.0.1:0")
	eastPort := eastLn.Addr().(*net.TCPAddr).Port
	eastLn.Close()
	_, err = Start(t.Context(), Options{Dir: t.TempDir(), EastPort: eastPort, WestPort: AnyPort, Mirror: true, MirrorListen: ln.Addr().String()})
	if err == nil || !strings.Contains(err.Error(), "--mirror-listen") {
		t.Fatalf("Start: %v, want an error naming --mirror-listen", err)
	}
	again, err := net.Listen("tcp", eastLn.Addr().String())
	if err != nil {
		t.Errorf("east's port is still taken after the failed start: %v", err)
	} else {
		again.Close()
	}
}

// TestSecondSandboxKeepsFirstTopology: a second sandbox in the same
// directory writes its own file, says so, and leaves the first one's alone.
func TestSecondSandboxKeepsFirstTopology(t *testing.T) {
	dir := t.TempDir()
	first := start(t, Options{Dir: dir})
	before, err := os.ReadFile(first.TopologyPath)
	if err != nil {
		t.Fatal(err)
	}
	second := start(t, Options{Dir: dir})
	if second.TopologyPath == first.TopologyPath {
		t.Fatalf("both sandboxes use %s", first.TopologyPath)
	}
	after, err := os.ReadFile(first.TopologyPath)
	if err != nil || !bytes.Equal(before, after) {
		t.Errorf("the first sandbox's %s changed (%v)", first.TopologyPath, err)
	}
	ins := second.Instructions()
	base := filepath.Base(second.TopologyPath)
	if !strings.Contains(ins, "drctl.yaml belongs to the sandbox already running") || !strings.Contains(ins, "-c "+second.TopologyPath) {
		t.Errorf("the second sandbox does not say where its topology is (%s):\n%s", base, ins)
	}
	// Once the first stops, the directory's drctl.yaml is free again.
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	third := start(t, Options{Dir: dir})
	if third.TopologyPath != first.TopologyPath {
		t.Errorf("after the first stopped, a new sandbox wrote %s, want %s", third.TopologyPath, first.TopologyPath)
	}
}

// TestHintsWorkAsShown: run by go run in the directory of drctl.yaml, the
// hints are `go run ./cmd/drctl CMD` without -c, and include the tour.
func TestHintsWorkAsShown(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	s := start(t, Options{Dir: ".", Mirror: true, MirrorListen: "127.0.0.1:0", Command: "go run ./cmd/drctl"})
	ins := s.Instructions()
	for _, want := range []string{
		"go run ./cmd/drctl validate --online", "go run ./cmd/drctl status", "go run ./cmd/drctl mirror lag",
		"go run ./cmd/drctl failover --to west --yes", "go run ./cmd/drctl failback --yes", "in this directory",
	} {
		if !strings.Contains(ins, want) {
			t.Errorf("hints lack %q:\n%s", want, ins)
		}
	}
	if strings.Contains(ins, " -c ") {
		t.Errorf("hints name -c for ./drctl.yaml, which drctl reads by default:\n%s", ins)
	}
}

// TestLogFormats: one format per process. Text lines are
// "HH:MM:SS component: message"; JSON lines are objects; the mirror's
// warnings are held while the roles move and counted afterwards.
func TestLogFormats(t *testing.T) {
	var text bytes.Buffer
	l := newLogger(&text, LogText, slog.LevelInfo)
	l.printf("traffic runs on %s", "east")
	l.mirrorLogger().Warn("cannot read source end offsets", "link", "east->west", "shard", 3)
	l.mirrorLogger().Info("shard claimed", "shard", 1) // detail: only at debug
	l.component("drill").Info("drill passed", "drill", "canary-every-minute")
	line := regexp.MustCompile(`^\d\d:\d\d:\d\d (sandbox|mirror|drill): `)
	lines := strings.Split(strings.TrimSpace(text.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), text.String())
	}
	for _, ln := range lines {
		if !line.MatchString(ln) {
			t.Errorf("line %q is not in the sandbox's format", ln)
		}
	}
	if !strings.HasSuffix(lines[2], " drill: drill passed (drill=canary-every-minute)") {
		t.Errorf("drill line: %q", lines[2])
	}
	if !strings.Contains(lines[1], "mirror: warning: cannot read source end offsets (link=east->west shard=3)") {
		t.Errorf("mirror line: %q", lines[1])
	}

	var js bytes.Buffer
	l = newLogger(&js, LogJSON, slog.LevelInfo)
	l.printf("traffic runs on east")
	l.mirrorLogger().Warn("topic sync failed", "link", "east->west")
	dec := json.NewDecoder(&js)
	for {
		var rec map[string]any
		if err := dec.Decode(&rec); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("not JSON lines: %v\n%s", err, js.String())
		}
		if rec["component"] == nil || rec["msg"] == nil {
			t.Errorf("record without component or msg: %v", rec)
		}
	}

	var held bytes.Buffer
	l = newLogger(&held, LogText, slog.LevelInfo)
	l.hold()
	for range 5 {
		l.mirrorLogger().Warn("cannot read source end offsets")
	}
	if strings.Contains(held.String(), "cannot read") {
		t.Errorf("a warning was printed while the roles moved:\n%s", held.String())
	}
	l.release()
	deadline := time.Now().Add(holdGrace + 5*time.Second)
	for !strings.Contains(syncString(l, &held), "the mirror logged 5 warning(s) while the roles moved") {
		if time.Now().After(deadline) {
			t.Fatalf("no summary of the held warnings:\n%s", syncString(l, &held))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func syncString(l *logger, b *bytes.Buffer) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return b.String()
}
