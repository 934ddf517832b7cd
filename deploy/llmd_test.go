package deploy

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// llmdRender renders the llm-d sidecar mode with extra values merged in.
func llmdRender(t *testing.T, extra map[string]any) (map[string]*appsv1.StatefulSet, []object) {
	t.Helper()
	vals := maps.Clone(llmdValues)
	l := maps.Clone(vals["llmd"].(map[string]any))
	maps.Copy(l, extra)
	vals["llmd"] = l
	objs := objects(t, render(t, vals))
	sets := map[string]*appsv1.StatefulSet{}
	for _, o := range objs {
		if o.kind == "StatefulSet" {
			s := new(appsv1.StatefulSet)
			if err := decodeStrict(o.raw, s); err != nil {
				t.Fatal(err)
			}
			sets[s.Spec.Template.Labels["llm-d.ai/role"]] = s
		}
	}
	if sets["prefill"] == nil || sets["decode"] == nil {
		t.Fatalf("no prefill and decode StatefulSets: %v", slices.Collect(maps.Keys(sets)))
	}
	return sets, objs
}

func container(t *testing.T, p corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	for _, c := range p.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %q", name)
	return corev1.Container{}
}

// flag returns the value of --name=value in args ("" if absent).
func flag(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

func port(c corev1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

// mountOf returns the Secret behind the volume mounted at a path's directory.
func mountOf(t *testing.T, p corev1.PodSpec, c corev1.Container, file string) string {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if strings.HasPrefix(file, m.MountPath+"/") {
			for _, v := range p.Volumes {
				if v.Name == m.Name && v.Secret != nil {
					return v.Secret.SecretName
				}
			}
		}
	}
	t.Fatalf("%s: %s is on no Secret volume of the container", c.Name, file)
	return ""
}

// llmd.sidecar renders bulkhead's sidecar in the decode pods on the port
// the InferencePool targets, in front of the decode worker, with the
// router certificate from its own Secret; workers run with --llmd; prefill
// and decode pods are the pool's endpoints with their llm-d roles; no
// bulkhead gateway; the EPP config is the disaggregated mode's.
func TestChartLLMDSidecar(t *testing.T) {
	sets, objs := llmdRender(t, nil)
	pre, dec := sets["prefill"].Spec.Template, sets["decode"].Spec.Template
	side := container(t, dec.Spec, "llmd-sidecar")
	worker := container(t, dec.Spec, "decode")
	prefill := container(t, pre.Spec, "prefill")

	var pool struct {
		Spec struct {
			Selector    struct{ MatchLabels map[string]string }
			TargetPorts []struct{ Number int32 }
		}
	}
	var epp string
	for _, o := range objs {
		switch o.kind {
		case "InferencePool":
			json.Unmarshal(o.raw, &pool)
		case "Deployment":
			t.Errorf("Deployment %s rendered: the EPP, not bulkhead's gateway, routes in this mode", o.name)
		case "ConfigMap":
			epp = string(o.raw)
		}
	}
	if len(pool.Spec.TargetPorts) != 1 {
		t.Fatalf("pool target ports %+v", pool.Spec.TargetPorts)
	}
	target := pool.Spec.TargetPorts[0].Number
	for role, p := range map[string]corev1.PodTemplateSpec{"prefill": pre, "decode": dec} {
		for k, v := range pool.Spec.Selector.MatchLabels {
			if p.Labels[k] != v {
				t.Errorf("%s pods lack the pool label %s=%s: not endpoints", role, k, v)
			}
		}
		if p.Labels["llm-d.ai/role"] != role || p.Labels["llm-d.ai/engine-type"] != "bulkhead" {
			t.Errorf("%s pod labels %v", role, p.Labels)
		}
	}

	// The sidecar: bulkhead's image, its command, the pool port, decode on loopback.
	if side.Image != worker.Image || side.Args[0] != "llmd-sidecar" {
		t.Errorf("sidecar image %s args %v, want %s llmd-sidecar", side.Image, side.Args, worker.Image)
	}
	if flag(side.Args, "listen") != "0.0.0.0:"+itoa(target) || port(side, "http") != target {
		t.Errorf("sidecar listens on %s, port http %d; the pool targets %d", flag(side.Args, "listen"), port(side, "http"), target)
	}
	if flag(side.Args, "decode") != "127.0.0.1:"+itoa(port(worker, "engine")) || flag(worker.Args, "listen") != "0.0.0.0:"+itoa(port(worker, "engine")) {
		t.Errorf("sidecar --decode %s, decode worker --listen %s, engine port %d", flag(side.Args, "decode"), flag(worker.Args, "listen"), port(worker, "engine"))
	}
	if port(worker, "http") != 0 {
		t.Errorf("decode worker also claims the pool port")
	}
	if slices.Contains(side.Args, "--secure-proxy=false") || side.ReadinessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS || side.ReadinessProbe.HTTPGet.Path != "/ready" {
		t.Errorf("sidecar not TLS by default: args %v, readiness %+v", side.Args, side.ReadinessProbe.HTTPGet)
	}
	// Router certificate from the router Secret, in the sidecar only, picked by ordinal.
	for _, f := range []string{"tls-cert", "tls-key", "tls-ca"} {
		path := flag(side.Args, f)
		if s := mountOf(t, dec.Spec, side, path); s != "bh-router-certs" {
			t.Errorf("sidecar --%s=%s is on Secret %s, want the router Secret", f, path, s)
		}
	}
	if !strings.HasSuffix(flag(side.Args, "tls-cert"), "/router-$(POD_INDEX).crt") || !podIndexEnv(side) {
		t.Errorf("sidecar cert %s, env %v: want router-<ordinal> from the pod-index label", flag(side.Args, "tls-cert"), side.Env)
	}
	for _, m := range worker.VolumeMounts {
		if m.Name == "router-certs" {
			t.Errorf("the decode worker mounts the router key")
		}
	}

	// Workers: --llmd, tenants, their own identity Secrets, prefill advertising its pod IP.
	for role, c := range map[string]corev1.Container{"prefill": prefill, "decode": worker} {
		p := map[string]corev1.PodSpec{"prefill": pre.Spec, "decode": dec.Spec}[role]
		if !slices.Contains(c.Args, "--llmd") || flag(c.Args, "tenants") == "" {
			t.Errorf("%s worker args %v lack --llmd / --tenants", role, c.Args)
		}
		if s := mountOf(t, p, c, flag(c.Args, "tls-cert")); s != "bh-"+role+"-certs" || !strings.HasSuffix(flag(c.Args, "tls-cert"), "/"+role+"-$(POD_INDEX).crt") {
			t.Errorf("%s worker cert %s on Secret %s", role, flag(c.Args, "tls-cert"), s)
		}
		if c.ReadinessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS {
			t.Errorf("%s worker probes over %s; it serves TLS", role, c.ReadinessProbe.HTTPGet.Scheme)
		}
	}
	if flag(prefill.Args, "llmd-advertise") != "$(POD_IP):"+itoa(target) || flag(prefill.Args, "listen") != "0.0.0.0:"+itoa(target) {
		t.Errorf("prefill --listen %s --llmd-advertise %s; the EPP names it by pod IP and pool port %d", flag(prefill.Args, "listen"), flag(prefill.Args, "llmd-advertise"), target)
	}

	// EPP config unchanged from bulkhead's disaggregated mode.
	var want string
	for _, o := range objects(t, render(t, modes["disaggregated"])) {
		if o.kind == "ConfigMap" {
			want = string(o.raw)
		}
	}
	if epp == "" || epp != want {
		t.Errorf("EPP ConfigMap differs from disaggregated mode's:\n%s\nwant\n%s", epp, want)
	}
}

func podIndexEnv(c corev1.Container) bool {
	for _, e := range c.Env {
		if e.Name == "POD_INDEX" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
			e.ValueFrom.FieldRef.FieldPath == "metadata.labels['apps.kubernetes.io/pod-index']" {
			return true
		}
	}
	return false
}

func itoa(n int32) string { b, _ := json.Marshal(n); return string(b) }

// secureProxy=false serves the pool port in plain HTTP (probes too); the
// legs stay mutual TLS (the certificate flags remain).
func TestChartLLMDSidecarPlainListener(t *testing.T) {
	sets, _ := llmdRender(t, map[string]any{"secureProxy": false})
	side := container(t, sets["decode"].Spec.Template.Spec, "llmd-sidecar")
	if !slices.Contains(side.Args, "--secure-proxy=false") || side.LivenessProbe.HTTPGet.Scheme != corev1.URISchemeHTTP || flag(side.Args, "tls-cert") == "" {
		t.Errorf("plain listener: args %v, liveness %+v", side.Args, side.LivenessProbe.HTTPGet)
	}
}

// The mode cannot be rendered half-configured: without the certificate
// Secrets the workers would refuse the sidecar, and it needs workers.
func TestChartLLMDSidecarRefusesWhatCannotWork(t *testing.T) {
	ch, err := loader.Load("helm/bulkhead")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		vals map[string]any
		want string
	}{
		{map[string]any{"mode": "disaggregated", "llmd": map[string]any{"sidecar": true}}, "llmd.certs.prefillSecret"},
		{map[string]any{"mode": "disaggregated", "llmd": map[string]any{"sidecar": true, "certs": map[string]any{"prefillSecret": "p", "decodeSecret": "d"}}}, "llmd.certs.routerSecret"},
		{map[string]any{"mode": "aggregated", "llmd": map[string]any{"sidecar": true}}, "mode=disaggregated"},
	} {
		rv, err := chartutil.ToRenderValues(ch, c.vals, chartutil.ReleaseOptions{Name: "rel", Namespace: "inference"}, chartutil.DefaultCapabilities)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := engine.Render(ch, rv); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a refusal naming %s", c.vals, err, c.want)
		}
	}
}
