//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/drill"
)

// TestDrills runs, as child processes against the two real clusters with
// the ACL fence, a canary drill (its JUnit report must parse and pass) and
// a failover drill (both directions: no canary record lost, duplicated or
// re-read, and the fence verified by the app principal's refused write),
// then opens the failover drill's HTML report in headless Chromium and
// checks the screenshot.
func TestDrills(t *testing.T) {
	ft := newFoTopo(t, "drill", "1s", "{fence: acl, drain_timeout: 2m, quiet_period: 2s}")
	drills := fmt.Sprintf(`drills:
  allow_disruptive: true
  canary_user: {username: %s, password: %s}
  named:
    canary:
      kind: canary
      params: {records: 50, rate: 50}
      objectives: {max_canary_latency: 10s}
    failover:
      kind: failover
      params: {rate: 20, hold: 3s}
      objectives: {rto_seconds: 120}
`, env.AppUser, env.AppPass)
	raw, err := os.ReadFile(ft.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ft.Path, append(raw, drills...), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sweepCanary(t, ft.Name) })
	m := startMirror(t, ft.mirrorTopo(), "mirror")
	defer m.kill()
	dir := t.TempDir()

	junit := filepath.Join(dir, "canary.xml")
	out, code := drillCmd(t, ft, 3*time.Minute, "drill", "run", "canary", "--report", junit, "--format", "junit")
	if code != 0 {
		t.Fatalf("canary drill: exit %d\n%s", code, out)
	}
	var suites struct {
		Tests int `xml:"tests,attr"`
		Fails int `xml:"failures,attr"`
		Suite []struct {
			Cases []struct {
				Name string `xml:"name,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	b, err := os.ReadFile(junit)
	if err != nil || xml.Unmarshal(b, &suites) != nil || suites.Tests == 0 || suites.Fails != 0 || len(suites.Suite) != 1 {
		t.Fatalf("JUnit report does not parse or fails: %v\n%s", err, b)
	}
	t.Logf("canary drill: %d JUnit test cases, 0 failures", suites.Tests)

	start := time.Now()
	out, code = drillCmd(t, ft, 8*time.Minute, "drill", "run", "failover", "--yes")
	if code != 0 {
		t.Fatalf("failover drill: exit %d\n%s", code, out)
	}
	id := regexp.MustCompile(`drill (drill-failover-\S+)`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("no drill id in:\n%s", out)
	}
	t.Logf("failover drill %s passed in %v", id[1], time.Since(start).Round(time.Second))
	js, code := drillCmd(t, ft, time.Minute, "drill", "report", id[1], "--format", "json")
	var rec drill.Record
	if code != 0 || json.Unmarshal([]byte(js), &rec) != nil {
		t.Fatalf("report json: exit %d\n%s", code, js)
	}
	if len(rec.Directions) != 2 {
		t.Fatalf("directions: %+v", rec.Directions)
	}
	for _, d := range rec.Directions {
		t.Logf("%s -> %s: RTO writes %.1fs, consuming %.1fs; lost %d, duplicated %d, re-read %d, fence verified %v %s",
			d.From, d.To, d.RTOWriteSeconds, d.RTOConsumeSeconds, d.Lost, d.Duplicated, d.ReRead, d.FenceVerified, d.FenceNote)
		if !d.FenceVerified || d.Lost != 0 || d.Duplicated != 0 || d.ReRead != 0 || d.RTOWriteSeconds <= 0 {
			t.Errorf("direction %s -> %s: %+v", d.From, d.To, d)
		}
	}

	html := filepath.Join(dir, "report.html")
	if _, code := drillCmd(t, ft, time.Minute, "drill", "report", id[1], "--format", "html", "--out", html); code != 0 {
		t.Fatalf("html report: exit %d", code)
	}
	shot := screenshot(t, html, filepath.Join(dir, "report.png"))
	if keep := os.Getenv("DRCTL_E2E_KEEP_SCREENSHOT"); keep != "" {
		data, _ := os.ReadFile(shot)
		_ = os.WriteFile(keep, data, 0o644)
	}
}

// drillCmd runs drctl with the test topology and returns its combined
// output and exit code.
func drillCmd(t *testing.T, ft *foTopo, timeout time.Duration, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, drctlBinary(t), append([]string{"-c", ft.Path}, args...)...)
	cmd.Env = append(os.Environ(), ft.env()...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("drctl %v did not finish within %v:\n%s", args, timeout, out.String())
	}
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}

// screenshot opens html in headless Chromium and checks that the picture
// is not blank: a PNG with a real size and many colours.
func screenshot(t *testing.T, html, png string) string {
	t.Helper()
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Fatal("no chromium on PATH: apt-get install chromium (.ci/run installs it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir="+t.TempDir(), "--window-size=1100,1400", "--screenshot="+png, "file://"+html)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(png)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := decodePNG(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", png, err)
	}
	colors := map[[3]uint32]bool{}
	bnd := img.Bounds()
	for y := bnd.Min.Y; y < bnd.Max.Y; y += 3 {
		for x := bnd.Min.X; x < bnd.Max.X; x += 3 {
			r, g, b, _ := img.At(x, y).RGBA()
			colors[[3]uint32{r >> 8, g >> 8, b >> 8}] = true
		}
	}
	t.Logf("screenshot %s: %dx%d, %d colours", png, bnd.Dx(), bnd.Dy(), len(colors))
	if bnd.Dx() < 800 || bnd.Dy() < 800 || len(colors) < 20 {
		t.Errorf("the screenshot looks blank: %dx%d, %d colours", bnd.Dx(), bnd.Dy(), len(colors))
	}
	return png
}

func decodePNG(f *os.File) (image.Image, error) { return png.Decode(f) }

// sweepCanary deletes the canary topic and group of topology name on both
// clusters (they are named after the topology, but not with its prefix).
func sweepCanary(t *testing.T, name string) {
	for _, cluster := range env.clusterNames {
		admin, err := sarama.NewClusterAdmin([]string{bootstrap(t, cluster)}, adminConfig(t))
		if err != nil {
			continue
		}
		_ = admin.DeleteTopic("drctl-canary." + name)
		_ = admin.DeleteTopic("drctl-canary." + name + ".drctl-salvage") // an unplanned drill's quarantine
		_ = admin.DeleteConsumerGroup("drctl-canary." + name)
		_ = admin.Close()
	}
}

// TestUnplannedDrill runs, as a child process against the two real
// clusters with the ACL fence, an unplanned drill: the mirror's copying is
// paused while the canary writes, the unplanned failover is forced past
// the answering east (fenced first: the app principal's write is refused),
// its RPO must equal the canary records that never reached west and its
// salvage must hold exactly those, record by record; then the failback.
func TestUnplannedDrill(t *testing.T) {
	ft := newFoTopo(t, "drillu", "1s", "{fence: acl, drain_timeout: 2m, quiet_period: 2s}")
	drills := fmt.Sprintf(`drills:
  allow_disruptive: true
  canary_user: {username: %s, password: %s}
  named:
    unplanned:
      kind: unplanned
      params: {records: 40, rate: 20, hold: 3s}
      objectives: {rto_seconds: 120}
`, env.AppUser, env.AppPass)
	raw, err := os.ReadFile(ft.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ft.Path, append(raw, drills...), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sweepCanary(t, ft.Name) })
	m := startMirror(t, ft.mirrorTopo(), "mirror")
	defer m.kill()

	start := time.Now()
	out, code := drillCmd(t, ft, 10*time.Minute, "drill", "run", "unplanned", "--yes")
	if code != 0 {
		t.Fatalf("unplanned drill: exit %d\n%s", code, out)
	}
	id := regexp.MustCompile(`drill (drill-unplanned-\S+)`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("no drill id in:\n%s", out)
	}
	t.Logf("unplanned drill %s passed in %v", id[1], time.Since(start).Round(time.Second))
	js, code := drillCmd(t, ft, time.Minute, "drill", "report", id[1], "--format", "json")
	var rec drill.Record
	if code != 0 || json.Unmarshal([]byte(js), &rec) != nil {
		t.Fatalf("report json: exit %d\n%s", code, js)
	}
	if len(rec.Directions) != 2 {
		t.Fatalf("directions: %+v", rec.Directions)
	}
	u, back := rec.Directions[0], rec.Directions[1]
	t.Logf("%s -> %s (unplanned, run %s): RPO reported %d canary records (%d over all topics, %.1fs), %d never reached %s (%d of this drill), %d salvaged; RTO writes %.3fs, consuming %.3fs; fence verified %v %s",
		u.From, u.To, u.RunID, u.RPORecords, u.RPOAllRecords, u.RPOSeconds, u.UnmirroredAll, u.To, u.Unmirrored, u.Salvaged, u.RTOWriteSeconds, u.RTOConsumeSeconds, u.FenceVerified, u.FenceNote)
	t.Logf("%s -> %s (failback, run %s): RTO writes %.3fs, consuming %.3fs; lost %d, duplicated %d, re-read %d, fence verified %v",
		back.From, back.To, back.RunID, back.RTOWriteSeconds, back.RTOConsumeSeconds, back.Lost, back.Duplicated, back.ReRead, back.FenceVerified)
	if !u.Unplanned || u.Unmirrored < 40 || u.RPORecords != int64(u.UnmirroredAll) || u.Salvaged != u.UnmirroredAll || u.SalvageMismatch != "" ||
		!u.FenceVerified || u.Lost != 0 || u.Duplicated != 0 || u.ReRead != 0 || u.RTOWriteSeconds <= 0 {
		t.Errorf("unplanned direction: %+v", u)
	}
	if back.Unplanned || !back.FenceVerified || back.Lost != 0 || back.Duplicated != 0 || back.ReRead != 0 || back.RPORecords != 0 || back.RTOWriteSeconds <= 0 {
		t.Errorf("failback direction: %+v", back)
	}
	if rec.Active != "east" {
		t.Errorf("the drill found %s active", rec.Active)
	}
}
