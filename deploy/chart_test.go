package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// modes are the value sets the chart must render; extra values exercise
// the optional objects (tenants Secret, TLS and model volumes).
var modes = map[string]map[string]any{
	"aggregated": {"mode": "aggregated"},
	"disaggregated": {"mode": "disaggregated",
		"tenants": map[string]any{"toml": "[[tenant]]\nid = \"acme\"\napi_key_sha256 = [\"00\"]\n"},
		"tls":     map[string]any{"existingSecret": "bulkhead-tls"},
		"model": map[string]any{"path": "/models/m.gguf", "weightsBytes": 1 << 30,
			"volume": map[string]any{"persistentVolumeClaim": map[string]any{"claimName": "models"}}}},
	"llmd": llmdValues,
}

// llmdValues: llm-d's EPP in front of prefill and decode pods, bulkhead's
// sidecar on each decode pod.
var llmdValues = map[string]any{"mode": "disaggregated",
	"tenants": map[string]any{"toml": "[[tenant]]\nid = \"acme\"\napi_key_sha256 = [\"00\"]\n"},
	"llmd": map[string]any{"sidecar": true, "certs": map[string]any{
		"prefillSecret": "bh-prefill-certs", "decodeSecret": "bh-decode-certs", "routerSecret": "bh-router-certs"}}}

// render runs the chart through Helm's engine as `helm template` does.
func render(t *testing.T, vals map[string]any) map[string]string {
	t.Helper()
	ch, err := loader.Load("helm/bulkhead")
	if err != nil {
		t.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: "rel", Namespace: "inference", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type object struct {
	file string
	raw  []byte // JSON
	kind string
	name string
}

func objects(t *testing.T, files map[string]string) []object {
	t.Helper()
	var objs []object
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		for _, doc := range strings.Split(files[n], "\n---") {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			js, err := yaml.YAMLToJSONStrict([]byte(doc))
			if err != nil {
				t.Fatalf("%s: not YAML: %v\n%s", n, err, doc)
			}
			var meta struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(js, &meta); err != nil {
				t.Fatal(err)
			}
			objs = append(objs, object{file: n, raw: js, kind: meta.Kind, name: meta.Metadata.Name})
		}
	}
	return objs
}

func stripComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// decodeStrict decodes into the real Kubernetes type, refusing any field
// the type does not have.
func decodeStrict(raw []byte, into any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	return d.Decode(into)
}

func TestChartRendersValidObjects(t *testing.T) {
	for mode, vals := range modes {
		t.Run(mode, func(t *testing.T) {
			objs := objects(t, render(t, vals))
			counts := map[string]int{}
			var deployments []*appsv1.Deployment
			var sets []*appsv1.StatefulSet
			var pods []corev1.PodTemplateSpec
			for _, o := range objs {
				counts[o.kind]++
				var err error
				switch o.kind {
				case "Deployment":
					d := new(appsv1.Deployment)
					err = decodeStrict(o.raw, d)
					deployments = append(deployments, d)
					pods = append(pods, d.Spec.Template)
				case "StatefulSet":
					s := new(appsv1.StatefulSet)
					err = decodeStrict(o.raw, s)
					sets = append(sets, s)
					pods = append(pods, s.Spec.Template)
				case "Service":
					err = decodeStrict(o.raw, new(corev1.Service))
				case "Secret":
					err = decodeStrict(o.raw, new(corev1.Secret))
				case "ConfigMap":
					var cm corev1.ConfigMap
					if err = decodeStrict(o.raw, &cm); err == nil {
						err = checkEPPConfig(cm.Data["config.yaml"])
					}
				case "PodDisruptionBudget":
					err = decodeStrict(o.raw, new(policyv1.PodDisruptionBudget))
				case "NetworkPolicy":
					err = decodeStrict(o.raw, new(networkingv1.NetworkPolicy))
				case "InferencePool", "InferenceObjective":
					err = validateCRD(t, o.raw)
				default:
					err = fmt.Errorf("no check for kind %q", o.kind)
				}
				if err != nil {
					t.Errorf("%s %s (%s): %v", o.kind, o.name, o.file, err)
				}
			}
			t.Logf("helm template (%s): %v", mode, counts)
			for _, p := range pods {
				checkPod(t, mode, p)
			}
			want := map[string]map[string]int{
				"aggregated": {"Deployment": 1, "Service": 1, "PodDisruptionBudget": 1, "NetworkPolicy": 1,
					"InferencePool": 1, "InferenceObjective": 1, "ConfigMap": 1},
				"disaggregated": {"Deployment": 1, "StatefulSet": 2, "Service": 3, "PodDisruptionBudget": 3,
					"NetworkPolicy": 3, "InferencePool": 1, "InferenceObjective": 1, "ConfigMap": 1, "Secret": 1},
				"llmd": {"Deployment": 0, "StatefulSet": 2, "Service": 3, "PodDisruptionBudget": 2,
					"NetworkPolicy": 2, "InferencePool": 1, "InferenceObjective": 1, "ConfigMap": 1, "Secret": 1},
			}[mode]
			for k, n := range want {
				if counts[k] != n {
					t.Errorf("%d %s objects, want %d", counts[k], k, n)
				}
			}
			if mode != "aggregated" {
				roles := map[string]string{}
				for _, s := range sets {
					roles[s.Name] = s.Spec.Template.Labels["llm-d.ai/role"]
				}
				if roles["rel-bulkhead-prefill"] != "prefill" || roles["rel-bulkhead-decode"] != "decode" {
					t.Errorf("llm-d roles %v", roles)
				}
			}
		})
	}
}

// checkPod: probes on the right paths, requests following from the sizes,
// and every flag known to the binary.
func checkPod(t *testing.T, mode string, p corev1.PodTemplateSpec) {
	t.Helper()
	for _, c := range p.Spec.Containers {
		if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/ready" {
			t.Errorf("%s: readiness probe %+v, want GET /ready", c.Name, c.ReadinessProbe)
		}
		if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/health" {
			t.Errorf("%s: liveness probe %+v, want GET /health", c.Name, c.LivenessProbe)
		}
		if c.StartupProbe == nil {
			t.Errorf("%s: no startup probe", c.Name)
		}
		sub := c.Args[0]
		if sub != "gateway" && sub != "llmd-sidecar" {
			// 300 s of model load at 5 s a probe, and memory = weights + KV + overhead.
			if c.StartupProbe.PeriodSeconds*c.StartupProbe.FailureThreshold < 300 {
				t.Errorf("%s: startup probe allows %d s, want >= 300 for model load", c.Name, c.StartupProbe.PeriodSeconds*c.StartupProbe.FailureThreshold)
			}
			weights := int64(134217728)
			if mode == "disaggregated" {
				weights = 1 << 30
			}
			want := weights + 8192*4096 + 268435456
			if got := c.Resources.Requests.Memory().Value(); got != want {
				t.Errorf("%s: memory request %d, want weights+KV+overhead = %d", c.Name, got, want)
			}
		}
		help := binaryHelp(t, sub)
		for _, a := range c.Args[1:] {
			name := strings.SplitN(strings.TrimPrefix(a, "--"), "=", 2)[0]
			if !strings.HasPrefix(a, "--") || !regexp.MustCompile(`(?m)^  -`+regexp.QuoteMeta(name)+`( |$)`).MatchString(help) {
				t.Errorf("%s: bulkhead %s has no flag %q (from %q)", c.Name, sub, name, a)
			}
		}
	}
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	helpMu    sync.Mutex
	helps     = map[string]string{}
)

// binaryHelp builds ../cmd/bulkhead once and returns `bulkhead <sub> --help`.
func binaryHelp(t *testing.T, sub string) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bulkhead-deploy-test")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "bulkhead")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/bulkhead")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	helpMu.Lock()
	defer helpMu.Unlock()
	if h, ok := helps[sub]; ok {
		return h
	}
	out, _ := exec.Command(binPath, sub, "--help").CombinedOutput()
	if !strings.Contains(string(out), "-listen") {
		t.Fatalf("bulkhead %s --help: %s", sub, out)
	}
	helps[sub] = string(out)
	return string(out)
}

// checkEPPConfig: the EPP must scrape the metrics port, and every metric it
// is told to read must be one bulkhead exports.
func checkEPPConfig(cfg string) error {
	var c struct {
		APIVersion, Kind string
		Plugins          []struct {
			Type       string         `json:"type"`
			Parameters map[string]any `json:"parameters"`
		} `json:"plugins"`
	}
	if err := yaml.Unmarshal([]byte(cfg), &c); err != nil {
		return err
	}
	var port, specs int
	for _, p := range c.Plugins {
		switch p.Type {
		case "metrics-data-source":
			f, _ := p.Parameters["port"].(float64)
			port = int(f)
		case "core-metrics-extractor":
			for _, e := range p.Parameters["engineConfigs"].([]any) {
				for k, v := range e.(map[string]any) {
					if s, ok := v.(string); ok && strings.HasSuffix(k, "Spec") {
						specs++
						if !strings.HasPrefix(s, "bulkhead:") {
							return fmt.Errorf("%s = %q is not a bulkhead series", k, s)
						}
					}
				}
			}
		}
	}
	if port != 9400 {
		return fmt.Errorf("metrics-data-source port %d, want the metrics listener 9400", port)
	}
	if specs != 4 {
		return fmt.Errorf("%d metric specs, want queue, running, KV usage and cache info", specs)
	}
	return nil
}
