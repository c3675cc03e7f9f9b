/*
Copyright 2026 The memcached-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package controllers_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/mod/modfile"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/example/memcached-operator/controllers"
	"github.com/example/memcached-operator/internal/operand"
	"github.com/example/memcached-operator/internal/rollout"
)

// renderChart renders the memcached chart as the operator would install it, on a Kubernetes 1.35
// cluster that serves the given extra API versions.
func renderChart(t testing.TB, values map[string]any, apiVersions ...string) []*unstructured.Unstructured {
	t.Helper()
	return renderChartOn(t, &chartutil.KubeVersion{Version: "v1.35.4", Major: "1", Minor: "35"}, values, apiVersions...)
}

// renderChartNamed is renderChart of the release name.
func renderChartNamed(t testing.TB, name string, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	return renderRelease(t, name, &chartutil.KubeVersion{Version: "v1.35.4", Major: "1", Minor: "35"}, values)
}

// renderChartOn is renderChart on a cluster of the given Kubernetes version.
func renderChartOn(t testing.TB, kube *chartutil.KubeVersion, values map[string]any, apiVersions ...string) []*unstructured.Unstructured {
	t.Helper()
	return renderRelease(t, "memcached-sample", kube, values, apiVersions...)
}

func renderRelease(t testing.TB, name string, kube *chartutil.KubeVersion, values map[string]any, apiVersions ...string) []*unstructured.Unstructured {
	t.Helper()
	rel := installDryRun(t, name, kube, values, apiVersions...)
	var objs []*unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(rel.Manifest), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}

// installDryRun is the release Helm would install of the chart, rendered without a cluster.
func installDryRun(t testing.TB, name string, kube *chartutil.KubeVersion, values map[string]any, apiVersions ...string) *release.Release {
	t.Helper()
	chrt, err := loader.Load(filepath.Join(repoRoot(), "helm-charts", "memcached"))
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = name, chartNamespace
	install.KubeVersion = kube
	install.APIVersions = append(chartutil.VersionSet{}, apiVersions...)
	rel, err := install.Run(chrt, values)
	if err != nil {
		t.Fatalf("render chart: %v", err)
	}
	return rel
}

const chartNamespace = "default"

// The operator installs releases without Helm's client-side "OpenAPI validation", which on API
// servers with server-side field validation validates nothing (see actionclient.skipOpenAPIValidation).
// What it would have caught, the API server's strict field validation catches here: every object
// the chart renders, with every feature on, has no unknown or duplicate field.
var _ = Describe("The chart's objects", func() {
	It("pass the API server's strict field validation", func(ctx SpecContext) {
		// Rendered for this API server's version, as the operator renders (also the oldest supported).
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		server, err := dc.ServerVersion()
		Expect(err).NotTo(HaveOccurred())
		objs := renderChartOn(GinkgoTB(), &chartutil.KubeVersion{Version: server.GitVersion, Major: server.Major, Minor: server.Minor}, map[string]any{
			"replicaCount": 2,
			"metrics":      map[string]any{"enabled": true},
			"resources":    map[string]any{"limits": map[string]any{"memory": "128Mi"}},
		})
		Expect(objs).NotTo(BeEmpty())
		for _, o := range objs {
			o.SetNamespace(chartNamespace) // Helm sets it when it installs
			// k8sClient sends fieldValidation=Strict, as kubectl does.
			Expect(k8sClient.Create(ctx, o, client.DryRunAll)).To(Succeed(), "%s %s", o.GetKind(), o.GetName())
		}
	})
})

// Every kind the chart renders, with every feature on, is covered by the operator's ClusterRole
// with the verbs Helm needs; and the role has no wildcard.
func TestRoleCoversChart(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := sigsyaml.Unmarshal(raw, role); err != nil {
		t.Fatal(err)
	}
	for _, r := range role.Rules {
		for _, s := range slices.Concat(r.APIGroups, r.Resources, r.Verbs) {
			if s == "*" {
				t.Errorf("role rule %+v uses a wildcard", r)
			}
		}
	}

	objs := renderChart(t, map[string]any{
		"metrics": map[string]any{"enabled": true, "serviceMonitor": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true}},
	}, "monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule")
	kinds := map[string]bool{}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		kinds[gvk.Kind] = true
		resource, _ := meta.UnsafeGuessKindToResource(gvk)
		for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete"} {
			if !allows(role, gvk.Group, resource.Resource, verb) {
				t.Errorf("the chart renders %s but role.yaml does not allow %s on %s.%s", gvk.Kind, verb, resource.Resource, gvk.Group)
			}
		}
	}
	for _, want := range []string{"StatefulSet", "Service", "ConfigMap", "PodDisruptionBudget", "ServiceAccount", "ServiceMonitor", "PrometheusRule"} {
		if !kinds[want] {
			t.Errorf("the chart with every feature on rendered no %s (rendered %v)", want, kinds)
		}
	}
}

func allows(role *rbacv1.ClusterRole, group, resource, verb string) bool {
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

// The chart and the Go controller secure memcached pods the same way, on both platforms.
func TestChartAndGoAgreeOnPodSecurity(t *testing.T) {
	for _, p := range []operand.Platform{{OpenShift: false}, {OpenShift: true}} {
		var extra []string
		if p.OpenShift {
			extra = []string{"security.openshift.io/v1"}
		}
		var servers appsv1.StatefulSet
		for _, o := range renderChart(t, nil, extra...) {
			if o.GetKind() == "StatefulSet" {
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &servers); err != nil {
					t.Fatal(err)
				}
			}
		}
		pod := servers.Spec.Template.Spec
		if !equality.Semantic.DeepEqual(pod.SecurityContext, p.PodSecurityContext()) {
			t.Errorf("OpenShift=%v: chart pod securityContext %+v, Go %+v", p.OpenShift, pod.SecurityContext, p.PodSecurityContext())
		}
		if !equality.Semantic.DeepEqual(pod.Containers[0].SecurityContext, operand.ContainerSecurityContext()) {
			t.Errorf("OpenShift=%v: chart container securityContext %+v, Go %+v", p.OpenShift, pod.Containers[0].SecurityContext, operand.ContainerSecurityContext())
		}
		if p.OpenShift && pod.SecurityContext.RunAsUser != nil {
			t.Error("on OpenShift the restricted SCC assigns the UID; the chart must not fix one")
		}
	}
}

// The manager's RELATED_IMAGE_* variables (what OLM lists in relatedImages) are the chart's images.
func TestManagerRelatedImagesAreChartImages(t *testing.T) {
	chrt, err := loader.Load(filepath.Join(repoRoot(), "helm-charts", "memcached"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]func(map[string]any) (operand.Image, error){
		operand.RelatedImageEnv:         operand.ChartImage,
		operand.ExporterRelatedImageEnv: operand.ChartExporterImage,
	}
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "config", "manager", "manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, doc := range strings.Split(string(raw), "\n---") {
		var deploy appsv1.Deployment
		if err := sigsyaml.Unmarshal([]byte(doc), &deploy); err != nil || deploy.Kind != "Deployment" {
			continue
		}
		for _, e := range deploy.Spec.Template.Spec.Containers[0].Env {
			if !strings.HasPrefix(e.Name, "RELATED_IMAGE_") {
				continue
			}
			fromChart, ok := want[e.Name]
			if !ok {
				t.Errorf("config/manager/manager.yaml sets %s, which the operator does not read", e.Name)
				continue
			}
			found[e.Name] = true
			img, err := fromChart(chrt.Values)
			if err != nil {
				t.Fatal(err)
			}
			if e.Value != img.String() {
				t.Errorf("config/manager/manager.yaml sets %s=%s, the chart pins %s", e.Name, e.Value, img)
			}
		}
	}
	for env := range want {
		if !found[env] {
			t.Errorf("config/manager/manager.yaml does not set %s", env)
		}
	}
}

// The oldest supported Kubernetes is one fact: the CSV's minKubeVersion (which OperatorHub reads,
// and com.redhat.openshift.versions follows), the chart's kubeVersion, and the kube-apiserver that
// make test runs the envtest suites on (hack/kube-floor). Both Kubernetes modules replace every
// staging module by its release of the same version.
func TestKubernetesFloorIsOneFact(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "config", "manifests", "bases", "memcached-operator.clusterserviceversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var csv struct {
		Spec struct {
			MinKubeVersion string `json:"minKubeVersion"`
		} `json:"spec"`
	}
	if err := sigsyaml.Unmarshal(raw, &csv); err != nil {
		t.Fatal(err)
	}
	floor, err := semver.StrictNewVersion(csv.Spec.MinKubeVersion)
	if err != nil {
		t.Fatalf("minKubeVersion %q: %v", csv.Spec.MinKubeVersion, err)
	}

	chrt, err := loader.Load(filepath.Join(repoRoot(), "helm-charts", "memcached"))
	if err != nil {
		t.Fatal(err)
	}
	if want := ">=" + floor.String() + "-0"; chrt.Metadata.KubeVersion != want {
		t.Errorf("Chart.yaml kubeVersion is %q; minKubeVersion %s asks for %q", chrt.Metadata.KubeVersion, floor, want)
	}

	for _, dir := range []string{"kube", "kube-floor"} {
		path := filepath.Join(repoRoot(), "hack", dir, "go.mod")
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		mod, err := modfile.Parse(path, raw, nil)
		if err != nil {
			t.Fatal(err)
		}
		var kube *semver.Version
		for _, r := range mod.Require {
			if r.Mod.Path == "k8s.io/kubernetes" {
				kube = semver.MustParse(r.Mod.Version)
			}
		}
		if kube == nil {
			t.Fatalf("%s does not require k8s.io/kubernetes", path)
		}
		if dir == "kube-floor" && (kube.Major() != floor.Major() || kube.Minor() != floor.Minor()) {
			t.Errorf("%s builds Kubernetes %s; minKubeVersion is %s", path, kube, floor)
		}
		staging := fmt.Sprintf("v0.%d.%d", kube.Minor(), kube.Patch())
		replaced := 0
		for _, r := range mod.Replace {
			if strings.HasPrefix(r.Old.Path, "k8s.io/") {
				replaced++
				if r.New.Path != r.Old.Path || r.New.Version != staging {
					t.Errorf("%s replaces %s by %s %s; Kubernetes %s needs %s %s", path, r.Old.Path, r.New.Path, r.New.Version, kube, r.Old.Path, staging)
				}
			}
		}
		if replaced < 20 {
			t.Errorf("%s replaces %d staging modules; Kubernetes has about 30", path, replaced)
		}
	}
}

// memcached stays up 5 s after SIGTERM (preStop): with the sleep action where the cluster has it
// (1.30+), else with the image's sleep command (1.28, 1.29: OKD 4.15, 4.16); the chart and the
// Go controller alike.
func TestPreStopOnEveryKubernetes(t *testing.T) {
	sleepCommand := corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "5"}}}
	sleepAction := corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}
	for _, tt := range []struct {
		kube     chartutil.KubeVersion
		platform operand.Platform
		want     corev1.LifecycleHandler
	}{
		{chartutil.KubeVersion{Version: "v1.28.15", Major: "1", Minor: "28"}, operand.Platform{SleepAction: false}, sleepCommand},
		{chartutil.KubeVersion{Version: "v1.29.0", Major: "1", Minor: "29"}, operand.Platform{SleepAction: false}, sleepCommand},
		{chartutil.KubeVersion{Version: "v1.30.0", Major: "1", Minor: "30"}, operand.Platform{SleepAction: true}, sleepAction},
		{chartutil.KubeVersion{Version: "v1.35.4", Major: "1", Minor: "35"}, operand.Platform{SleepAction: true}, sleepAction},
	} {
		if got := tt.platform.PreStop(); !equality.Semantic.DeepEqual(*got, tt.want) {
			t.Errorf("Kubernetes %s: the Go controller's preStop %+v, want %+v", tt.kube.Version, *got, tt.want)
		}
		for _, o := range renderChartOn(t, &tt.kube, nil) {
			if o.GetKind() != "StatefulSet" {
				continue
			}
			var servers appsv1.StatefulSet
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &servers); err != nil {
				t.Fatal(err)
			}
			got := servers.Spec.Template.Spec.Containers[0].Lifecycle.PreStop
			if !equality.Semantic.DeepEqual(*got, tt.want) {
				t.Errorf("Kubernetes %s: the chart's preStop %+v, want %+v", tt.kube.Version, *got, tt.want)
			}
		}
	}
}

// The operator makes a cache's TLS Secrets before the chart's pods mount them, under the names the
// chart gives: the same for every release name, long ones cut and hashed included.
func TestTLSSecretNamesAreTheChartsNames(t *testing.T) {
	for _, release := range []string{"tls", "memcached-sample", "my-memcached", strings.Repeat("a", 50), strings.Repeat("b", 53),
		strings.Repeat("memcached", 5) + "x", strings.Repeat("c-", 26) + "d"} {
		servers, headless, serverTLS, clientTLS := controllers.ChartNamesOf(release)
		var volumes []string
		var listed string
		for _, o := range renderChartNamed(t, release, map[string]any{"tls": map[string]any{"enabled": true}, "metrics": map[string]any{"enabled": true}}) {
			switch o.GetKind() {
			case "StatefulSet":
				if o.GetName() != servers {
					t.Errorf("%s: the StatefulSet is %s, the operator says %s", release, o.GetName(), servers)
				}
				if svc, _, _ := unstructured.NestedString(o.Object, "spec", "serviceName"); svc != headless {
					t.Errorf("%s: the headless Service is %s, the operator says %s", release, svc, headless)
				}
				vols, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
				for _, v := range vols {
					if name, ok, _ := unstructured.NestedString(v.(map[string]any), "secret", "secretName"); ok {
						volumes = append(volumes, name)
					}
				}
			case "ConfigMap":
				listed, _, _ = unstructured.NestedString(o.Object, "data", "MEMCACHED_TLS_SECRET")
			}
		}
		if !slices.Equal(volumes, []string{serverTLS}) {
			t.Errorf("%s: the pods mount Secrets %v, the operator makes %s (the exporter reads on the loopback, with no certificate)", release, volumes, serverTLS)
		}
		if listed != clientTLS {
			t.Errorf("%s: the server list names Secret %q, the operator makes %s", release, listed, clientTLS)
		}

		// With a certificate Secret of the user's: its tls.crt and tls.key, and the CA's ca.crt alone.
		var projected []string
		for _, o := range renderChartNamed(t, release, map[string]any{"tls": map[string]any{"enabled": true, "certificateSecret": "their-cert"}}) {
			if o.GetKind() != "StatefulSet" {
				continue
			}
			vols, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
			for _, v := range vols {
				sources, _, _ := unstructured.NestedSlice(v.(map[string]any), "projected", "sources")
				for _, src := range sources {
					name, _, _ := unstructured.NestedString(src.(map[string]any), "secret", "name")
					items, _, _ := unstructured.NestedSlice(src.(map[string]any), "secret", "items")
					var keys []string
					for _, item := range items {
						keys = append(keys, item.(map[string]any)["key"].(string))
					}
					projected = append(projected, name+":"+strings.Join(keys, ","))
				}
			}
		}
		if want := []string{"their-cert:tls.crt,tls.key", controllers.CASecretOf(release) + ":ca.crt"}; !slices.Equal(projected, want) {
			t.Errorf("%s: the servers' projected TLS volume has %v, want %v", release, projected, want)
		}
	}
}

// With TLS and metrics, the exporter reads memcached in plain text on the pod's loopback and holds
// no certificate; the servers serve TLS on every other address.
func TestExporterReadsStatsOnLoopback(t *testing.T) {
	for _, tt := range []struct {
		name     string
		values   map[string]any
		listener []string
		address  string
	}{
		{"TLS with metrics", map[string]any{"tls": map[string]any{"enabled": true}, "metrics": map[string]any{"enabled": true}},
			[]string{"-l", "notls:127.0.0.1:11212,*"}, "--memcached.address=127.0.0.1:11212"},
		{"metrics in plain text", map[string]any{"metrics": map[string]any{"enabled": true}},
			nil, "--memcached.address=localhost:11211"},
		{"TLS without metrics", map[string]any{"tls": map[string]any{"enabled": true}}, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sts := &appsv1.StatefulSet{}
			renderedAs(t, renderChart(t, tt.values), "StatefulSet", "", sts)
			spec := &sts.Spec.Template.Spec
			args := rollout.MemcachedContainer(spec).Args
			var listener []string
			if i := slices.Index(args, "-l"); i >= 0 && i+1 < len(args) {
				listener = args[i : i+2]
			}
			if !slices.Equal(listener, tt.listener) {
				t.Errorf("memcached listens with %v, want %v", listener, tt.listener)
			}
			exporter := rollout.ContainerNamed(spec, "exporter")
			if tt.address == "" {
				if exporter != nil {
					t.Errorf("an exporter without metrics")
				}
				return
			}
			if exporter == nil || !slices.Contains(exporter.Args, tt.address) {
				t.Fatalf("the exporter does not read %s: %v", tt.address, exporter)
			}
			if slices.ContainsFunc(exporter.Args, func(a string) bool { return strings.HasPrefix(a, "--memcached.tls") }) || len(exporter.VolumeMounts) > 0 {
				t.Errorf("the exporter holds a certificate: %v, mounts %v", exporter.Args, exporter.VolumeMounts)
			}
		})
	}
}
