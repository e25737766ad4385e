package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// The chart's rendered manifests are validated against the Kubernetes API
// types themselves: each document is decoded strictly (an unknown or
// misspelt field, or a value of the wrong type, is an error) into the Go
// type of its apiVersion/kind, from k8s.io/api and prometheus-operator's
// monitoring/v1. Those types are what the API server's OpenAPI schemas are
// generated from, and they come through the Go module proxy pinned in
// go.sum, so this runs offline; kubeconform would need JSON schemas
// downloaded from GitHub at run time, which CI machines cannot reach.
var kinds = map[string]func() any{
	"v1/ConfigMap":                            func() any { return &corev1.ConfigMap{} },
	"v1/Service":                              func() any { return &corev1.Service{} },
	"v1/ServiceAccount":                       func() any { return &corev1.ServiceAccount{} },
	"apps/v1/Deployment":                      func() any { return &appsv1.Deployment{} },
	"batch/v1/CronJob":                        func() any { return &batchv1.CronJob{} },
	"policy/v1/PodDisruptionBudget":           func() any { return &policyv1.PodDisruptionBudget{} },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return &monitoringv1.ServiceMonitor{} },
	"monitoring.coreos.com/v1/PrometheusRule": func() any { return &monitoringv1.PrometheusRule{} },
}

// rendered returns the documents of every *.yaml file in $DRCTL_RENDERED
// (what `helm template` wrote, one file per values file), by file.
func rendered(t *testing.T) map[string][][]byte {
	t.Helper()
	dir := os.Getenv("DRCTL_RENDERED")
	if dir == "" {
		t.Skip("DRCTL_RENDERED is not set: deploy/ci.sh renders the chart with helm and sets it")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no rendered manifests in %s (%v)", dir, err)
	}
	out := map[string][][]byte{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(raw, []byte("\n---")) {
			if len(bytes.TrimSpace(stripComments(doc))) > 0 {
				out[filepath.Base(f)] = append(out[filepath.Base(f)], doc)
			}
		}
	}
	return out
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			b.Write(l)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

type object struct {
	file, kind string
	obj        any
}

// decodeAll decodes every rendered document strictly into its API type.
func decodeAll(t *testing.T) []object {
	t.Helper()
	var out []object
	for file, docs := range rendered(t) {
		for _, doc := range docs {
			var tm struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				t.Errorf("%s: not YAML: %v", file, err)
				continue
			}
			key := tm.APIVersion + "/" + tm.Kind
			mk, ok := kinds[key]
			if !ok {
				t.Errorf("%s: %s is not a kind this test validates: add it to kinds", file, key)
				continue
			}
			obj := mk()
			if err := yaml.UnmarshalStrict(doc, obj); err != nil {
				t.Errorf("%s: %s does not match the API type: %v", file, key, err)
				continue
			}
			out = append(out, object{file, key, obj})
		}
	}
	return out
}

// TestRenderedManifestsValidate: every manifest decodes strictly into its
// API type, and what the chart promises holds: non-root, read-only root
// filesystem, no privilege escalation, probes on /healthz and /readyz, a
// PodDisruptionBudget selecting the mirror, drill CronJobs that never
// overlap and run in a time zone.
func TestRenderedManifestsValidate(t *testing.T) {
	seen := map[string]map[string]int{}
	for _, o := range decodeAll(t) {
		if seen[o.file] == nil {
			seen[o.file] = map[string]int{}
		}
		seen[o.file][o.kind]++
		switch obj := o.obj.(type) {
		case *appsv1.Deployment:
			checkPod(t, o.file+" Deployment "+obj.Name, obj.Spec.Template.Spec)
			sel := obj.Spec.Selector.MatchLabels
			for k, v := range sel {
				if obj.Spec.Template.Labels[k] != v {
					t.Errorf("%s: Deployment selector %s=%s does not match its pod labels", o.file, k, v)
				}
			}
			c := obj.Spec.Template.Spec.Containers[0]
			if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
				t.Errorf("%s: mirror liveness probe is not GET /healthz", o.file)
			}
			if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
				t.Errorf("%s: mirror readiness probe is not GET /readyz", o.file)
			}
			if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
				t.Errorf("%s: mirror has no memory request or limit", o.file)
			}
		case *batchv1.CronJob:
			if obj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
				t.Errorf("%s: CronJob %s concurrencyPolicy %q, want Forbid", o.file, obj.Name, obj.Spec.ConcurrencyPolicy)
			}
			if obj.Spec.TimeZone == nil || *obj.Spec.TimeZone == "" {
				t.Errorf("%s: CronJob %s has no timeZone", o.file, obj.Name)
			}
			checkPod(t, o.file+" CronJob "+obj.Name, obj.Spec.JobTemplate.Spec.Template.Spec)
		case *policyv1.PodDisruptionBudget:
			if obj.Spec.Selector == nil || obj.Spec.Selector.MatchLabels["app.kubernetes.io/component"] != "mirror" {
				t.Errorf("%s: the PodDisruptionBudget does not select the mirror", o.file)
			}
		case *monitoringv1.PrometheusRule:
			if len(obj.Spec.Groups) == 0 {
				t.Errorf("%s: PrometheusRule without groups", o.file)
			}
		}
	}
	for file, kinds := range seen {
		t.Logf("%s: %v", file, kinds)
		if kinds["apps/v1/Deployment"] != 1 || kinds["v1/ConfigMap"] < 1 {
			t.Errorf("%s: want the mirror Deployment and the topology ConfigMap, got %v", file, kinds)
		}
	}
	if full := seen["full.yaml"]; full != nil {
		for _, k := range []string{"batch/v1/CronJob", "monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule", "policy/v1/PodDisruptionBudget"} {
			if full[k] == 0 {
				t.Errorf("full.yaml: the full values render no %s", k)
			}
		}
	}
}

func checkPod(t *testing.T, what string, spec corev1.PodSpec) {
	t.Helper()
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("%s: pod does not run as non-root", what)
	}
	for _, c := range spec.Containers {
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("%s: container %s has a writable root filesystem", what, c.Name)
		}
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: container %s allows privilege escalation", what, c.Name)
		}
		if c.Image == "" {
			t.Errorf("%s: container %s has no image", what, c.Name)
		}
	}
}

// TestRenderedCommandsParse: every drctl command line in the rendered
// manifests and the systemd units is accepted by the real drctl binary
// ($DRCTL_BIN), so the chart cannot drift from the CLI. Each argv runs with
// its -c replaced by a file that does not exist: drctl parses the command,
// every flag and its value first, and only then reads the topology, so
// "read topology: open <that file>" proves the parse passed, while an
// unknown command, flag or bad value is refused before. (--help cannot be
// used: drctl takes it for a help topic after a positional argument.)
func TestRenderedCommandsParse(t *testing.T) {
	bin := os.Getenv("DRCTL_BIN")
	if bin == "" {
		t.Skip("DRCTL_BIN is not set: deploy/ci.sh sets it to the binary goreleaser built")
	}
	argvs := map[string][]string{}
	for _, o := range decodeAll(t) {
		var cs []corev1.Container
		switch obj := o.obj.(type) {
		case *appsv1.Deployment:
			cs = obj.Spec.Template.Spec.Containers
		case *batchv1.CronJob:
			cs = obj.Spec.JobTemplate.Spec.Template.Spec.Containers
		}
		for _, c := range cs {
			argv := append(append([]string{}, c.Command...), c.Args...)
			argvs[strings.Join(argv, " ")] = argv
		}
	}
	if len(argvs) == 0 {
		t.Fatal("no container command lines in the rendered manifests")
	}
	// The systemd units' command lines too.
	units, _ := filepath.Glob("systemd/*.service")
	for _, u := range units {
		raw, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(raw), "\n") {
			if rest, ok := strings.CutPrefix(l, "ExecStart="); ok {
				argv := strings.Fields(rest)[1:]
				argvs[strings.Join(argv, " ")] = argv
			}
		}
	}
	missing := filepath.Join(t.TempDir(), "parse-check.yaml")
	parses := func(argv []string) (bool, string) {
		var args []string
		for i := 0; i < len(argv); i++ {
			if argv[i] == "-c" || argv[i] == "--config" {
				i++
				continue
			}
			args = append(args, argv[i])
		}
		out, _ := exec.Command(bin, append([]string{"-c", missing}, args...)...).CombinedOutput()
		return strings.Contains(string(out), "read topology: open "+missing), string(out)
	}
	// The check must be able to fail.
	for _, bad := range [][]string{{"mirror", "run", "--no-such-flag"}, {"mirror", "run", "--shards=many"}, {"mirror", "runn"}, {"drill", "run", "x", "--no-such-flag"}} {
		if ok, out := parses(bad); ok {
			t.Fatalf("drctl %s passed the parse check:\n%s", strings.Join(bad, " "), out)
		}
	}
	keys := make([]string, 0, len(argvs))
	for k := range argvs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if ok, out := parses(argvs[k]); !ok {
			t.Errorf("drctl refuses the command line drctl %s:\n%s", k, out)
			continue
		}
		t.Logf("accepted: drctl %s", k)
	}
}
