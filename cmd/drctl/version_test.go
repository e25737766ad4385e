package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, stderr, code := drctl(t, args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		for _, want := range []string{"drctl ", "commit: ", "date: ", "go: " + runtime.Version()} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: output %q lacks %q", args, out, want)
			}
		}
	}
	for _, args := range [][]string{{"version", "-o", "json"}, {"-o", "json", "--version"}} {
		out, _, code := drctl(t, args...)
		var b map[string]string
		if err := json.Unmarshal([]byte(out), &b); err != nil || code != exitOK {
			t.Fatalf("%v: exit %d, %v: %s", args, code, err, out)
		}
		for _, k := range []string{"version", "commit", "date", "go_version"} {
			if _, ok := b[k]; !ok {
				t.Errorf("%v: no %q in %s", args, k, out)
			}
		}
		if b["go_version"] != runtime.Version() {
			t.Errorf("go_version %q", b["go_version"])
		}
	}
	out, _, _ := drctl(t, "version", "-o", "yaml")
	var y map[string]string
	if err := yaml.Unmarshal([]byte(out), &y); err != nil || y["go_version"] != runtime.Version() {
		t.Errorf("yaml: %v: %s", err, out)
	}
}

// TestVersionLdflags builds drctl with -X main.version/commit/date and
// checks that the binary reports exactly those.
func TestVersionLdflags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "drctl")
	ld := "-X main.version=v9.8.7 -X main.commit=abc1234 -X main.date=2026-01-02T03:04:05Z"
	build := exec.Command("go", "build", "-ldflags", ld, "-o", bin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var b BuildInfo
	if err := json.Unmarshal(out, &b); err != nil {
		t.Fatal(err)
	}
	want := BuildInfo{Version: "v9.8.7", Commit: "abc1234", Date: "2026-01-02T03:04:05Z", GoVersion: runtime.Version()}
	if b != want {
		t.Errorf("got %+v, want %+v", b, want)
	}
}

// TestVersionFromPseudoVersion: a binary built by go install ...@version
// has no VCS stamps; its pseudo-version still gives the commit and time.
func TestVersionFromPseudoVersion(t *testing.T) {
	cases := []struct{ version, commit, date string }{
		{"v0.0.0-20261201112703-50d970bbae2b", "50d970bbae2b", "2026-12-01T11:27:03Z"},
		{"v1.2.4-0.20261201112703-50d970bbae2b", "50d970bbae2b", "2026-12-01T11:27:03Z"},
		{"v1.3.0-rc.1.0.20261201112703-50d970bbae2b", "50d970bbae2b", "2026-12-01T11:27:03Z"},
		{"v1.2.3", "", ""},
		{"dev", "", ""},
	}
	for _, c := range cases {
		b := BuildInfo{Version: c.version}
		b.fromPseudoVersion()
		if b.Commit != c.commit || b.Date != c.date {
			t.Errorf("%s: commit %q date %q, want %q %q", c.version, b.Commit, b.Date, c.commit, c.date)
		}
	}
	b := BuildInfo{Version: "v0.0.0-20261201112703-50d970bbae2b", Commit: "50d970bbae2b1234", Date: "stamped"}
	b.fromPseudoVersion()
	if b.Commit != "50d970bbae2b1234" || b.Date != "stamped" {
		t.Errorf("stamped values were replaced: %+v", b)
	}
}
