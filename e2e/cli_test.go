//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	drctlBin  string
	errBuild  error
)

// drctlBinary builds cmd/drctl once per test run.
func drctlBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "drctl-e2e-bin") //nolint:usetesting // shared by every test of the run, not one test's
		if err != nil {
			errBuild = err
			return
		}
		drctlBin = filepath.Join(dir, "drctl")
		out, err := exec.Command("go", "build", "-o", drctlBin, "../cmd/drctl").CombinedOutput()
		if err != nil {
			errBuild = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if errBuild != nil {
		t.Fatal(errBuild)
	}
	return drctlBin
}

type cliResult struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// runDrctl runs the drctl binary with a bound; extraEnv is KEY=VALUE.
func runDrctl(t testing.TB, extraEnv []string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, drctlBinary(t), args...)
	cmd.Env = append(os.Environ(), extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := cliResult{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("drctl %v: %v", args, err)
	}
	t.Logf("drctl %s -> exit %d in %v\nstderr: %s", strings.Join(args, " "), r.code, r.took.Round(time.Millisecond), r.stderr)
	return r
}

// writeTopology writes a topology for the two real clusters; east speaks
// SCRAM-SHA-512 and west PLAIN, both as drctl, the password from
// $DRCTL_E2E_TEST_PASSWORD.
func writeTopology(t testing.TB, topics string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "drctl.yaml")
	yaml := fmt.Sprintf(`name: e2e
clusters:
  east:
    bootstrap: [%s]
    timeout: 5s
    sasl: {mechanism: SCRAM-SHA-512, username: %s, password: "${DRCTL_E2E_TEST_PASSWORD}"}
  west:
    bootstrap: [%s]
    timeout: 5s
    sasl: {mechanism: PLAIN, username: %s, password: "${DRCTL_E2E_TEST_PASSWORD}"}
active: east
standby: west
mirror:
  topics: {include: [%q]}
`, env.East, env.User, env.West, env.User, topics)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

type statusJSON struct {
	Roles struct {
		Active, Standby string
		Epoch           int64
	}
	Clusters []struct {
		Name         string
		Reachable    bool
		Error        string
		ClusterID    string `json:"cluster_id"`
		KafkaVersion string `json:"kafka_version"`
		Brokers      []struct{ ID int32 }
	}
	Topics []struct {
		Name     string
		InParity bool `json:"in_parity"`
		Active   struct{ Partitions int32 }
		Standby  struct{ Partitions int32 }
	}
}

func TestCLIValidateOnlineRealKafka(t *testing.T) {
	path := writeTopology(t, "cli-.*")
	r := runDrctl(t, []string{"DRCTL_E2E_TEST_PASSWORD=" + env.Password}, "-c", path, "-o", "json", "validate", "--online")
	if r.code != 0 {
		t.Fatalf("validate --online exit %d: %s", r.code, r.stderr)
	}
	var v struct {
		Checks []struct{ Cluster, Check, Result, Detail string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("json: %v\n%s", err, r.stdout)
	}
	ok := map[string]bool{}
	for _, c := range v.Checks {
		if c.Result == "FAIL" {
			t.Errorf("check failed: %+v", c)
		}
		if c.Result == "OK" {
			ok[c.Cluster+"/"+c.Check] = true
		}
		if c.Check == "version" && !strings.Contains(c.Detail, "Apache Kafka "+majorMinor(env.KafkaVersion)) {
			t.Errorf("version check %q does not name Kafka %s", c.Detail, env.KafkaVersion)
		}
	}
	for _, want := range []string{"east/reachable", "west/reachable", "east/version", "west/version", "east/permissions", "west/permissions"} {
		if !ok[want] {
			t.Errorf("no OK for %s: %+v", want, v.Checks)
		}
	}
	if strings.Contains(r.stdout+r.stderr, env.Password) {
		t.Error("the password was printed")
	}
}

func majorMinor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

func TestCLIStatusRealKafka(t *testing.T) {
	prefix := uniqueName(t, "cli")
	createTopic(t, "east", prefix+"-same", 3, nil)
	createTopic(t, "west", prefix+"-same", 3, nil)
	createTopic(t, "east", prefix+"-onlyeast", 2, nil)
	path := writeTopology(t, prefix+"-.*")
	pw := []string{"DRCTL_E2E_TEST_PASSWORD=" + env.Password}

	r := runDrctl(t, pw, "-c", path, "status", "-o", "json")
	if r.code != 0 {
		t.Fatalf("status exit %d: %s", r.code, r.stderr)
	}
	var st statusJSON
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("json: %v\n%s", err, r.stdout)
	}
	if st.Roles.Active != "east" || st.Roles.Standby != "west" {
		t.Errorf("roles = %+v", st.Roles)
	}
	for _, c := range st.Clusters {
		if !c.Reachable || c.ClusterID == "" || len(c.Brokers) != 1 || c.KafkaVersion != majorMinor(env.KafkaVersion) {
			t.Errorf("cluster %+v: want reachable with id, 1 broker, Kafka %s", c, env.KafkaVersion)
		}
	}
	if len(st.Clusters) == 2 && st.Clusters[0].ClusterID == st.Clusters[1].ClusterID {
		t.Error("both clusters report the same id")
	}
	parity := map[string]bool{}
	for _, tp := range st.Topics {
		parity[tp.Name] = tp.InParity
	}
	if len(st.Topics) != 2 || !parity[prefix+"-same"] || parity[prefix+"-onlyeast"] {
		t.Errorf("topics = %+v: want %s-same in parity and %s-onlyeast not", st.Topics, prefix, prefix)
	}
	if table := runDrctl(t, pw, "-c", path, "status"); table.code != 0 || !strings.Contains(table.stdout, prefix+"-same") {
		t.Errorf("table status exit %d:\n%s", table.code, table.stdout)
	}

	// One cluster down: status still answers within 15 s, says which, and
	// exits 3.
	stopCluster(t, "west")
	r = runDrctl(t, pw, "-c", path, "-o", "json", "status")
	if r.code != 3 {
		t.Errorf("status with west down: exit %d, want 3", r.code)
	}
	if r.took > 15*time.Second {
		t.Errorf("status with west down took %v, want < 15s", r.took)
	}
	st = statusJSON{}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("json: %v\n%s", err, r.stdout)
	}
	for _, c := range st.Clusters {
		switch c.Name {
		case "east":
			if !c.Reachable {
				t.Errorf("east should be reachable: %+v", c)
			}
		case "west":
			if c.Reachable || !strings.Contains(c.Error, "cluster west") {
				t.Errorf("west = %+v: want unreachable with an error naming it", c)
			}
		}
	}
	if !strings.Contains(r.stderr, "unreachable: west") {
		t.Errorf("stderr %q does not say which cluster is down", r.stderr)
	}
}

func TestCLIWrongPasswordRealKafka(t *testing.T) {
	path := writeTopology(t, "cli-.*")
	const wrong = "not-the-password-42"
	for _, args := range [][]string{{"validate", "--online"}, {"status"}} {
		r := runDrctl(t, []string{"DRCTL_E2E_TEST_PASSWORD=" + wrong}, append([]string{"-c", path}, args...)...)
		if r.code != 3 {
			t.Errorf("%v: exit %d, want 3", args, r.code)
		}
		if r.took > 15*time.Second {
			t.Errorf("%v took %v", args, r.took)
		}
		all := r.stdout + r.stderr
		if strings.Contains(all, wrong) || strings.Contains(all, env.Password) {
			t.Errorf("%v printed a password", args)
		}
		for _, cluster := range []string{"east", "west"} {
			if !strings.Contains(all, "cluster "+cluster+" (") {
				t.Errorf("%v: output does not name cluster %s", args, cluster)
			}
		}
		if !strings.Contains(all, "authentication failed") && !strings.Contains(all, "Authentication failed") {
			t.Errorf("%v: output does not say authentication failed:\n%s", args, all)
		}
	}
}

func TestCLIUnreachableBootstrap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "drctl.yaml")
	// 127.0.0.1:9 (discard) has no listener: connection refused at once.
	yaml := fmt.Sprintf("name: e2e\nclusters:\n  east:\n    bootstrap: [%s]\n    sasl: {mechanism: PLAIN, username: drctl, password: %s}\n"+
		"  west:\n    bootstrap: [127.0.0.1:9]\nactive: east\nstandby: west\nmirror:\n  topics: {include: [x]}\n", env.East, env.Password)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runDrctl(t, nil, "-c", path, "validate", "--online")
	if r.code != 3 || !strings.Contains(r.stdout, "cluster west (127.0.0.1:9)") || r.took > 15*time.Second {
		t.Errorf("exit %d in %v:\n%s", r.code, r.took, r.stdout)
	}
	if strings.Contains(r.stdout+r.stderr, env.Password) {
		t.Error("the password was printed")
	}
}
